import Foundation
import Testing

@testable import BatonHCI
@testable import BatonHost
@testable import BatonL2CAP
@testable import BatonRadio

/// Issue 16 item 8: a credit-based channel cannot recover a lost K-frame or
/// a lost credit grant, so data lost below it, or a peer that owes data or
/// credits and stays silent, fails the channel in seconds instead of leaving
/// both sides waiting for the session deadline.
@Suite("L2CAP faults") struct L2CAPFaultTests {
  /// The ACL packets of one L2CAP PDU to `cid`, fragmented to `size` bytes.
  static func fragments(cid: UInt16, _ payload: [UInt8], size: Int = 27) -> [[UInt8]] {
    ACLPacket.fragments(
      of: L2CAPFrame.encode(cid: cid, payload: payload), handle: 1, maximumLength: size
    ).map { packet in
      // From the controller, a first fragment is flagged flushable.
      var packet = packet
      if packet.boundary == .firstNonFlushable { packet.boundary = .firstFlushable }
      return packet.encoded
    }
  }

  static func disconnectionRequested(_ fake: FakeController, _ channel: L2CAPChannel) -> Bool {
    fake.sentSignals(handle: 1).contains {
      if case .disconnectionRequest(let d, let s) = $0.body {
        return d == channel.remoteCID && s == channel.localCID
      }
      return false
    }
  }

  /// One K-frame SDU of `bytes` bytes (2-byte SDU length first).
  static func sdu(_ bytes: Int) -> [UInt8] {
    [UInt8(bytes & 0xFF), UInt8(bytes >> 8)] + (0..<bytes).map { UInt8(truncatingIfNeeded: $0) }
  }

  @Test func aLostMiddleFragmentFailsTheChannelAtOnce() async throws {
    let (fake, host, _, channel) = try await L2CAPChannelTests.setUp()
    defer { Task { await host.close() } }
    // A 98-byte SDU in one K-frame: 4 fragments; the third never arrives,
    // then the next PDU starts.
    var packets = Self.fragments(cid: channel.localCID, Self.sdu(98))
    #expect(packets.count == 4)
    packets.remove(at: 2)
    for packet in packets { fake.inject(packet) }
    fake.inject(Self.fragments(cid: channel.localCID, Self.sdu(10))[0])
    let started = ContinuousClock.now
    #expect(try await channel.receive() == nil)
    #expect(ContinuousClock.now - started < .seconds(2))
    #expect(channel.isClosed)
    #expect(!channel.closedByPeer)  // data lost: a fault, not an old peer's refusal
    #expect(await eventually { Self.disconnectionRequested(fake, channel) })
  }

  @Test func aLostFirstFragmentFailsTheChannelWithOneWarning() async throws {
    let (fake, host, _, channel) = try await L2CAPChannelTests.setUp()
    defer { Task { await host.close() } }
    let packets = Self.fragments(cid: channel.localCID, Self.sdu(200))
    #expect(packets.count > 5)
    let malformed = host.controller.statistics.malformedPackets
    for packet in packets.dropFirst() { fake.inject(packet) }
    #expect(try await channel.receive() == nil)
    #expect(await eventually { Self.disconnectionRequested(fake, channel) })
    // The rest of the PDU's continuations are dropped quietly.
    #expect(host.controller.statistics.malformedPackets == malformed + 1)
  }

  @Test func anSDUIsCreditedAsSoonAsItIsComplete() async throws {
    let (fake, host, _, channel) = try await L2CAPChannelTests.setUp()
    defer { Task { await host.close() } }
    fake.inject(FakeController.acl(handle: 1, cid: channel.localCID, Self.sdu(3)))
    #expect(try await channel.receive() == [0, 1, 2])
    let credited = await eventually {
      fake.sentSignals(handle: 1).contains {
        if case .flowControlCredit(let cid, 1) = $0.body { return cid == channel.localCID }
        return false
      }
    }
    #expect(credited)
  }

  /// Our message went out, the peer never credited it back, and we wait for
  /// its answer: the message was lost on the way (or the credits were).
  @Test func waitingForAnAnswerToAnUncreditedMessageFailsWithinSeconds() async throws {
    let (fake, host, _, channel) = try await L2CAPChannelTests.setUp(credits: 10)
    defer { Task { await host.close() } }
    try await channel.send([1, 2, 3])
    let started = ContinuousClock.now
    #expect(try await channel.receive() == nil)
    let elapsed = ContinuousClock.now - started
    #expect(elapsed >= L2CAPChannel.stallTimeout - .milliseconds(100))
    #expect(elapsed < L2CAPChannel.stallTimeout + .seconds(3))
    #expect(await eventually { Self.disconnectionRequested(fake, channel) })
  }

