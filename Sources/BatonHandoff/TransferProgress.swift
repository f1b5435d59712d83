/// How far one peer's transfer to this agent has come (a session's pulls, a
/// link's catch-up): the notes and bytes wanted from it, those arrived, the
/// rate over the last few seconds and the time left. What `baton status`
/// shows under the peer and what the engine logs every `logInterval`.
///
/// A synchronous value with no clock of its own: each event comes with its
/// instant. The totals may grow while the index walk still finds notes
/// (`allKnown` says when they no longer do). Everything it is told comes
/// from the peer (entry sizes, note lengths), so its arithmetic saturates
/// and clamps rather than trap.
public struct TransferProgress: Sendable {
  /// What `baton status` shows of a transfer at one instant.
  public struct Snapshot: Sendable, Equatable {
    public var peerName: String
    public var notesDone: Int
    public var notesTotal: Int
    public var bytesDone: Int
    /// The sizes the peer's index gives for the notes wanted, corrected to
    /// the length of each one that arrived.
    public var bytesTotal: Int
    /// Whether the totals are final (the index walk is over); until then they
    /// are what the walk found so far.
    public var totalsFinal: Bool
    /// Over the last `window`; nil before a rate can be told.
    public var bytesPerSecond: Int?
    /// Whole seconds; nil while nothing moves (or before a rate is known).
    public var secondsLeft: Int?

    public init(
      peerName: String, notesDone: Int, notesTotal: Int, bytesDone: Int, bytesTotal: Int,
      totalsFinal: Bool, bytesPerSecond: Int?, secondsLeft: Int?
    ) {
      self.peerName = peerName
      self.notesDone = notesDone
      self.notesTotal = notesTotal
      self.bytesDone = bytesDone
      self.bytesTotal = bytesTotal
      self.totalsFinal = totalsFinal
      self.bytesPerSecond = bytesPerSecond
      self.secondsLeft = secondsLeft
    }

    /// `1200 of 10000 notes, 1.2 of 9.8 MB, 85 kB/s, 1m40s left`; a `+`
    /// after totals still growing, `at least` before their time left.
    public var summary: String {
      let more = totalsFinal ? "" : "+"
      var text =
        "\(notesDone) of \(notesTotal)\(more) notes, "
        + "\(Self.scaled(bytesDone, unitOf: bytesTotal).number) of \(Self.size(bytesTotal))"
        + more
      if bytesPerSecond == 0 {
        text += notesDone == 0 ? ", waiting" : ", stalled"
      } else if let rate = bytesPerSecond {
        text += ", \(Self.size(rate, unitOf: rate))/s"
      }
      if let left = secondsLeft {
        text += ", \(totalsFinal ? "" : "at least ")\(Self.duration(left)) left"
      }
      return text
    }

    /// Bytes in the unit that suits `reference` (B, kB, MB, GB; powers of
    /// 1000): `512 B`, `85 kB`, `1.2 MB`.
    static func size(_ bytes: Int, unitOf reference: Int? = nil) -> String {
      let (number, unit) = scaled(bytes, unitOf: reference ?? bytes)
      return "\(number) \(unit)"
    }

    /// The number and the unit of `size`, apart (`1.2 of 9.8 MB`).
    static func scaled(_ bytes: Int, unitOf reference: Int) -> (number: String, unit: String) {
      let scale = max(reference, 0)
      let value = Double(max(bytes, 0))
      if scale < 1000 { return ("\(max(bytes, 0))", "B") }
      if scale < 1_000_000 { return ("\(TransferProgress.clamped(value / 1000))", "kB") }
      if scale < 1_000_000_000 { return (tenths(value / 1_000_000), "MB") }
      return (tenths(value / 1_000_000_000), "GB")
    }

    private static func tenths(_ value: Double) -> String {
      let t = TransferProgress.clamped(value * 10)
      return "\(t / 10).\(t % 10)"
    }

    /// `45s`, `1m40s`, `2h05m`.
    static func duration(_ seconds: Int) -> String {
      let s = max(seconds, 0)
      if s < 60 { return "\(s)s" }
      if s < 3600 { return "\(s / 60)m\(pad(s % 60))s" }
      return "\(s / 3600)h\(pad(s / 60 % 60))m"
    }

    private static func pad(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
  }

  /// The span the rate is measured over.
  public static let window = Duration.seconds(5)
  /// At most one log line per peer this often.
  public static let logInterval = Duration.seconds(5)
  /// Samples for the rate are kept at most this often.
  static let sampleSpacing = Duration.milliseconds(250)

