import BatonHandoff
import FoundationEssentials
import Testing

@testable import BatonAgent

/// The peer scheduler as a state machine, over plain values on a made-up
/// clock: who connects, the link fallback, link limits, back-off after
/// failures, windows and asks, and which of two links with a peer is kept.
@Suite struct PeerSchedulerTests {
  /// Stands for a `HandoffLink`: the scheduler only hands it back.
  final class FakeLink {}
  typealias Scheduler = PeerScheduler<FakeLink>

  let start = ContinuousClock.now
  let date = Date()
  let me = DeviceID(rawValue: 0x50)
  let ourAddress = "50:00:00:00:00:00"
  let open = BeaconContent(activityHash: 0, indexDigest: 7)

  /// A scheduler for our device, with peers named and resolved to devices;
  /// closed by default (PROTOCOL.md 3.3) unless its address is private.
  func scheduler(knowing peers: [String: UInt64] = [:], addressIsPrivate: Bool = true)
    -> Scheduler
  {
    var scheduler = Scheduler(device: me)
    scheduler.controllerOpened(addressIsPrivate: addressIsPrivate)
    for (address, device) in peers {
      if scheduler.hear(address, rssi: -50, beacon: [1], at: date) {
        scheduler.resolved(
          address, as: ("peer \(device)", DeviceID(rawValue: device)), byAddress: true)
      }
    }
    return scheduler
  }

  func consider(
    _ scheduler: inout Scheduler, _ address: String, _ content: BeaconContent? = nil,
    at offset: Duration = .zero, fromAnotherAddress: Bool = false
  ) -> (decision: Scheduler.Decision, flags: Scheduler.FlagChange) {
    _ = scheduler.hear(address, rssi: -50, beacon: [1], at: date)
    return scheduler.consider(
      address, content: content ?? open, ourAddress: ourAddress,
      connectsFromAnotherAddress: fromAnotherAddress, now: start + offset)
  }

  func isLink(_ decision: Scheduler.Decision) -> Bool {
    if case .link = decision { return true }
    return false
  }

  func isSession(_ decision: Scheduler.Decision) -> Bool {
    if case .session = decision { return true }
    return false
  }

  func isIgnore(_ decision: Scheduler.Decision) -> Bool {
    if case .ignore = decision { return true }
    return false
  }

  func waitUntil(_ decision: Scheduler.Decision) -> ContinuousClock.Instant? {
    if case .wait(let until) = decision { return until }
    return nil
  }

  /// Brings a link up at `address` with `device`, made by us or not.
  @discardableResult
  func linkUp(
    _ scheduler: inout Scheduler, _ link: FakeLink, at address: String, device: UInt64,
    initiator: Bool = true, at offset: Duration = .zero
  ) -> Scheduler.LinkUp {
    scheduler.linkUp(
      link, at: address, peer: DeviceID(rawValue: device), name: "peer \(device)",
      initiator: initiator, now: start + offset, isFrom: { _ in false })
  }

  @Test func theLowerDeviceIdConnectsAndTheHigherWaits() {
    var s = scheduler(knowing: ["AA:00:00:00:00:01": 0x60, "AA:00:00:00:00:02": 0x40])
    let higher = consider(&s, "AA:00:00:00:00:01").decision
    guard case .link(let device) = higher else {
      Issue.record("a peer with a higher device id: \(higher)")
      return
    }
    #expect(device == DeviceID(rawValue: 0x60))
    // Our id is the higher: the peer connects, we wait for the fallback.
    let lower = consider(&s, "AA:00:00:00:00:02").decision
    #expect(waitUntil(lower) == start + Scheduler.linkFallback)
  }

  @Test func anUnknownPeerIsTieBrokenByAddress() {
    var s = scheduler()
    #expect(isLink(consider(&s, "60:00:00:00:00:00").decision))
    #expect(waitUntil(consider(&s, "40:00:00:00:00:00").decision) != nil)
  }

