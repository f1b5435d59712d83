import BatonRadio
/// When the agent scans for beacons (baton(1), Scanning): a synchronous state
/// machine that `AgentRadio` drives with what it knows (links up, keyed
/// peers heard without a link, an audio stream on the adapter) and the time,
/// and that answers whether to scan now and when to ask again.
///
/// The adapter is shared with the user's headphones, mice and Wi-Fi, and a
/// linked peer needs no scanning: its changes travel over the link. So the
/// agent scans continuously only in a `burst` after something that may have
/// brought a new peer (start, the controller back, a link dropped, resume),
/// and while a keyed peer is heard that has no link (its changes reach us by
/// its beacon); otherwise in short windows: `window` every `searchingGap`
/// while no link is up, every `linkedGap` while every peer heard is linked,
/// and, while the adapter carries an audio stream, none while a link is up
/// and one every `audioGap` otherwise. Every gap is jittered by ±`jitter`, so
/// two agents that started together do not scan in step (or out of step)
/// for ever. While our beacon is closed (PROTOCOL.md 3.3: bluetoothd with
/// `Privacy` off), a newcomer cannot connect to us, and is linked only once
/// we hear it in one of our windows: then every peer linked means windows
/// of `closedWindow` every `closedAnchoredGap`, in turns with the other end
/// of our oldest link (`Anchor`; without one, every `closedLinkedGap` ±
/// `closedJitter`), so a newcomer is heard within 30 s by each, and within
/// half that by the pair, for a duty of at most 5 %. While the host hears peers by itself (a passive scan of the
/// system's: bluetoothd's advertisement monitor), in either mode, that scan
/// simply stays on (`passive`): every beacon reaches us anyway, and no burst
/// or window is needed; except while the adapter carries an audio stream,
/// when in `windows` mode the windows' rules turn it off and on instead.
struct ScanSchedule: Sendable {
  typealias Mode = ScanningMode

  /// What the schedule is doing, for `baton status`.
  enum Activity: String, Sendable, Equatable {
    case continuous, burst, window, peers, off
    /// The host hears peers by itself (`RadioHostChange.passiveScan`): its
    /// passive scan stays on.
    case passive

    /// Whether every advertisement must be reported: a keyed peer without a
    /// link tells of its changes by its beacon (`peers`), and `continuous`
    /// is the agent as it was. A burst or a window searches for new peers,
    /// for which one report per advertiser and scan is enough.
    var needsEveryReport: Bool { self == .peers || self == .continuous }
  }

  /// What the agent knows that the schedule depends on.
  struct Situation: Sendable, Equatable {
    /// Links up (handshake done).
    var linksUp = 0
    /// A keyed peer heard recently has no link.
    var unlinkedPeer = false
    /// The adapter carries an active audio stream.
    var audio = false
    /// The host hears peers' beacons by itself: its scan stays on, with no
    /// bursts or windows.
    var passive = false
    /// Our beacon is closed (PROTOCOL.md 3.3): a newcomer cannot connect to
    /// us, and waits for one of our windows to hear it.
    var closed = false
    /// The link the windows take turns by while closed and linked (the
    /// oldest up); nil: each agent draws its own.
    var anchor: Anchor?
  }

  /// A link whose start both its ends know, within a round trip: closed
  /// and linked, its initiator's windows come at `since` + k ×
  /// `closedAnchoredGap`, its responder's half a gap later. The two take
  /// turns without a message, so a newcomer that either can hear waits at
  /// most half a gap, where two independent schedules may scan in step.
  struct Anchor: Sendable, Equatable {
    var since: ContinuousClock.Instant
    var initiator: Bool
  }

  /// What to do now, and when to ask again (nil: only when something changes).
  struct Step: Sendable, Equatable {
    var scanning: Bool
    var activity: Activity
    var wake: ContinuousClock.Instant?
  }

