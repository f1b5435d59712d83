import Testing

@testable import BatonAgent

/// The scan schedule as a state machine, driven on a made-up clock.
@Suite struct ScanScheduleTests {
  let start = ContinuousClock.now

  /// Runs `schedule` from `from` for `length`, waking when it asks to (and at
  /// least every `poll`), and returns the time spent scanning, the longest
  /// single scan, and the number of scans started.
  func simulate(
    _ schedule: inout ScanSchedule, from: ContinuousClock.Instant, for length: Duration,
    poll: Duration = .seconds(1)
  ) -> (scanning: Duration, longest: Duration, scans: Int) {
    var now = from
    let end = from + length
    var total = Duration.zero
    var longest = Duration.zero
    var scans = 0
    var scanStart: ContinuousClock.Instant?
    while now < end {
      let step = schedule.step(now: now)
      if step.scanning && scanStart == nil {
        scanStart = now
        scans += 1
      }
      if !step.scanning, let began = scanStart {
        total += now - began
        longest = max(longest, now - began)
        scanStart = nil
      }
      let next = min(step.wake ?? now + poll, now + poll, end)
      now = max(next, now + .milliseconds(1))
    }
    if let began = scanStart {
      total += end - began
      longest = max(longest, end - began)
    }
    return (total, longest, scans)
  }

  @Test func continuousModeAlwaysScans() {
    var schedule = ScanSchedule(mode: .continuous, seed: 1)
    schedule.update(.init(linksUp: 3, unlinkedPeer: false, audio: true))
    let step = schedule.step(now: start)
    #expect(step == .init(scanning: true, activity: .continuous, wake: nil))
  }

  /// A host that hears peers by itself (bluetoothd's advertisement
  /// monitor): its scan stays on, with no burst or window, in either mode;
  /// when it stops, windows resume after a gap.
  @Test(arguments: [ScanningMode.windows, .continuous])
  func aHostThatScansPassivelyNeedsNoBurstsOrWindows(mode: ScanningMode) {
    var schedule = ScanSchedule(mode: mode, seed: 7)
    schedule.startBurst(now: start)
    schedule.update(.init(linksUp: 0, unlinkedPeer: true, audio: false, passive: true))
    #expect(schedule.step(now: start) == .init(scanning: true, activity: .passive, wake: nil))
    var passive = schedule
    passive.startBurst(now: start + .seconds(1))
    let run = simulate(&passive, from: start + .seconds(1), for: .seconds(600))
    #expect(run.scans == 1 && run.scanning == .seconds(600))
    schedule.update(.init(linksUp: 0, unlinkedPeer: false, audio: false, passive: false))
    let after = schedule.step(now: start + .seconds(2))
    if mode == .continuous {
      #expect(after.scanning && after.activity == .continuous)
    } else {
      #expect(!after.scanning && after.activity == .off)
      let wake = try! #require(after.wake)
      #expect(wake - (start + .seconds(2)) >= ScanSchedule.searchingGap * 0.8)
    }
  }

  /// An audio stream while the host scans passively: in `windows` mode the
  /// windows' rules turn that scan off (a link up) or to a rare window.
  @Test func anAudioStreamPausesThePassiveScan() {
    var schedule = ScanSchedule(mode: .windows, seed: 3)
    schedule.update(.init(linksUp: 1, unlinkedPeer: false, audio: true, passive: true))
    var linked = schedule
    #expect(linked.step(now: start) == .init(scanning: false, activity: .off, wake: nil))
    schedule.update(.init(linksUp: 0, unlinkedPeer: false, audio: true, passive: true))
    let alone = schedule.step(now: start)
    #expect(!alone.scanning && alone.activity == .off)
    let wake = try! #require(alone.wake)
    #expect(wake - start >= ScanSchedule.audioGap * 0.8)
    // The stream ends: passive again at once.
    schedule.update(.init(linksUp: 0, unlinkedPeer: false, audio: false, passive: true))
    #expect(schedule.step(now: start + .seconds(1)).activity == .passive)
    var continuous = ScanSchedule(mode: .continuous, seed: 3)
    continuous.update(.init(linksUp: 1, unlinkedPeer: false, audio: true, passive: true))
    #expect(continuous.step(now: start).activity == .passive)
  }

  @Test func aBurstScansThenWindowsFollow() {
    var schedule = ScanSchedule(mode: .windows, seed: 1)
    schedule.startBurst(now: start)
    let first = schedule.step(now: start)
    #expect(first.scanning && first.activity == .burst)
    #expect(first.wake == start + ScanSchedule.burst)
    let after = schedule.step(now: start + ScanSchedule.burst)
    #expect(!after.scanning && after.activity == .off)
    let wake = try! #require(after.wake)
    let gap = wake - (start + ScanSchedule.burst)
    #expect(gap >= ScanSchedule.searchingGap * 0.8 && gap <= ScanSchedule.searchingGap * 1.2)
    let window = schedule.step(now: wake)
    #expect(window.scanning && window.activity == .window)
    #expect(window.wake == wake + ScanSchedule.window)
    #expect(!schedule.step(now: wake + ScanSchedule.window).scanning)
  }

