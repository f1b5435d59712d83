import FoundationEssentials

/// When deletions are many (PROTOCOL.md section 7.4): the limits of
/// `hold-deletions` and `hold-deletions-share` (baton.conf(5)).
public struct DeletionLimits: Sendable, Equatable {
  /// A burst of more deletions than this is held; 0 holds none.
  public var count: Int
  /// A burst deleting more than this percent of a folder that holds more
  /// than `count` notes is held too (1 to 100; 100 holds by `count` only).
  public var sharePercent: Int
  /// Deletions of one folder from one side (here, or the peers) belong to
  /// one burst while each comes within this of the one before.
  public var window: Duration

  public init(
    count: Int = DeletionLimits.defaultCount, sharePercent: Int = DeletionLimits.defaultShare,
    window: Duration = .seconds(60)
  ) {
    self.count = count
    self.sharePercent = sharePercent
    self.window = window
  }

  public static let defaultCount = 10
  public static let defaultShare = 50
  /// Holds nothing: every deletion travels or is applied at once.
  public static let none = DeletionLimits(count: 0)
}

/// A deletion held for a person (`baton deletions`).
public struct HeldDeletion: Sendable, Equatable {
  public var activityType: String
  public var path: String
  /// The peer whose tombstone it is; nil for a note deleted here.
  public var peer: String?
  /// When it was first held.
  public var since: Date

  public init(activityType: String, path: String, peer: String?, since: Date) {
    self.activityType = activityType
    self.path = path
    self.peer = peer
    self.since = since
  }
}

/// The bursts of deletions and the deletions held, a synchronous state the
/// engine keeps (HandoffEngine+Holds.swift applies what it decides). Not
/// persisted: a held local deletion is a live entry whose file is missing,
/// found again at the next start; a held tombstone is offered again by the
/// peer that holds it.
struct DeletionHold {
  let limits: DeletionLimits

  struct Held {
    var deletion: HeldDeletion
    /// The peer's tombstone; nil for a note deleted here.
    var tombstone: HandoffIndexEntry?
  }

  private struct Burst {
    var count: Int
    var last: ContinuousClock.Instant
    /// The folder's live notes when the burst began.
    var notesAtStart: Int
    var holding: Bool
  }

  private var bursts: [String: Burst] = [:]
  /// By index key.
  private(set) var held: [String: Held] = [:]

  init(limits: DeletionLimits) { self.limits = limits }

  /// Counts `count` new deletions of the folder of `type` from `side`
  /// ("" for here, "peers" for any peer) at `now`, and says whether they
  /// are held: once a burst is over a limit, it holds every deletion until
  /// it ends (`limits.window` without one). `notes` (the folder's live
  /// notes) is asked only when a burst begins.
  mutating func holds(
    _ count: Int, type: String, side: String, now: ContinuousClock.Instant, notes: () -> Int
  ) -> Bool {
    guard limits.count > 0, count > 0 else { return false }
    let key = side + "\u{0}" + type
    var burst = bursts[key] ?? Burst(count: 0, last: now, notesAtStart: 0, holding: false)
    if burst.count == 0 || now - burst.last > limits.window {
      burst = Burst(count: 0, last: now, notesAtStart: notes(), holding: false)
    }
    burst.count = burst.count.addingReportingOverflow(count).partialValue
    burst.last = now
    if !burst.holding {
      let (share, overflow) = burst.count.multipliedReportingOverflow(by: 100)
      burst.holding =
        burst.count > limits.count
        || (burst.notesAtStart > limits.count
          && (overflow || share > limits.sharePercent * burst.notesAtStart))
    }
    bursts[key] = burst
    // Old bursts are forgotten (one per folder and side at most anyway).
    if bursts.count > 64 { bursts = bursts.filter { now - $0.value.last <= limits.window } }
    return burst.holding
  }

  func isHeld(_ key: String) -> Bool { held[key] != nil }

  mutating func hold(_ key: String, _ entry: Held) {
    if var old = held[key] {
      // A tombstone offered again (or a newer one): the newest, held since first.
      old.tombstone = entry.tombstone ?? old.tombstone
      old.deletion.peer = entry.deletion.peer ?? old.deletion.peer
      held[key] = old
    } else {
      held[key] = entry
    }
  }

  @discardableResult
  mutating func release(_ key: String) -> Held? { held.removeValue(forKey: key) }

  /// Every held deletion, by folder and path.
  var list: [HeldDeletion] {
    held.values.map(\.deletion).sorted { ($0.activityType, $0.path) < ($1.activityType, $1.path) }
  }
}