  /// Continuous scanning after start, a link drop or the controller back:
  /// one whole discovery cycle of bluetoothd (10.24 s) and four link
  /// fallbacks, so a peer that came meanwhile is linked within it.
  static let burst: Duration = .seconds(10)
  /// One window: our beacons go out every 200 ms by default, and bluetoothd
  /// sends them every 1.28 s; two seconds hears either at least once.
  static let window: Duration = .seconds(2)
  /// Between windows while no link is up: 10 % of the time, Android's limit
  /// for background scanning; a peer in range is heard within 24 s.
  static let searchingGap: Duration = .seconds(20)
  /// Between windows while every peer heard is linked and our beacon is
  /// open (a newcomer connects to it; `closedLinkedGap` otherwise): 3.2 % of the time
  /// on average, and under 5 % over any stretch, since no gap is shorter
  /// than 48 s.
  static let linkedGap: Duration = .seconds(60)
  /// Between windows while an audio stream runs and no link is up.
  static let audioGap: Duration = .seconds(300)
  /// Each gap is drawn from gap × (1 ± jitter).
  static let jitter = 0.2
  /// One window while every peer is linked and our beacon is closed: a
  /// closed beacon (ours, a newcomer's on bluetoothd) goes out every
  /// 1.28 s, so 1.4 s spans one whole interval with 120 ms to spare for
  /// the advertising delay (up to 10 ms) and the discovery's start; a
  /// beacon every 200 ms (the exclusive backends) is heard seven times.
  static let closedWindow: Duration = .milliseconds(1400)
  /// Between windows while every peer is linked and our beacon is closed:
  /// a newcomer is linked only once a linked agent hears it, so one window
  /// must follow another within 30 s (the target for a peer coming
  /// into range): 28 s × 1.02 + 1.4 s = 29.96 s. The duty is then 4.76 %
  /// on average (1.4 s of every 29.4 s), and at most 4.9 % over any 10
  /// minutes from the second window after a burst: 22 windows would need
  /// 22 × 1.4 s + 21 × 27.44 s = 607 s, so at most 21 (29.4 s) fit in
  /// 600 s. Either bound leaves room for ±2 % only, which drifts two
  /// agents' windows apart slowly (±0.56 s a gap, a random walk); so the
  /// first window after a burst comes half a gap to a whole one after it
  /// (`phased`), and two linked agents hear a newcomer sooner than one.
  static let closedLinkedGap: Duration = .seconds(28)
  /// Each `closedLinkedGap` is drawn from it × (1 ± closedJitter).
  static let closedJitter = 0.02
  /// Between windows while closed and linked with an `Anchor`: no jitter,
  /// since the turns must not drift. A window ends 28.6 s after the last
  /// (under 30 s), and 600 s hold at most 21 windows (20 × 28.6 s + 1.4 s
  /// = 573.4 s; a 22nd would need 602 s), 29.4 s of scanning: 4.9 %.
  static let closedAnchoredGap: Duration = .milliseconds(28600)

  let mode: Mode
  private var situation = Situation()
  private var burstUntil: ContinuousClock.Instant?
  private var windowUntil: ContinuousClock.Instant?
  private var nextWindow: ContinuousClock.Instant?
  private var random: UInt64

  init(mode: Mode, seed: UInt64) {
    self.mode = mode
    self.random = seed
  }

  /// Something happened that may have brought a new peer: scan for `burst`
  /// (not while an audio stream runs and a link is up).
  mutating func startBurst(now: ContinuousClock.Instant) {
    burstUntil = now + Self.burst
    windowUntil = nil
  }

  /// What the agent knows changed.
  mutating func update(_ situation: Situation) {
    self.situation = situation
  }

  var current: Situation { situation }