  public let peerName: String
  /// The notes still expected, by index key, with the size the peer gave.
  private var expected: [String: Int] = [:]
  public private(set) var notesDone = 0
  public private(set) var notesTotal = 0
  public private(set) var bytesDone = 0
  public private(set) var bytesTotal = 0
  /// Bytes of the note on its way (its message not whole yet, `receiving`):
  /// shown as done, so that one large note moves too.
  public private(set) var inFlight = 0
  /// A note on its way that nobody announced (a link's push of a save):
  /// counted as one note of unknown size until it arrives.
  public private(set) var unannounced = false
  /// The index walk is over: nothing more will be wanted.
  public private(set) var totalsFinal = false
  /// When something last happened (wanted or arrived).
  public private(set) var lastEvent: ContinuousClock.Instant
  private var lastLog: ContinuousClock.Instant
  /// Whether a progress line was logged (then its end is logged too).
  public private(set) var logged = false
  /// (instant, bytes done, notes done), oldest first; the first is the
  /// newest one at least `window` old, or the start.
  private var samples: [(time: ContinuousClock.Instant, bytes: Int, notes: Int)]

  public init(peerName: String, start: ContinuousClock.Instant) {
    self.peerName = peerName
    lastEvent = start
    lastLog = start
    samples = [(start, 0, 0)]
  }

  /// Whether every note wanted has arrived (or was dropped) and the walk is over.
  public var isFinished: Bool { totalsFinal && expected.isEmpty && !unannounced }
  public var notesLeft: Int { max(0, notesTotal - notesDone) }
  public var bytesLeft: Int { max(0, bytesTotal - bytesDone) }
  /// What is shown as done: the notes' bytes and the one on its way.
  var bytesShown: Int { min(Self.sum(bytesDone, inFlight), max(bytesTotal, bytesDone)) }

  /// Adds a note to what is wanted, `bytes` as the peer's index gives its
  /// size. A note already wanted is not counted twice.
  public mutating func want(_ key: String, bytes: Int, at now: ContinuousClock.Instant) {
    guard expected[key] == nil else { return }
    let size = max(bytes, 0)
    expected[key] = size
    notesTotal = Self.sum(notesTotal, 1)
    bytesTotal = Self.sum(bytesTotal, size)
    lastEvent = now
  }

  /// A note wanted that arrived before it was wanted (found held when the
  /// walk came to it): counted as wanted and done.
  public mutating func alreadyArrived(bytes: Int, at now: ContinuousClock.Instant) {
    let size = max(bytes, 0)
    notesTotal = Self.sum(notesTotal, 1)
    notesDone = Self.sum(notesDone, 1)
    bytesTotal = Self.sum(bytesTotal, size)
    bytesDone = Self.sum(bytesDone, size)
    sample(now)
  }

  /// A note arrived with `bytes` of content. Returns false (and counts
  /// nothing) for a note not wanted (a save pushed meanwhile, one sent twice).
  @discardableResult
  public mutating func arrived(_ key: String, bytes: Int, at now: ContinuousClock.Instant) -> Bool {
    guard let claimed = expected.removeValue(forKey: key) else { return false }
    let size = max(bytes, 0)
    inFlight = 0
    notesDone = Self.sum(notesDone, 1)
    bytesDone = Self.sum(bytesDone, size)
    // The total now counts the bytes that came, not the size the index claimed.
    bytesTotal = max(Self.sum(max(bytesTotal - claimed, 0), size), bytesDone)
    sample(now)
    return true
  }

  /// `bytes` of the next note have come so far (a large note's message
  /// arrives in many frames); at most what is left.
  public mutating func receiving(bytes: Int, at now: ContinuousClock.Instant) {
    let coming = expected.isEmpty ? 0 : min(max(bytes, 0), bytesLeft)
    guard coming != inFlight else { return }
    inFlight = coming
    sample(now)
  }

  /// A note is on its way that no walk or pull announced (a peer's save,
  /// pushed on a link): `bytes` of it so far, its size unknown (the
  /// totals end in `+`) until it arrives (`arrivedUnannounced`).
  public mutating func receivingUnannounced(bytes: Int, at now: ContinuousClock.Instant) {
    let coming = max(bytes, 0)
    if !unannounced {
      guard coming > 0, expected.isEmpty else { return }
      unannounced = true
      notesTotal = Self.sum(notesTotal, 1)
    }
    guard coming != inFlight else { return }
    inFlight = coming
    bytesTotal = max(bytesTotal, Self.sum(bytesDone, coming))
    sample(now)
  }