  @Test func theSideThatAcceptsConnectsAfterTheFallback() {
    var s = scheduler(knowing: ["AA:00:00:00:00:02": 0x40])
    let address = "AA:00:00:00:00:02"
    #expect(waitUntil(consider(&s, address).decision) == start + Scheduler.linkFallback)
    // Heard again before the fallback: the wait started at the first beacon.
    let again = consider(&s, address, at: Scheduler.linkFallback - .milliseconds(1)).decision
    #expect(waitUntil(again) == start + Scheduler.linkFallback)
    #expect(isLink(consider(&s, address, at: Scheduler.linkFallback).decision))
    // A link claimed: the wait is over, and the address is busy.
    let r1 = s.claimLink(address, device: DeviceID(rawValue: 0x40))
    #expect(r1)
    #expect(isIgnore(consider(&s, address, at: Scheduler.linkFallback).decision))
  }

  @Test func peersBeyondTheLinkLimitGetSessions() {
    var s = scheduler()
    for n in 1...Scheduler.maxLinks {
      let address = "60:00:00:00:00:0\(n)"
      #expect(isLink(consider(&s, address).decision))
      let r2 = s.claimLink(address, device: nil)
      #expect(r2)
    }
    // Placeholders (connecting) count: the next peer gets a session.
    #expect(isSession(consider(&s, "60:00:00:00:00:09").decision))
    let r3 = s.claimSession("60:00:00:00:00:09")
    #expect(r3)
    s.linkAttemptEnded("60:00:00:00:00:01")
    #expect(isLink(consider(&s, "60:00:00:00:00:0a").decision))
  }

  @Test func noRoomKeepsTheLinksAtTheNumberUp() {
    var s = scheduler()
    let links = [FakeLink(), FakeLink()]
    for (n, link) in links.enumerated() {
      let address = "60:00:00:00:00:0\(n)"
      let r4 = s.claimLink(address, device: nil)
      #expect(r4)
      linkUp(&s, link, at: address, device: 0x60 + UInt64(n))
    }
    // A third attempt is refused for lack of room.
    let r5 = s.claimLink("60:00:00:00:00:09", device: nil)
    #expect(r5)
    let r6 = s.noRoom()
    #expect(r6 == 2)
    s.linkAttemptEnded("60:00:00:00:00:09")
    s.sessionEnded("60:00:00:00:00:09")
    #expect(s.linksUp == 2)
    #expect(isSession(consider(&s, "60:00:00:00:00:09").decision))
    // One link goes: a link again (one of two).
    s.linkEnded(links[0], at: "60:00:00:00:00:00")
    #expect(isLink(consider(&s, "60:00:00:00:00:09").decision))
  }

  @Test func noRoomWithNoLinkUpStillKeepsOne() {
    var s = scheduler()
    let r7 = s.noRoom()
    #expect(r7 == 1)
    #expect(isLink(consider(&s, "60:00:00:00:00:01").decision))
    let r8 = s.claimLink("60:00:00:00:00:01", device: nil)
    #expect(r8)
    #expect(isSession(consider(&s, "60:00:00:00:00:02").decision))
  }

  @Test func failedLinkAttemptsBackOffToSessions() {
    var s = scheduler()
    let address = "60:00:00:00:00:01"
    for _ in 1..<Scheduler.linkAttempts { s.linkFailed(address, now: start) }
    #expect(isLink(consider(&s, address).decision))
    s.linkFailed(address, now: start)
    #expect(isSession(consider(&s, address).decision))
    let pause = Scheduler.linkRetryPause
    #expect(isSession(consider(&s, address, at: pause - .milliseconds(1)).decision))
    #expect(isLink(consider(&s, address, at: pause).decision))
    // The pause over, the count starts again.
    s.linkFailed(address, now: start + pause)
    #expect(isLink(consider(&s, address, at: pause).decision))
  }

  @Test func aLinkThatCameUpForgetsTheFailures() {
    var s = scheduler()
    let address = "60:00:00:00:00:01"
    for _ in 1..<Scheduler.linkAttempts { s.linkFailed(address, now: start) }
    s.linkOpened(address)
    s.linkFailed(address, now: start)
    #expect(isLink(consider(&s, address).decision))
  }