  /// Moves the schedule to `now` and says what to do.
  mutating func step(now: ContinuousClock.Instant) -> Step {
    if situation.passive && (!situation.audio || mode == .continuous) {
      // When audio starts, or the host no longer hears peers by itself,
      // windows start afresh.
      burstUntil = nil
      windowUntil = nil
      nextWindow = nil
      return Step(scanning: true, activity: .passive, wake: nil)
    }
    if mode == .continuous { return Step(scanning: true, activity: .continuous, wake: nil) }
    // An audio stream with a link up: nothing but what the links carry.
    guard let (gap, jitter, window) = self.windows else {
      burstUntil = nil
      windowUntil = nil
      nextWindow = nil
      return Step(scanning: false, activity: .off, wake: nil)
    }
    // A keyed peer without a link tells of its changes by its beacon, and
    // the decision to link with it is taken again on each report (it may
    // be our turn only after `linkFallback`, or once another link's
    // handshake is done): every report, in a burst too.
    if situation.unlinkedPeer && !situation.audio {
      return Step(scanning: true, activity: .peers, wake: nil)
    }
    if let until = burstUntil {
      if now < until { return Step(scanning: true, activity: .burst, wake: until) }
      burstUntil = nil
      // Closed and linked, the first window comes at a random point of
      // half a gap to a whole one: two agents that started (or linked)
      // together are out of step at once, not after hours of ±2 % drift,
      // so a newcomer waits for the sooner of two windows.
      let closedLinked = situation.closed && situation.linksUp > 0
      if let turn = turn(after: now) {
        nextWindow = turn
      } else {
        nextWindow = now + (closedLinked ? phased(gap) : jittered(gap, by: jitter))
      }
    }
    if let until = windowUntil {
      if now < until { return Step(scanning: true, activity: .window, wake: until) }
      windowUntil = nil
      nextWindow = turn(after: now) ?? now + jittered(gap, by: jitter)
    }
    let next = nextWindow ?? now + jittered(gap, by: jitter)
    // A shorter gap than the one this window was drawn from (a link went
    // away, audio stopped) takes effect at once.
    let due = min(next, now + gap + gap * jitter)
    nextWindow = due
    if now >= due {
      let until = now + window
      windowUntil = until
      return Step(scanning: true, activity: .window, wake: until)
    }
    return Step(scanning: false, activity: .off, wake: due)
  }

  /// Closed and linked with an anchor: the first of our turns at `t` or
  /// after; nil otherwise (windows are drawn at random).
  private func turn(after t: ContinuousClock.Instant) -> ContinuousClock.Instant? {
    guard situation.closed, situation.linksUp > 0, !situation.audio, let anchor = situation.anchor
    else { return nil }
    let gap = Self.closedAnchoredGap
    let first = anchor.since + (anchor.initiator ? .zero : gap / 2)
    guard t > first else { return first }
    // Whole gaps since the first turn, in milliseconds (no trap: both
    // instants are this machine's, at most days apart).
    let elapsed = (t - first).wholeMilliseconds
    let step = gap.wholeMilliseconds
    let turns = (elapsed + step - 1) / step
    return first + .milliseconds(turns * step)
  }

  /// The gap between windows in the current situation, its jitter and the
  /// windows' length; nil for no windows.
  private var windows: (gap: Duration, jitter: Double, window: Duration)? {
    if situation.audio {
      return situation.linksUp > 0 ? nil : (Self.audioGap, Self.jitter, Self.window)
    }
    guard situation.linksUp > 0 else { return (Self.searchingGap, Self.jitter, Self.window) }
    if situation.closed {
      return situation.anchor == nil
        ? (Self.closedLinkedGap, Self.closedJitter, Self.closedWindow)
        : (Self.closedAnchoredGap, 0, Self.closedWindow)
    }
    return (Self.linkedGap, Self.jitter, Self.window)
  }

  /// `gap` × (1 ± jitter), from a SplitMix64 sequence.
  private mutating func jittered(_ gap: Duration, by jitter: Double) -> Duration {
    gap * (1 - jitter + 2 * jitter * unitRandom())
  }

  /// The first closed gap after a burst: from half of `gap` to all of it
  /// (and its jitter).
  private mutating func phased(_ gap: Duration) -> Duration {
    gap * (0.5 + (0.5 + Self.closedJitter) * unitRandom())
  }

  /// The next number in [0, 1) of a SplitMix64 sequence.
  private mutating func unitRandom() -> Double {
    random &+= 0x9E37_79B9_7F4A_7C15
    var z = random
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    z ^= z >> 31
    return Double(z >> 11) / Double(1 << 53)
  }
}
