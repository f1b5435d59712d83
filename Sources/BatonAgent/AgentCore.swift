import BatonHandoff
import FoundationEssentials

/// The seam between the daemon shell (`AgentDaemon`: signals, control
/// socket, sd_notify, reload) and the handoff agent that does the work.
/// `makeAgentCore` builds the real one; tests use fakes.
public protocol AgentCore: Sendable {
  /// Runs until the task is cancelled, then stops gracefully (finishes a
  /// write-back in progress, stops advertising, releases the controller)
  /// and returns. Throws if the agent cannot go on; the daemon then exits 1.
  func run() async throws
  /// Applies a new, already validated configuration (folders added or
  /// removed, settings changed) and the group key read from its key file
  /// (possibly a new one; the file is read once per reload; nil when there
  /// is none: a device that joins, or joined, by pairing). Throwing
  /// keeps the old configuration running. Return promptly: the daemon
  /// handles SIGTERM only after the reload returns.
  func reload(_ configuration: AgentConfiguration, key: GroupKey?) async throws
  /// A snapshot for `baton status`.
  func status() async -> AgentStatus
  /// Makes the note at `notePath` (absolute) the current activity now;
  /// returns a message for the user. Throws an error whose description is
  /// shown to the user.
  func send(notePath: String) async throws -> String
  /// `baton deletions`: does `action` with the deletions held for a person,
  /// then returns a message (nil for `list`) and the deletions still held.
  func deletions(_ action: DeletionAction) async throws -> (
    message: String?, held: [HeldDeletionRecord]
  )
  /// `baton trash`: the versions in every folder's trash.
  func trash() async throws -> [TrashedVersionRecord]
  /// `baton restore`: puts the newest version of the note at `notePath`
  /// (absolute) in its folder's trash (of `day`, `yyyy-mm-dd`, when given)
  /// back, as a local save; returns a message for the user.
  func restore(notePath: String, day: String?) async throws -> String
  /// `baton devices`: removes the member `remove` names (name, device id or
  /// fingerprint) when given, then returns a message (nil when nothing was
  /// removed) and the group's devices.
  func devices(remove: String?) async throws -> (message: String?, devices: [DeviceEntry])
  /// `baton pair`: on a member (`code` nil), shows a new code and returns
  /// it with a message; on a device not in a group yet, pairs with the
  /// member showing `code` and returns what happened. Throws an error
  /// whose description is shown to the user.
  func pair(code: String?) async throws -> (code: String?, message: String)
  /// `baton pair` on a member, after `pair(code: nil)`: waits for that
  /// code's pairing to end (or the code to expire) and says how it ended.
  func pairingResult() async throws -> String
}

extension AgentCore {
  /// A core that holds no deletions.
  public func deletions(_ action: DeletionAction) async throws -> (
    message: String?, held: [HeldDeletionRecord]
  ) { (nil, []) }
  /// A core with no trash.
  public func trash() async throws -> [TrashedVersionRecord] { [] }
  public func restore(notePath: String, day: String?) async throws -> String {
    throw ControlFailure("no version of \(notePath) in the trash")
  }
  /// A core that cannot pair.
  public func pair(code: String?) async throws -> (code: String?, message: String) {
    throw ControlFailure("this agent cannot pair")
  }
  public func pairingResult() async throws -> String {
    throw ControlFailure("this agent cannot pair")
  }
  /// A core with no group.
  public func devices(remove: String?) async throws -> (message: String?, devices: [DeviceEntry])
  {
    throw ControlFailure("this agent keeps no list of devices")
  }
}

/// An error shown to the user as it is.
public struct ControlFailure: Error, Sendable, CustomStringConvertible {
  public var description: String
  public init(_ description: String) { self.description = description }
}

/// What `baton status` shows; also the JSON of `baton status --json`
/// (dates in ISO 8601).
public struct AgentStatus: Codable, Sendable, Equatable {
  /// A watched folder.
  public struct Folder: Codable, Sendable, Equatable {
    public var name: String
    public var path: String
    public var activityType: String
    public init(name: String, path: String, activityType: String) {
      self.name = name
      self.path = path
      self.activityType = activityType
    }
  }

  /// A peer in range.
  public struct Peer: Codable, Sendable, Equatable {
    public var name: String
    public var address: String
    public var lastSeen: Date
    /// dBm; nil when unknown.
    public var rssi: Int?
    /// The link with the peer (PROTOCOL.md 6.2): "up", "connecting", or nil
    /// (none: changes reach it by per-change sessions).
    public var link: String?
    public init(name: String, address: String, lastSeen: Date, rssi: Int?, link: String? = nil) {
      self.name = name
      self.address = address
      self.lastSeen = lastSeen
      self.rssi = rssi
      self.link = link
    }
  }

  /// The activity being advertised.
  public struct Activity: Codable, Sendable, Equatable {
    public var type: String
    public var title: String
    public var path: String
    /// A short description of the note's version (e.g. a hash prefix).
    public var version: String
    public init(type: String, title: String, path: String, version: String) {
      self.type = type
      self.title = title
      self.path = path
      self.version = version
    }
  }