  @Test func aHostThatConnectsFromAnotherAddressMakesSessionsOnly() {
    var s = scheduler()
    #expect(isSession(consider(&s, "60:00:00:00:00:01", fromAnotherAddress: true).decision))
  }

  @Test func aBusyAddressIsIgnoredUntilItsSessionEnds() {
    var s = scheduler()
    let address = "60:00:00:00:00:01"
    let r9 = s.claimSession(address)
    #expect(r9)
    let r10 = s.claimSession(address)
    #expect(!r10)
    let r11 = s.claimLink(address, device: nil)
    #expect(!r11)
    #expect(isIgnore(consider(&s, address).decision))
    s.sessionEnded(address)
    #expect(isLink(consider(&s, address).decision))
  }

  @Test func anIncomingConnectionWithoutAChannelFreesItsAddress() {
    var s = scheduler()
    let address = "60:00:00:00:00:01"
    let first = s.peerConnected(address)
    #expect(isIgnore(consider(&s, address).decision))
    // A channel came: the wait is void.
    s.channelOpened(address)
    let r12 = s.channelWaitEnded(address, token: first)
    #expect(!r12)
    s.sessionEnded(address)
    let second = s.peerConnected(address)
    let r13 = s.channelWaitEnded(address, token: first)
    #expect(!r13)
    let r14 = s.channelWaitEnded(address, token: second)
    #expect(r14)
    #expect(isLink(consider(&s, address).decision))
  }

  @Test func aClosedBeaconIsAskedToOpenAndNotConnectedTo() {
    var s = scheduler()
    let closed = BeaconContent(activityHash: 0, indexDigest: 7, closed: true)
    let first = consider(&s, "60:00:00:00:00:01", closed)
    #expect(isIgnore(first.decision))
    #expect(first.flags == .ask(until: start + Scheduler.askLength))
    #expect(s.beaconFlags(now: start).asking)
    // Heard again: the ask is extended, the beacon does not change.
    let again = consider(&s, "60:00:00:00:00:01", closed, at: .seconds(5))
    #expect(again.flags == .none)
    #expect(s.beaconFlags(now: start + Scheduler.askLength + .seconds(1)).asking)
    #expect(!s.beaconFlags(now: start + Scheduler.askLength + .seconds(6)).asking)
  }

  @Test func aPeerThatAsksGetsAWindowWhileWeAreClosed() {
    var s = Scheduler(device: me)
    s.controllerOpened(addressIsPrivate: false)
    #expect(s.beaconFlags(now: start).closed)
    let asking = BeaconContent(activityHash: 0, indexDigest: 7, asking: true)
    let heard = consider(&s, "40:00:00:00:00:01", asking)
    #expect(heard.flags == .window(until: start + Scheduler.windowLength, count: 1))
    #expect(!s.beaconFlags(now: start).closed)
    #expect(consider(&s, "40:00:00:00:00:01", asking, at: .seconds(1)).flags == .none)
    #expect(s.beaconFlags(now: start + Scheduler.windowLength).closed)
    // The link came: the window shuts.
    let up = linkUp(&s, FakeLink(), at: "40:00:00:00:00:01", device: 0x40, initiator: false)
    guard case .kept(_, let windowClosed) = up else {
      Issue.record("the only link was turned away")
      return
    }
    #expect(windowClosed)
    #expect(s.beaconFlags(now: start).closed)
  }

  @Test func aClosedAgentConnectsToAnOpenPeerWithoutWaitingItsTurn() {
    let lower = "AA:00:00:00:00:02"
    var s = scheduler(knowing: [lower: 0x40], addressIsPrivate: false)
    // The peer's id is the lower, so its turn; but it cannot connect to a
    // closed beacon, and waiting for it would only cost the fallback.
    #expect(s.beaconFlags(now: start).closed)
    #expect(isLink(consider(&s, lower).decision))
  }