  /// The target: every peer linked, ten minutes, at most 5 % and no
  /// scan longer than 3 s once the start burst is over.
  @Test(arguments: [1, 2, 3, 42, 1000] as [UInt64])
  func linkedScansAtMostFivePercent(seed: UInt64) {
    var schedule = ScanSchedule(mode: .windows, seed: seed)
    schedule.startBurst(now: start)
    schedule.update(.init(linksUp: 1))
    _ = schedule.step(now: start)
    let steady = start + ScanSchedule.burst
    let run = simulate(&schedule, from: steady, for: .seconds(600))
    #expect(run.scanning <= .seconds(30), "scanned \(run.scanning) of 600 s")
    #expect(run.scanning >= .seconds(10), "windows still run: \(run.scanning)")
    #expect(run.longest <= .seconds(3))
  }

  /// The windows `schedule` opens from `from` for `length`, stepping at the
  /// instants it asks for (every window's start and end are such instants).
  func windows(
    _ schedule: inout ScanSchedule, from: ContinuousClock.Instant, for length: Duration
  ) -> [(start: ContinuousClock.Instant, end: ContinuousClock.Instant)] {
    var found: [(start: ContinuousClock.Instant, end: ContinuousClock.Instant)] = []
    var now = from
    var began: ContinuousClock.Instant?
    while now < from + length {
      let step = schedule.step(now: now)
      if step.scanning && began == nil { began = now }
      if !step.scanning, let start = began {
        found.append((start, now))
        began = nil
      }
      guard let wake = step.wake, wake > now else { break }
      now = wake
    }
    return found
  }

  /// Our beacon closed (bluetoothd with Privacy off) and every peer linked:
  /// a newcomer is linked only once we hear it in a window, so no window
  /// ends more than 30 s after the previous one (nor the first more than
  /// 30 s after the burst), while the duty over any 10 minutes stays at
  /// most 5 % and no window is longer than 1.4 s.
  @Test(arguments: [1, 2, 3, 42, 1000, 65_537] as [UInt64])
  func aClosedLinkedAgentHearsANewcomerWithin30s(seed: UInt64) {
    var schedule = ScanSchedule(mode: .windows, seed: seed)
    schedule.startBurst(now: start)
    schedule.update(.init(linksUp: 1, closed: true))
    let steady = start + ScanSchedule.burst
    let found = windows(&schedule, from: start, for: .seconds(3600) + ScanSchedule.burst)
    #expect(found.first?.start == start && found.first?.end == steady)
    let after = Array(found.dropFirst())
    #expect(after.count >= 3600 / 30, "\(after.count) windows in an hour")
    var ends = [steady]
    for window in after {
      #expect(window.end - window.start == ScanSchedule.closedWindow)
      ends.append(window.end)
    }
    let worst = zip(ends, ends.dropFirst()).map { $1 - $0 }.max() ?? .zero
    #expect(worst <= .seconds(30), "window end to window end: \(worst)")
    // Every ten-minute stretch that starts with a window (the worst ones),
    // from the second after the burst (the first comes half a gap to a
    // whole one after it, and a stretch that holds the burst is far above
    // 5 % anyway).
    var busiest = Duration.zero
    for (index, first) in after.enumerated()
    where index > 0 && first.start + .seconds(600) <= ends.last! {
      let stretchEnd = first.start + .seconds(600)
      var scanning = Duration.zero
      for window in after[index...] where window.start < stretchEnd {
        scanning += min(window.end, stretchEnd) - window.start
      }
      busiest = max(busiest, scanning)
    }
    #expect(busiest <= .seconds(30), "scanned \(busiest) of a 600 s stretch")
    #expect(busiest >= .seconds(25), "windows still run: \(busiest)")
  }

  /// Two closed agents that burst and linked together are out of step at
  /// once: the first window after the burst comes half a gap to a whole
  /// one after it, spread over that range by the seed (the open case keeps
  /// its ±20 % draw).
  @Test func closedAgentsThatLinkedTogetherScanOutOfStep() {
    var firsts: [Duration] = []
    for seed in 1...40 as ClosedRange<UInt64> {
      var schedule = ScanSchedule(mode: .windows, seed: seed)
      schedule.startBurst(now: start)
      schedule.update(.init(linksUp: 1, closed: true))
      let found = windows(&schedule, from: start, for: .seconds(120))
      let first = try! #require(found.dropFirst().first)
      firsts.append(first.start - (start + ScanSchedule.burst))
    }
    let earliest = firsts.min()!
    let latest = firsts.max()!
    #expect(earliest >= ScanSchedule.closedLinkedGap * 0.5)
    #expect(latest <= ScanSchedule.closedLinkedGap * (1 + ScanSchedule.closedJitter))
    #expect(latest - earliest >= .seconds(10), "first windows from \(earliest) to \(latest)")
  }

