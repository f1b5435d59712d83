import Testing

@testable import BatonHandoff

/// The bounds on connections (PROTOCOL.md section 3, "Replays"), decided by
/// `ConnectionMemory` alone: no engine, no actor, no clock but the instants
/// each test passes in.
@Suite struct ConnectionMemoryTests {
  let start = ContinuousClock.now
  let policy = HandoffPolicy(retryInterval: .seconds(30))
  let beacon = BeaconContent(activityHash: 0x12, indexDigest: 0xA1)
  let mine: UInt32 = 0xB2
  let nobodyKnown = false

  /// The memory behind a reference, so that `#expect` can call its mutating
  /// methods.
  final class Memory {
    var value: ConnectionMemory
    init(_ policy: HandoffPolicy) { value = ConnectionMemory(policy: policy) }

    func connect(
      _ content: BeaconContent, from address: String, mine: UInt32, known: Bool,
      now: ContinuousClock.Instant
    ) -> Bool {
      value.mayConnect(for: content, from: address, mine: mine, addressIsKnown: known, now: now)
    }

    func link(
      _ content: BeaconContent, from address: String, mine: UInt32, known: Bool,
      now: ContinuousClock.Instant
    ) -> Bool {
      value.mayLink(for: content, from: address, mine: mine, addressIsKnown: known, now: now)
    }
  }

  func at(_ seconds: Double) -> ContinuousClock.Instant { start + .seconds(seconds) }

  @Test func aSessionNeedsAnotherIndexThanOurs() {
    let memory = Memory(policy)
    let same = BeaconContent(activityHash: 0x12, indexDigest: mine)
    #expect(!memory.connect(same, from: "A", mine: mine, known: nobodyKnown, now: at(0)))
    // Nor a beacon of another version (PROTOCOL.md 3).
    let later = BeaconContent(version: 2, activityHash: 0x12, indexDigest: 0xA1)
    #expect(!memory.connect(later, from: "B", mine: mine, known: nobodyKnown, now: at(0)))
    // A link needs no difference.
    #expect(memory.link(same, from: "A", mine: mine, known: nobodyKnown, now: at(0)))
  }

  @Test func aSettledPairNeedsNoConnection() {
    let memory = Memory(policy)
    memory.value.settle(.init(peer: beacon.indexDigest, mine: mine))
    #expect(!memory.connect(beacon, from: "A", mine: mine, known: nobodyKnown, now: at(0)))
    // Once our index changed, the same beacon is worth a session again.
    #expect(memory.connect(beacon, from: "A", mine: mine + 1, known: nobodyKnown, now: at(0)))
  }

