import BatonNotes

/// A notes folder the engine serves, with the activity type it declares.
public struct HandoffFolder: Sendable {
  /// Reverse-DNS activity type, e.g. `org.example.baton.notes`.
  public let activityType: String
  public let folder: any NoteFolderAccess
  /// Asked before each incoming note is written, told after (nil: every
  /// note is taken as it comes).
  public let gate: (any IncomingGate)?

  public init(activityType: String, folder: any NoteFolderAccess, gate: (any IncomingGate)? = nil) {
    self.activityType = activityType
    self.folder = folder
    self.gate = gate
  }
}

/// What the engine accepts and how patient it is.
public struct HandoffPolicy: Sendable {
  /// Peer names allowed to exchange notes with us; nil accepts any keyed peer.
  public var allowedPeers: Set<String>?
  /// Notes larger than this are neither sent nor accepted (default 1 MiB).
  public var maxNoteSize: Int
  /// How long a session waits for the peer's next message.
  public var receiveTimeout: Duration
  /// How many recent failures `status()` keeps.
  public var failureHistory: Int
  /// After a failed connection for some beacon content, how long before trying again
  /// once the first retries (`firstRetryDelays`) are spent; the longest wait.
  public var retryInterval: Duration
  /// The waits before the first retries after a failed connection or session
  /// for the same beacon content (a fault that broke a session usually is
  /// gone at once); then `retryInterval`.
  public var firstRetryDelays: [Duration] = [.seconds(2), .seconds(5), .seconds(10)]
  /// Quiet time on a link after which it sends PING (PROTOCOL.md 6.2, rule
  /// 7). Long, because the radio watches a link already: a peer that goes
  /// out of range or whose agent exits is noticed by the controller's
  /// supervision timeout or the channel's end; the PING is for a peer that
  /// hangs, or died with its controller still holding the connection. Each
  /// PING and its PONG wake both hosts' threads about 30 times.
  public var keepAlive: Duration = .seconds(120)
  /// The keep-alive while a send is under way and the peer says nothing: a
  /// peer that died in the middle of a transfer (its controller holding
  /// the connection, our sends stuck in its flow control) is noticed after
  /// this and the silence limit, not after `keepAlive`.
  public var busyKeepAlive: Duration = .seconds(3)
  /// How long after its PING a link with nothing received is closed.
  public var silenceLimit: Duration = .seconds(6)
  /// When deletions are many enough to be held for a person (PROTOCOL.md
  /// section 7.4; `hold-deletions`, `hold-deletions-share`).
  public var deletionLimits = DeletionLimits()

  /// How long to wait before retrying after `failures` failed attempts in a
  /// row. The first retries get up to half as long again at random: two
  /// peers whose session failed together would otherwise both retry at the
  /// same moment, and connect to each other crosswise.
  public func retryDelay(after failures: Int) -> Duration {
    guard failures < firstRetryDelays.count else { return retryInterval }
    let base = min(firstRetryDelays[max(0, failures)], retryInterval)
    return base + base * Double.random(in: 0..<0.5)
  }

  public init(
    allowedPeers: Set<String>? = nil, maxNoteSize: Int = 1 << 20,
    receiveTimeout: Duration = .seconds(20), failureHistory: Int = 20,
    retryInterval: Duration = .seconds(30)
  ) {
    self.allowedPeers = allowedPeers
    self.maxNoteSize = maxNoteSize
    self.receiveTimeout = receiveTimeout
    self.failureHistory = failureHistory
    self.retryInterval = retryInterval
  }
}

/// The counters `baton status` shows (persisted in the store).
public enum HandoffCounter {
  /// Notes sent to peers.
  public static let sent = "sent"
  /// Incoming notes applied (written, or already identical).
  public static let received = "received"
  /// Incoming activities declined by policy (undeclared type, too large).
  public static let declined = "declined"
  /// Failures to continue (authentication, bad payload, conflict, timeout, disk).
  public static let failed = "failed"
  /// Concurrent edits resolved as conflict copies (also counted in failed).
  public static let conflicts = "conflicts"
  /// Notes deleted on a peer and moved to the trash here.
  public static let trashed = "trashed"
  /// Notes renamed on a peer and renamed here (no bytes crossed).
  public static let renamed = "renamed"
  /// Sessions completed.
  public static let sessions = "sessions"
  /// Peers refused for not being members of the group (PROTOCOL.md 6.3).
  public static let refusedDevices = "refused-devices"
}

/// A snapshot for `baton status`.
public struct HandoffStatus: Sendable {
  public var deviceID: DeviceID
  public var deviceName: String
  public var counters: [String: Int]
  /// Newest first.
  public var failures: [FailureRecord]
  public var currentActivity: HandoffIndexEntry?
  public var peers: [PeerRecord]
  public var noteCount: Int
  /// Set when the state database was found damaged at start and rebuilt.
  public var storeRecovery: String?
  /// Deletions held for a person (`baton deletions`).
  public var heldDeletions: [HeldDeletion] = []
  /// Each peer's current activity as it last arrived here, newest first.
  public var handedOver: [HandedOverActivity] = []
  /// The peers' transfers to this agent that are running, by peer name.
  public var transfers: [TransferProgress.Snapshot] = []
}

/// What one session did.
public struct SessionSummary: Sendable, Equatable {
  public var peerName: String
  public var peerDevice: DeviceID
  /// `type:path` of each note applied from the peer.
  public var received: [String] = []
  /// `type:path` of each note sent to the peer.
  public var sent: [String] = []
  /// Conflict copies written.
  public var conflictCopies: [String] = []
  public var declined = 0
  public var failed = 0
  /// Notes that could not be written here (a full disk, a read-only folder):
  /// the session then settles nothing, so a later session fetches them again.
  public var unwritten = 0
  /// The (peer digest, own digest) pair after which the session left
  /// nothing to do, if it did: the same beacon again while this agent's
  /// index is unchanged needs no connection (`ConnectionMemory.settle`).
  package var settled: ConnectionMemory.DigestPair?
}
