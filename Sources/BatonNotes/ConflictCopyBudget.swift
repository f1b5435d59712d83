import Synchronization

/// How many conflict copies one note may get in an hour. A peer (or a pair
/// of machines that keep editing the same note) could otherwise make a new
/// copy per incoming version, up to 100 a second per name, each replicated
/// to every peer. Past `limit` copies of a note within `period` seconds,
/// the next incoming version replaces the most recent copy instead of
/// adding one: the local note is never touched, the newest incoming bytes
/// are kept, and the folder grows by at most `limit` copies per note per
/// hour. In memory only: a restart starts a fresh hour.
final class ConflictCopyBudget: Sendable {
  /// Copies of one note per `period`.
  static let defaultLimit = 10
  /// Seconds.
  static let defaultPeriod: Int64 = 3600

  let limit: Int
  let period: Int64
  /// Notes with more tracked than this are forgotten oldest first.
  private let trackedNotes = 4096

  private struct Copies {
    var times: [Int64] = []
    var latest: String = ""
    var warned = false
  }

  private let state = Mutex<[String: Copies]>([:])

  init(limit: Int = ConflictCopyBudget.defaultLimit, period: Int64 = ConflictCopyBudget.defaultPeriod) {
    self.limit = max(1, limit)
    self.period = max(1, period)
  }

  enum Decision: Equatable {
    /// Write a new copy.
    case newCopy
    /// Over the bound: replace this copy (relative path); `firstTime` says
    /// whether this hour's log line is still to be written.
    case replace(String, firstTime: Bool)
  }

  /// What to do with one more conflict copy of `relativePath` at `now`.
  func decide(_ relativePath: String, now: Int64) -> Decision {
    state.withLock { notes in
      var copies = notes[relativePath] ?? Copies()
      let since = now &- period
      copies.times.removeAll { $0 <= since || $0 > now &+ period }
      if copies.times.isEmpty { copies.warned = false }
      defer { notes[relativePath] = copies }
      if copies.times.count < limit || copies.latest.isEmpty { return .newCopy }
      let first = !copies.warned
      copies.warned = true
      return .replace(copies.latest, firstTime: first)
    }
  }

  /// A new copy of `relativePath` was written at `copyPath`.
  func recordCopy(_ relativePath: String, copyPath: String, now: Int64) {
    state.withLock { notes in
      if notes[relativePath] == nil && notes.count >= trackedNotes {
        // Forget the notes whose last copy is oldest.
        let oldest = notes.min { ($0.value.times.last ?? 0) < ($1.value.times.last ?? 0) }
        if let oldest { notes[oldest.key] = nil }
      }
      var copies = notes[relativePath] ?? Copies()
      copies.times.append(now)
      copies.latest = copyPath
      notes[relativePath] = copies
    }
  }
}