  /// A peer that has everything credited back may stay silent as long as it
  /// likes: an idle channel is not a stalled one.
  @Test func anIdleChannelWhoseFramesWereCreditedStaysOpen() async throws {
    let (fake, host, _, channel) = try await L2CAPChannelTests.setUp(credits: 10)
    defer { Task { await host.close() } }
    try await channel.send([1, 2, 3])
    let peerCID = channel.remoteCID
    fake.inject(
      FakeController.acl(
        handle: 1, cid: 5,
        L2CAPSignal(identifier: 4, body: .flowControlCredit(cid: peerCID, credits: 1)).encoded))
    let receiving = Task { try await channel.receive() }
    // Past the stall timeout: still open, still waiting.
    let deadline = ContinuousClock.now + L2CAPChannel.stallTimeout + .seconds(1)
    while ContinuousClock.now < deadline && !channel.isClosed {
      try await Task.sleep(for: .milliseconds(50))
    }
    #expect(!channel.isClosed)
    fake.inject(FakeController.acl(handle: 1, cid: channel.localCID, Self.sdu(2)))
    #expect(try await receiving.value == [0, 1])
  }

  @Test func anSDUThatStopsHalfwayFailsTheChannelWithinSeconds() async throws {
    let (fake, host, _, channel) = try await L2CAPChannelTests.setUp()
    defer { Task { await host.close() } }
    // The first K-frame of a 3000-byte SDU (MPS 2048), then nothing.
    var first = [UInt8(3000 & 0xFF), UInt8(3000 >> 8)]
    first += [UInt8](repeating: 7, count: 2046)
    fake.inject(FakeController.acl(handle: 1, cid: channel.localCID, first))
    let started = ContinuousClock.now
    #expect(try await channel.receive() == nil)
    #expect(ContinuousClock.now - started < L2CAPChannel.stallTimeout + .seconds(3))
    #expect(await eventually { Self.disconnectionRequested(fake, channel) })
  }

  /// A send waiting for credits that never come, while the controller
  /// completes none of our packets either (lost packets or lost Number Of
  /// Completed Packets: buffers the controller never returns while the
  /// connection lasts): the connection itself is dropped.
  @Test func aStuckControllerLosesTheConnectionNotJustTheChannel() async throws {
    let (fake, host, connection, channel) = try await L2CAPChannelTests.setUp(credits: 1)
    defer { Task { await host.close() } }
    fake.holdACLCompletions(true)
    // 100 bytes at the peer's MPS 30: 4 K-frames, 1 credit.
    let sending = Task { try await channel.send([UInt8](repeating: 1, count: 100)) }
    await #expect(throws: L2CAPError.self) { try await sending.value }
    let disconnect = await eventually(3) {
      fake.sent.contains {
        $0.count >= 6 && $0[0] == 0x01 && $0[1] == 0x06 && $0[2] == 0x04 && $0[4] == 1
      }
    }
    #expect(disconnect)
    fake.inject(
      HCIEvent.disconnectionComplete(status: .success, handle: 1, reason: .localHostTerminated)
        .encoded)
    #expect(await connection.waitForDisconnection() == .localHostTerminated)
    // The controller's buffers for the connection came back with it.
    #expect(host.controller.aclStall(handle: 1) == nil)
  }

  /// Once the frame layer recovers lost messages, a credit grant more than
  /// the peer can have given (a flipped bit in its count) is dropped as
  /// damaged, not added (which would overflow and close the channel, or
  /// let us send K-frames the peer never credited); and a K-frame beyond the
  /// credits we gave (a damaged grant that still looked plausible) is taken,
  /// within the most the peer can ever hold.
  @Test func damagedCreditGrantsCostNothingOnceLossIsTolerated() async throws {
    let (fake, host, _, channel) = try await L2CAPChannelTests.setUp(credits: 1)
    defer { Task { await host.close() } }
    channel.tolerateLoss()
    func grant(_ credits: UInt16, id: UInt8) {
      fake.inject(
        FakeController.acl(
          handle: 1, cid: 5,
          L2CAPSignal(identifier: id, body: .flowControlCredit(cid: channel.remoteCID, credits: credits))
            .encoded))
    }
    // A damaged grant, then a real one of 1: two credits in all, so a send
    // of two K-frames (40 bytes at MPS 30) completes, and leaves none.
    grant(0x4001, id: 9)
    grant(1, id: 10)
    try await channel.send([UInt8](repeating: 3, count: 40))
    #expect(channel.sendWouldWait)
    #expect(!channel.isClosed)
    // We gave 64 credits and return none while 16 SDUs wait unread: the
    // 81st K-frame is beyond them; ten such are taken.
    for _ in 0..<90 {
      fake.inject(FakeController.acl(handle: 1, cid: channel.localCID, [1, 0, 0xAB]))
    }
    for _ in 0..<90 { #expect(try await channel.receive() == [0xAB]) }
    #expect(!channel.isClosed)
  }

  /// Before the frame layer runs (the handshake), a K-frame with no credit
  /// is the violation the spec says it is.
  @Test func aKFrameWithNoCreditClosesAChannelThatToleratesNoLoss() async throws {
    let (fake, host, _, channel) = try await L2CAPChannelTests.setUp()
    defer { Task { await host.close() } }
    for _ in 0..<90 {
      fake.inject(FakeController.acl(handle: 1, cid: channel.localCID, [1, 0, 0xAB]))
    }
    #expect(await eventually { channel.isClosed })
  }
}