  /// The two ends of a closed link take turns by its start: between them,
  /// a window starts at most half a gap (14.3 s) after the other's, for an
  /// hour, while each alone keeps the 30 s and 5 % bounds. Their starts
  /// differ by a round trip, and their bursts end at different times.
  @Test(arguments: [1, 7, 42] as [UInt64])
  func theEndsOfAClosedLinkTakeTurns(seed: UInt64) {
    let linkUp = start + .seconds(3)
    var initiator = ScanSchedule(mode: .windows, seed: seed)
    var responder = ScanSchedule(mode: .windows, seed: seed &+ 1)
    initiator.startBurst(now: start)
    responder.startBurst(now: start + .milliseconds(2500))
    initiator.update(.init(linksUp: 1, closed: true, anchor: .init(since: linkUp, initiator: true)))
    responder.update(
      .init(
        linksUp: 1, closed: true,
        anchor: .init(since: linkUp + .milliseconds(80), initiator: false)))
    let length = Duration.seconds(3600)
    let a = windows(&initiator, from: start, for: length).dropFirst()  // after the bursts
    let b = windows(&responder, from: start + .milliseconds(2500), for: length).dropFirst()
    #expect(a.count >= 120 && b.count >= 120, "\(a.count) and \(b.count) windows")
    let starts = (a.map(\.start) + b.map(\.start)).sorted()
    let widest = zip(starts, starts.dropFirst()).map { $1 - $0 }.max() ?? .zero
    #expect(widest <= ScanSchedule.closedAnchoredGap / 2 + .milliseconds(100), "\(widest)")
    for side in [a, b] {
      let ends = side.map(\.end)
      let worst = zip(ends, ends.dropFirst()).map { $1 - $0 }.max() ?? .zero
      #expect(worst <= .seconds(30), "window end to window end: \(worst)")
      for (index, first) in side.enumerated() {
        let stretchEnd = first.start + .seconds(600)
        var scanning = Duration.zero
        for window in side[(side.startIndex + index)...] where window.start < stretchEnd {
          scanning += min(window.end, stretchEnd) - window.start
        }
        #expect(scanning <= .seconds(30), "scanned \(scanning) of a 600 s stretch")
      }
    }
    // Without the anchor, the same two may scan in step.
    var lone = ScanSchedule(mode: .windows, seed: seed)
    lone.update(.init(linksUp: 1, closed: true, anchor: nil))
    let free = windows(&lone, from: start, for: .seconds(600))
    #expect(free.count >= 2)
    let gaps = zip(free, free.dropFirst()).map { $1.start - $0.start }
    #expect(gaps.contains { $0 != ScanSchedule.closedAnchoredGap }, "\(gaps)")
  }

  /// The closed numbers apply only while a link is up with our beacon
  /// closed: open (the exclusive backends, bluetoothd with privacy), the
  /// linked windows stay 2 s every 48 to 72 s; closed with no link, the
  /// searching ones stay 2 s every 16 to 24 s; closed with audio and a link,
  /// none.
  @Test(arguments: [false, true])
  func theClosedNumbersApplyOnlyToALinkedClosedAgent(closed: Bool) {
    var linked = ScanSchedule(mode: .windows, seed: 5)
    linked.update(.init(linksUp: 1, closed: closed))
    var searching = ScanSchedule(mode: .windows, seed: 5)
    searching.update(.init(linksUp: 0, closed: true))
    var audio = ScanSchedule(mode: .windows, seed: 5)
    audio.update(.init(linksUp: 1, audio: true, closed: true))
    #expect(windows(&audio, from: start, for: .seconds(600)).isEmpty)
    let linkedNumbers =
      closed
      ? (ScanSchedule.closedLinkedGap, ScanSchedule.closedJitter, ScanSchedule.closedWindow)
      : (ScanSchedule.linkedGap, ScanSchedule.jitter, ScanSchedule.window)
    for (schedule, (gap, jitter, window)) in [
      (linked, linkedNumbers),
      (searching, (ScanSchedule.searchingGap, ScanSchedule.jitter, ScanSchedule.window)),
    ] {
      var schedule = schedule
      let found = windows(&schedule, from: start, for: .seconds(1800))
      #expect(found.count >= 1800 / Int((gap * 1.3 + window).components.seconds))
      var last = start
      for w in found {
        #expect(w.end - w.start == window)
        #expect(w.start - last >= gap * (1 - jitter) && w.start - last <= gap * (1 + jitter))
        last = w.end
      }
    }
  }