  @Test func anOpenAgentWaitsItsTurnAfterAWindowOpened() {
    let lower = "AA:00:00:00:00:02"
    var s = scheduler(knowing: [lower: 0x40], addressIsPrivate: false)
    // It asks and is open: we open a window, and it connects to us.
    let asking = BeaconContent(activityHash: 0, indexDigest: 7, asking: true)
    let heard = consider(&s, lower, asking)
    #expect(heard.flags == .window(until: start + Scheduler.windowLength, count: 1))
    #expect(waitUntil(heard.decision) == start + Scheduler.linkFallback)
  }

  @Test func aPrivateAddressIsNeverClosed() {
    var s = scheduler()
    let asking = BeaconContent(activityHash: 0, indexDigest: 7, asking: true)
    #expect(consider(&s, "40:00:00:00:00:01", asking).flags == .none)
    #expect(!s.beaconFlags(now: start).closed)
  }

  @Test func aLinkedPeerHeardUnderAnotherAddressIsProbedOnce() {
    var s = scheduler(knowing: ["AA:00:00:00:00:01": 0x60, "AA:00:00:00:00:02": 0x60])
    let link = FakeLink()
    linkUp(&s, link, at: "AA:00:00:00:00:01", device: 0x60)
    #expect(isIgnore(consider(&s, "AA:00:00:00:00:01").decision))
    guard case .probe(let probed) = consider(&s, "AA:00:00:00:00:02").decision else {
      Issue.record("the link was not probed")
      return
    }
    #expect(probed === link)
    #expect(isIgnore(consider(&s, "AA:00:00:00:00:02").decision))
  }

  /// A closed beacon's address changes with the peer's advertising set-up,
  /// not only when it restarts: heard under a new address it is probed only
  /// when it asks to link (a restarted peer that lacks its link asks).
  @Test func aClosedBeaconUnderANewAddressIsProbedOnlyWhenItAsks() {
    var s = scheduler(knowing: [
      "AA:00:00:00:00:01": 0x60, "50:00:00:00:00:02": 0x60, "50:00:00:00:00:03": 0x60,
    ])
    let link = FakeLink()
    linkUp(&s, link, at: "AA:00:00:00:00:01", device: 0x60)
    let closed = BeaconContent(activityHash: 0, indexDigest: 7, closed: true)
    #expect(isIgnore(consider(&s, "50:00:00:00:00:02", closed).decision))
    let asking = BeaconContent(activityHash: 0, indexDigest: 7, closed: true, asking: true)
    // The same address, now asking: probed (once).
    for address in ["50:00:00:00:00:02", "50:00:00:00:00:03"] {
      guard case .probe(let probed) = consider(&s, address, asking).decision else {
        Issue.record("an asking peer's link was not probed at \(address)")
        return
      }
      #expect(probed === link)
      #expect(isIgnore(consider(&s, address, asking).decision))
    }
  }

  @Test func ofTwoLinksTheOneTheRuleWouldMakeIsKept() {
    // We are the lower id: the rule says we connect.
    var s = scheduler()
    let ours = FakeLink()
    linkUp(&s, ours, at: "AA:00:00:00:00:01", device: 0x60, initiator: true)
    let theirs = FakeLink()
    guard
      case .turnedAway(let kept) = linkUp(
        &s, theirs, at: "AA:00:00:00:00:02", device: 0x60, initiator: false)
    else {
      Issue.record("the peer's link replaced the one the rule makes")
      return
    }
    #expect(kept.count == 1 && kept[0] === ours)
    #expect(s.linksUp == 1)

    // The other way round: ours replaces the peer's.
    var t = scheduler()
    linkUp(&t, theirs, at: "AA:00:00:00:00:02", device: 0x60, initiator: false)
    guard
      case .kept(let losers, _) = linkUp(
        &t, ours, at: "AA:00:00:00:00:01", device: 0x60, initiator: true)
    else {
      Issue.record("the link the rule makes was turned away")
      return
    }
    #expect(losers.count == 1 && losers[0] === theirs)
  }