  @Test func failedAttemptsAreRetriedAfterTwoFiveAndTenSecondsThenTheInterval() {
    let memory = Memory(policy)
    var last = at(0)
    #expect(memory.connect(beacon, from: "A", mine: mine, known: nobodyKnown, now: last))
    // Each delay may be up to half as long again (HandoffPolicy.retryDelay).
    for delay in [2.0, 5.0, 10.0, 30.0] {
      let tooSoon = last + .seconds(delay) - .milliseconds(1)
      #expect(!memory.connect(beacon, from: "A", mine: mine, known: nobodyKnown, now: tooSoon))
      let late = last + .seconds(delay * 1.5)
      #expect(
        memory.connect(beacon, from: "A", mine: mine, known: nobodyKnown, now: late), "\(delay)")
      #expect(
        memory.value.attempts["A"]?.retries == [2.0, 5.0, 10.0, 30.0].firstIndex(of: delay)! + 1)
      last = late
    }
  }

  @Test func aFinishedSessionClearsItsAttempt() {
    let memory = Memory(policy)
    #expect(memory.connect(beacon, from: "A", mine: mine, known: nobodyKnown, now: at(0)))
    #expect(!memory.connect(beacon, from: "A", mine: mine, known: nobodyKnown, now: at(0.5)))
    memory.value.succeeded(at: "A")
    #expect(memory.value.attempts["A"] == nil)
    #expect(memory.connect(beacon, from: "A", mine: mine, known: nobodyKnown, now: at(0.5)))
    #expect(memory.value.attempts["A"]?.retries == 0)
  }

  @Test func aReplayFromFreshAddressesCostsOneConnectionPerInterval() {
    let memory = Memory(policy)
    #expect(memory.connect(beacon, from: "M1", mine: mine, known: nobodyKnown, now: at(0)))
    for n in 2...20 {
      #expect(
        !memory.connect(beacon, from: "M\(n)", mine: mine, known: nobodyKnown, now: at(Double(n))))
      #expect(
        !memory.link(beacon, from: "M\(n)", mine: mine, known: nobodyKnown, now: at(Double(n))))
    }
    // A known peer is never kept waiting by a replayer.
    #expect(memory.connect(beacon, from: "K", mine: mine, known: true, now: at(21)))
    // After `retryInterval`, the next fresh address gets its one connection.
    #expect(memory.connect(beacon, from: "M21", mine: mine, known: nobodyKnown, now: at(51.5)))
    #expect(!memory.connect(beacon, from: "M22", mine: mine, known: nobodyKnown, now: at(52)))
  }

  @Test func aFailedHandshakeHoldsTheAddressBackForTheIntervalForThatContent() {
    let memory = Memory(policy)
    // No attempt recorded, nothing to hold back.
    memory.value.handshakeFailed(at: "M", now: at(0))
    #expect(memory.value.heldBack.isEmpty)
    #expect(memory.connect(beacon, from: "M", mine: mine, known: nobodyKnown, now: at(0)))
    memory.value.handshakeFailed(at: "M", now: at(1))
    #expect(memory.value.heldBack.count == 1)
    memory.value.succeeded(at: "M")  // even with the attempt gone, the hold stays
    #expect(!memory.connect(beacon, from: "M", mine: mine, known: nobodyKnown, now: at(30.9)))
    #expect(!memory.link(beacon, from: "M", mine: mine, known: nobodyKnown, now: at(30.9)))
    // Another content at that address is not held back.
    let changed = BeaconContent(activityHash: 0x12, indexDigest: 0xA3)
    #expect(memory.connect(changed, from: "M", mine: mine, known: nobodyKnown, now: at(2)))
    memory.value.succeeded(at: "M")
    #expect(memory.connect(beacon, from: "M", mine: mine, known: nobodyKnown, now: at(31)))
  }

  @Test func aLinkAndASessionShareOneCountOfAttempts() {
    let memory = Memory(policy)
    #expect(memory.link(beacon, from: "A", mine: mine, known: nobodyKnown, now: at(0)))
    #expect(!memory.connect(beacon, from: "A", mine: mine, known: nobodyKnown, now: at(1)))
    #expect(memory.connect(beacon, from: "A", mine: mine, known: nobodyKnown, now: at(3.5)))
    #expect(memory.value.attempts["A"]?.retries == 1)
  }

  @Test func everyPartStaysBounded() {
    let memory = Memory(policy)
    for n in 0..<(ConnectionMemory.settledLimit + 10) {
      memory.value.settle(.init(peer: UInt32(n), mine: mine))
    }
    #expect(!memory.value.isSettled(.init(peer: 0, mine: mine)))
    // Past the limits, the expired attempts and holds go.
    for n in 0..<(ConnectionMemory.heldLimit + 10) {
      let content = BeaconContent(activityHash: 1, indexDigest: UInt32(n))
      #expect(
        memory.link(content, from: "A\(n)", mine: mine, known: nobodyKnown, now: at(Double(n) * 31))
      )
      memory.value.handshakeFailed(at: "A\(n)", now: at(Double(n) * 31))
    }
    #expect(memory.value.attempts.count < 20)
    #expect(memory.value.heldBack.count < 20)
  }
}