  /// No link: 10 % and a window at most `searchingGap` × 1.2 after the last.
  @Test func searchingScansTenPercent() {
    var schedule = ScanSchedule(mode: .windows, seed: 7)
    let run = simulate(&schedule, from: start, for: .seconds(600))
    #expect(run.scanning <= .seconds(66) && run.scanning >= .seconds(45))
    #expect(run.scans >= 600 / 24)
  }

  @Test func audioWithALinkStopsScanningAltogether() {
    var schedule = ScanSchedule(mode: .windows, seed: 3)
    schedule.startBurst(now: start)
    #expect(schedule.step(now: start).scanning)
    schedule.update(.init(linksUp: 1, unlinkedPeer: true, audio: true))
    let step = schedule.step(now: start + .milliseconds(10))
    #expect(step == .init(scanning: false, activity: .off, wake: nil))
    let run = simulate(&schedule, from: start, for: .seconds(600))
    #expect(run.scanning == .zero)
    // The stream ends: windows come back.
    schedule.update(.init(linksUp: 1))
    let later = simulate(&schedule, from: start + .seconds(600), for: .seconds(120))
    #expect(later.scans >= 2)
  }

  @Test func audioWithoutALinkScansRarely() {
    var schedule = ScanSchedule(mode: .windows, seed: 5)
    schedule.update(.init(linksUp: 0, unlinkedPeer: false, audio: true))
    let run = simulate(&schedule, from: start, for: .seconds(1200))
    #expect(run.scans >= 2 && run.scans <= 6, "\(run.scans) windows in 20 minutes")
    #expect(run.scanning <= ScanSchedule.window * 6)
  }

  /// A keyed peer without a link is followed continuously (its changes come
  /// by beacon), and the windows resume once it is linked.
  @Test func anUnlinkedPeerIsFollowedUntilLinked() {
    var schedule = ScanSchedule(mode: .windows, seed: 9)
    schedule.update(.init(linksUp: 0, unlinkedPeer: true))
    let followed = schedule.step(now: start)
    #expect(followed == .init(scanning: true, activity: .peers, wake: nil))
    schedule.update(.init(linksUp: 1, unlinkedPeer: false))
    let linked = schedule.step(now: start + .seconds(1))
    #expect(!linked.scanning)
  }

  /// In a burst too, a keyed peer without a link is followed with every
  /// report (the controller's duplicate filter would otherwise report it
  /// once, and the decision to link waits on a later report); the burst
  /// goes on once it is linked.
  @Test func anUnlinkedPeerGetsEveryReportInABurst() {
    var schedule = ScanSchedule(mode: .windows, seed: 5)
    schedule.startBurst(now: start)
    let burst = schedule.step(now: start)
    #expect(burst.activity == .burst && !burst.activity.needsEveryReport)
    schedule.update(.init(linksUp: 1, unlinkedPeer: true))
    let followed = schedule.step(now: start + .seconds(1))
    #expect(followed == .init(scanning: true, activity: .peers, wake: nil))
    #expect(followed.activity.needsEveryReport)
    schedule.update(.init(linksUp: 2, unlinkedPeer: false))
    let after = schedule.step(now: start + .seconds(2))
    #expect(after == .init(scanning: true, activity: .burst, wake: start + ScanSchedule.burst))
  }

  /// A link going away shortens the next gap to the searching one at once.
  @Test func aShorterGapTakesEffectAtOnce() {
    var schedule = ScanSchedule(mode: .windows, seed: 11)
    schedule.update(.init(linksUp: 1))
    let linked = schedule.step(now: start)
    let linkedWake = try! #require(linked.wake)
    #expect(linkedWake - start >= ScanSchedule.linkedGap * 0.8)
    schedule.update(.init(linksUp: 0))
    let searching = schedule.step(now: start + .seconds(1))
    let wake = try! #require(searching.wake)
    #expect(wake - start <= .seconds(1) + ScanSchedule.searchingGap * 1.2)
  }

  /// Two agents with other seeds drift apart: their windows do not keep
  /// one fixed offset.
  @Test func gapsAreJittered() {
    var a = ScanSchedule(mode: .windows, seed: 1)
    var gaps: Set<Int64> = []
    var now = start
    for _ in 0..<10 {
      var step = a.step(now: now)
      while !step.scanning, let wake = step.wake {
        now = wake
        step = a.step(now: now)
      }
      let began = now
      now = step.wake ?? now
      step = a.step(now: now)
      gaps.insert((step.wake ?? now).duration(to: began).components.seconds)
    }
    #expect(gaps.count > 3)
  }
}

extension ContinuousClock.Instant {
  fileprivate func duration(to other: ContinuousClock.Instant) -> Duration { self - other }
}