  /// A peer's current activity as it last arrived here (what `baton
  /// continue` opens).
  public struct HandedOver: Codable, Sendable, Equatable {
    /// The peer's name.
    public var peer: String
    /// The peer's device id, 16 hex digits.
    public var device: String
    public var type: String
    public var title: String
    /// The note's path in its folder.
    public var path: String
    /// The note's absolute path here; nil when no folder of this agent has
    /// its activity type any more.
    public var file: String?
    public var time: Date
    public init(
      peer: String, device: String, type: String, title: String, path: String, file: String?,
      time: Date
    ) {
      self.peer = peer
      self.device = device
      self.type = type
      self.title = title
      self.path = path
      self.file = file
      self.time = time
    }
  }

  /// A peer's transfer to this agent, while it runs: what `baton status`
  /// shows under the peer and `baton status --watch` redraws.
  public struct Transfer: Codable, Sendable, Equatable {
    /// The peer's name.
    public var peer: String
    public var notesDone: Int
    public var notesTotal: Int
    public var bytesDone: Int
    /// The sizes the peer's index gives for the notes wanted (the length of
    /// those arrived).
    public var bytesTotal: Int
    /// False while the index walk still finds notes to fetch (the totals may grow).
    public var totalsFinal: Bool
    /// Over the last 5 s; nil before a rate is known.
    public var bytesPerSecond: Int?
    /// nil while nothing moves.
    public var secondsLeft: Int?

    public init(_ s: TransferProgress.Snapshot) {
      peer = s.peerName
      notesDone = s.notesDone
      notesTotal = s.notesTotal
      bytesDone = s.bytesDone
      bytesTotal = s.bytesTotal
      totalsFinal = s.totalsFinal
      bytesPerSecond = s.bytesPerSecond
      secondsLeft = s.secondsLeft
    }

    /// The engine's snapshot again, for its wording.
    public var snapshot: TransferProgress.Snapshot {
      TransferProgress.Snapshot(
        peerName: peer, notesDone: notesDone, notesTotal: notesTotal, bytesDone: bytesDone,
        bytesTotal: bytesTotal, totalsFinal: totalsFinal, bytesPerSecond: bytesPerSecond,
        secondsLeft: secondsLeft)
    }
  }

  /// Counts since the agent started.
  public struct Counters: Codable, Sendable, Equatable {
    public var sent: Int
    public var received: Int
    public var declined: Int
    public var failed: Int
    /// Concurrent edits resolved as conflict copies (also counted in `failed`).
    public var conflicts: Int
    /// Sessions completed.
    public var sessions: Int
    /// Notes deleted on a peer and moved to the trash here.
    public var trashed: Int
    /// Notes renamed on a peer and renamed here.
    public var renamed: Int
    public init(
      sent: Int = 0, received: Int = 0, declined: Int = 0, failed: Int = 0, conflicts: Int = 0,
      sessions: Int = 0, trashed: Int = 0, renamed: Int = 0
    ) {
      self.sent = sent
      self.received = received
      self.declined = declined
      self.failed = failed
      self.conflicts = conflicts
      self.sessions = sessions
      self.trashed = trashed
      self.renamed = renamed
    }

    private enum CodingKeys: String, CodingKey {
      case sent, received, declined, failed, conflicts, sessions, trashed, renamed
    }

    /// Missing counters (an agent from before they were reported) read as 0.
    public init(from decoder: any Decoder) throws {
      let c = try decoder.container(keyedBy: CodingKeys.self)
      func value(_ key: CodingKeys) throws -> Int {
        try c.decodeIfPresent(Int.self, forKey: key) ?? 0
      }
      self.init(
        sent: try value(.sent), received: try value(.received), declined: try value(.declined),
        failed: try value(.failed), conflicts: try value(.conflicts),
        sessions: try value(.sessions), trashed: try value(.trashed),
        renamed: try value(.renamed))
    }
  }

  /// A recent failure.
  public struct Failure: Codable, Sendable, Equatable {
    public var time: Date
    public var activityType: String
    public var peer: String
    public var reason: String
    public init(time: Date, activityType: String, peer: String, reason: String) {
      self.time = time
      self.activityType = activityType
      self.peer = peer
      self.reason = reason
    }
  }

  public var name: String
  /// The controller's current (random) address; nil before it is known.
  public var address: String?
  /// What the scan schedule does (baton(1), Scanning): "windows: off",
  /// "windows: burst", "continuous", ...; nil while no controller is open.
  public var scanning: String?
  public var folders: [Folder]
  public var peers: [Peer]
  public var currentActivity: Activity?
  /// Each peer's current activity as it last arrived here, newest first;
  /// nil for none (or an agent from before it was reported).
  public var handedOver: [HandedOver]?
  /// The peers' transfers to this agent that are running (a catch-up, a
  /// session's pulls), by peer name; nil for none.
  public var transfers: [Transfer]?
  public var counters: Counters
  /// Most recent last; a handful at most.
  public var lastFailures: [Failure]
  /// How many deletions are held for a person (`baton deletions`); nil
  /// for none.
  public var heldDeletions: Int?

  public init(
    name: String, address: String? = nil, folders: [Folder] = [], peers: [Peer] = [],
    currentActivity: Activity? = nil, counters: Counters = Counters(),
    lastFailures: [Failure] = []
  ) {
    self.name = name
    self.address = address
    self.folders = folders
    self.peers = peers
    self.currentActivity = currentActivity
    self.counters = counters
    self.lastFailures = lastFailures
  }

  /// Name and folders from a configuration, nothing else yet.
  public init(configuration: AgentConfiguration) {
    self.init(
      name: configuration.name,
      folders: configuration.folders.map {
        Folder(name: $0.name, path: $0.path, activityType: $0.activityType)
      })
  }
}