  /// The unannounced note arrived, `bytes` of content: it is done, and so
  /// is the transfer, unless a walk wants more.
  public mutating func arrivedUnannounced(bytes: Int, at now: ContinuousClock.Instant) -> Bool {
    guard unannounced else { return false }
    unannounced = false
    inFlight = 0
    let size = max(bytes, 0)
    notesDone = Self.sum(notesDone, 1)
    bytesDone = Self.sum(bytesDone, size)
    bytesTotal = max(bytesTotal, bytesDone)
    if expected.isEmpty { bytesTotal = bytesDone }
    totalsFinal = expected.isEmpty ? true : totalsFinal
    sample(now)
    return true
  }

  /// A note wanted that will not come (the peer has it no more): it leaves the totals.
  public mutating func drop(_ key: String, at now: ContinuousClock.Instant) {
    guard let claimed = expected.removeValue(forKey: key) else { return }
    inFlight = 0
    notesTotal = max(notesTotal - 1, notesDone)
    bytesTotal = max(bytesTotal - claimed, bytesDone)
    lastEvent = now
  }

  /// The index walk is over: the totals are final.
  public mutating func allKnown(at now: ContinuousClock.Instant) {
    totalsFinal = true
    lastEvent = now
  }

  /// Whether a progress line is due (at most every `logInterval`, the first
  /// one `logInterval` after the start: a short transfer logs none); when it
  /// is, the next is due `logInterval` from now.
  public mutating func logDue(at now: ContinuousClock.Instant) -> Bool {
    guard now - lastLog >= Self.logInterval else { return false }
    lastLog = now
    logged = true
    return true
  }

  /// Whether nothing happened for `idle`: a note wanted that never comes
  /// (the peer decided otherwise) must not keep a transfer shown for ever.
  public func isStale(at now: ContinuousClock.Instant, idle: Duration) -> Bool {
    now - lastEvent >= idle
  }

  public func snapshot(at now: ContinuousClock.Instant) -> Snapshot {
    var rate: Int?
    var left: Int?
    // The newest sample at least `window` old (arrivals prune the older ones).
    let base = samples.last { now - $0.time >= Self.window } ?? samples[0]
    let span = Self.seconds(now - base.time)
    if span >= 0.5 {
      let bytesRate = Double(max(bytesShown - base.bytes, 0)) / span
      let notesRate = Double(max(notesDone - base.notes, 0)) / span
      rate = Self.clamped(bytesRate)
      let bytesToGo = max(0, bytesTotal - bytesShown)
      if bytesRate > 0, bytesToGo > 0 || notesLeft == 0 {
        left = Self.clamped((Double(bytesToGo) / bytesRate).rounded(.up))
      } else if notesRate > 0 {
        // Empty notes (or sizes that were lies): time by notes.
        left = Self.clamped((Double(notesLeft) / notesRate).rounded(.up))
      }
    }
    return Snapshot(
      peerName: peerName, notesDone: notesDone, notesTotal: notesTotal, bytesDone: bytesShown,
      bytesTotal: bytesTotal, totalsFinal: totalsFinal, bytesPerSecond: rate, secondsLeft: left)
  }

  /// The log line: `from PEER: 1200 of 10000 notes, ...`.
  public func logLine(at now: ContinuousClock.Instant) -> String {
    "from \(peerName): \(snapshot(at: now).summary)"
  }

  private mutating func sample(_ now: ContinuousClock.Instant) {
    lastEvent = now
    if let last = samples.last, now - last.time < Self.sampleSpacing { return }
    samples.append((now, bytesShown, notesDone))
    // Keep the newest sample at least `window` old as the base.
    while samples.count >= 2, now - samples[1].time >= Self.window { samples.removeFirst() }
  }

  static func sum(_ a: Int, _ b: Int) -> Int {
    let (value, overflow) = a.addingReportingOverflow(b)
    return overflow ? Int.max : value
  }

  static func seconds(_ d: Duration) -> Double {
    let (s, atto) = d.components
    return Double(s) + Double(atto) / 1e18
  }

  /// A non-negative Double as an Int, saturating (NaN reads as 0).
  static func clamped(_ value: Double) -> Int {
    guard value.isFinite else { return value == .infinity ? Int.max : 0 }
    if value <= 0 { return 0 }
    if value >= 9.2e18 { return Int.max }
    return Int(value)
  }
}