  @Test func ofTwoLinksMadeTheSameWayTheNewerIsKept() {
    var s = scheduler()
    let old = FakeLink()
    let new = FakeLink()
    // The peer (higher id) connected twice: it restarted.
    linkUp(&s, old, at: "AA:00:00:00:00:01", device: 0x60, initiator: false)
    guard
      case .kept(let losers, _) = linkUp(
        &s, new, at: "AA:00:00:00:00:02", device: 0x60, initiator: false)
    else {
      Issue.record("the newer link was turned away")
      return
    }
    #expect(losers.count == 1 && losers[0] === old)
  }

  @Test func theControllerIsReopenedAfterStuckAttemptsInARow() {
    var s = scheduler()
    for _ in 1..<Scheduler.stuckAttemptsBeforeReopen {
      let r15 = s.attemptStuck()
      #expect(!r15)
    }
    s.connected()
    for _ in 1..<Scheduler.stuckAttemptsBeforeReopen {
      let r16 = s.attemptStuck()
      #expect(!r16)
    }
    let r17 = s.attemptStuck()
    #expect(r17)
    let r18 = s.attemptStuck()
    #expect(!r18)
  }

  @Test func theOldestLinkAnchorsTheScanSchedule() {
    var s = scheduler()
    #expect(s.anchor == nil)
    linkUp(&s, FakeLink(), at: "AA:00:00:00:00:01", device: 0x60, initiator: false, at: .seconds(5))
    linkUp(&s, FakeLink(), at: "AA:00:00:00:00:02", device: 0x70, initiator: true, at: .seconds(9))
    #expect(s.anchor == ScanSchedule.Anchor(since: start + .seconds(5), initiator: false))
  }

  /// The replay bound's known peer (PROTOCOL.md 3, "Replays"): an address
  /// that itself resolves to a peer, or where a handshake proved one; not
  /// one whose beacon alone resolves (a replayer sends a known beacon).
  @Test func onlyAnAddressThatResolvesOrProvedAPeerIsKnown() {
    var s = scheduler(knowing: ["60:00:00:00:00:01": 0x60])
    #expect(s.isKnown("60:00:00:00:00:01"))
    _ = s.hear("60:00:00:00:00:02", rssi: -50, beacon: [1], at: date)
    s.resolved("60:00:00:00:00:02", as: ("pad", DeviceID(rawValue: 0x60)), byAddress: false)
    #expect(!s.isKnown("60:00:00:00:00:02"))
    _ = s.hear("60:00:00:00:00:03", rssi: -50, beacon: [1], at: date)
    s.resolved("60:00:00:00:00:03", as: nil, byAddress: false)
    #expect(!s.isKnown("60:00:00:00:00:03"))
    s.learnt("pad", device: DeviceID(rawValue: 0x60), at: "60:00:00:00:00:03")
    #expect(s.isKnown("60:00:00:00:00:03"))
  }

  @Test func closedBeaconsOfALinkedPeerCountAsItsAndShowOnce() {
    var s = scheduler()
    // Two closed beacons from fresh addresses, before we knew the peer.
    let r19 = s.hear("C1:00:00:00:00:01", rssi: -60, beacon: [9], at: date)
    #expect(r19)
    s.resolved("C1:00:00:00:00:01", as: nil, byAddress: false)
    let r20 = s.hear("C1:00:00:00:00:02", rssi: -60, beacon: [9], at: date + 1)
    #expect(r20)
    s.resolved("C1:00:00:00:00:02", as: nil, byAddress: false)
    #expect(s.unlinkedPeer(heardSince: date))
    _ = s.linkUp(
      FakeLink(), at: "AA:00:00:00:00:01", peer: DeviceID(rawValue: 0x60), name: "pad",
      initiator: true, now: start, isFrom: { $0 == [9] })
    #expect(!s.unlinkedPeer(heardSince: date))
    let rows = s.peers(heardSince: date, now: date + 2)
    // One row, the latest address, shown as linked.
    #expect(rows.map(\.address) == ["C1:00:00:00:00:02"])
    #expect(rows.map(\.name) == ["pad"])
    #expect(rows.map(\.link) == ["up"])
  }
}
