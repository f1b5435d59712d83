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
  /// Deletions from one side that trickle in below the burst limits are
  /// held too once, within this span of the first, they delete more than
  /// `sharePercent` of a folder that held more than `count` notes then.
  public var day: Duration

  public init(
    count: Int = DeletionLimits.defaultCount, sharePercent: Int = DeletionLimits.defaultShare,
    window: Duration = .seconds(60), day: Duration = .seconds(86_400)
  ) {
    self.count = count
    self.sharePercent = sharePercent
    self.window = window
    self.day = day
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

/// Why deletions are held (`DeletionHold.holds`).
enum DeletionHoldReason: Sendable, Equatable {
  /// Many within a minute of each other.
  case burst
  /// Fewer at a time, but more than the share of the folder within a day.
  case day
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

  /// The deletions of one folder from one side since the first of them
  /// within `limits.day`: a trickle of small bursts adds up here.
  private struct Day {
    var count: Int
    var start: ContinuousClock.Instant
    var notesAtStart: Int
    var holding: Bool
  }

  private var bursts: [String: Burst] = [:]
  private var days: [String: Day] = [:]
  /// By index key.
  private(set) var held: [String: Held] = [:]

  init(limits: DeletionLimits) { self.limits = limits }

  /// Counts `count` new deletions of the folder of `type` from `side`
  /// ("" for here, "peers" for any peer) at `now`, and says why they are
  /// held, or nil when they are not: once a burst is over a limit, it holds
  /// every deletion until it ends (`limits.window` without one); once the
  /// deletions within `limits.day` of the first are over the share, every
  /// one is held until that span ends or a person decides (`decided`).
  /// `notes` (the folder's live notes) is asked only when a burst or a day
  /// begins.
  mutating func holds(
    _ count: Int, type: String, side: String, now: ContinuousClock.Instant, notes: () -> Int
  ) -> DeletionHoldReason? {
    guard limits.count > 0, count > 0 else { return nil }
    let key = side + "\u{0}" + type
    var burst = bursts[key] ?? Burst(count: 0, last: now, notesAtStart: 0, holding: false)
    if burst.count == 0 || now - burst.last > limits.window {
      burst = Burst(count: 0, last: now, notesAtStart: notes(), holding: false)
    }
    burst.count = burst.count.addingReportingOverflow(count).partialValue
    burst.last = now
    if !burst.holding {
      burst.holding = burst.count > limits.count || overShare(burst.count, of: burst.notesAtStart)
    }
    bursts[key] = burst
    var day = days[key] ?? Day(count: 0, start: now, notesAtStart: 0, holding: false)
    if day.count == 0 || now - day.start > limits.day {
      day = Day(count: 0, start: now, notesAtStart: burst.notesAtStart, holding: false)
    }
    day.count = day.count.addingReportingOverflow(count).partialValue
    if !day.holding { day.holding = overShare(day.count, of: day.notesAtStart) }
    days[key] = day
    // Old bursts and days are forgotten (one per folder and side at most anyway).
    if bursts.count > 64 { bursts = bursts.filter { now - $0.value.last <= limits.window } }
    if days.count > 64 { days = days.filter { now - $0.value.start <= limits.day } }
    return burst.holding ? .burst : day.holding ? .day : nil
  }

  /// Whether `deleted` notes are more than the share of a folder that held
  /// `notes`, more than `limits.count` (a small folder never is).
  private func overShare(_ deleted: Int, of notes: Int) -> Bool {
    guard notes > limits.count else { return false }
    let (share, overflow) = deleted.multipliedReportingOverflow(by: 100)
    return overflow || share > limits.sharePercent * notes
  }

  /// A person applied or rejected what was held: the day's count begins
  /// again (the bursts go on, so that the rest of an `rm -r` is held).
  mutating func decided() { days.removeAll() }

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
