import Foundation
import Testing

@testable import BatonHCI
@testable import BatonHost
@testable import BatonL2CAP
@testable import BatonRadio

/// L2CAP behaviour against a scripted controller: we play a hostile peer.
@Suite("L2CAP channels")
struct L2CAPChannelTests {
  /// A host on a fake controller with one incoming connection (handle 1) and
  /// a channel the "peer" opened to PSM 0x0080 from its CID 0x0050, with
  /// `credits` credits for us.
  static func setUp(credits: UInt16 = 10) async throws -> (
    FakeController, BLEHost, LEConnection, L2CAPChannel
  ) {
    let fake = FakeController()
    let host = try await BLEHost.open(transport: fake)
    let listener = host.listen(psm: 0x0080)
    fake.inject(FakeController.connectionComplete(handle: 1))
    var connections = host.incomingConnections.makeAsyncIterator()
    let connection = try #require(await connections.next())
    let request = L2CAPSignal(
      identifier: 7,
      body: .connectionRequest(psm: 0x0080, sourceCID: 0x0050, mtu: 100, mps: 30, credits: credits))
    fake.inject(FakeController.acl(handle: 1, cid: 5, request.encoded))
    var channels = listener.makeAsyncIterator()
    let channel = try #require(await channels.next())
    return (fake, host, connection, channel)
  }

  @Test func acceptsAChannelAndSegmentsToThePeersMPS() async throws {
    let (fake, host, _, channel) = try await Self.setUp(credits: 10)
    defer { Task { await host.close() } }
    _ = await eventually { fake.sentSignals(handle: 1).contains { $0.identifier == 7 } }
    let response = fake.sentSignals(handle: 1).first { $0.identifier == 7 }
    guard
      case .connectionResponse(let dcid, let mtu, let mps, let credits, let result)? = response?
        .body
    else {
      Issue.record("no connection response")
      return
    }
    #expect(result == 0 && dcid == channel.localCID && mtu == 65535 && mps == 2048 && credits == 64)
    #expect(channel.maximumMessageSize == 100)
    await #expect(throws: L2CAPError.self) {
      try await channel.send(Array(repeating: 1, count: 101))
    }
    // 100 bytes at MPS 30: 2 + 28, then 30, 30, 12 -> 4 K-frames to CID 0x50.
    try await channel.send((0..<100).map { UInt8($0) })
    // The K-frames to CID 0x50 written so far.
    func written() -> [[UInt8]] {
      var reassembler = ACLReassembler()
      var kframes: [[UInt8]] = []
      for packet in fake.sent {
        guard let acl = try? ACLPacket.decode(packet), let pdu = try? reassembler.feed(acl),
          let frame = try? L2CAPFrame.decode(pdu), frame.cid == 0x0050
        else { continue }
        kframes.append(frame.payload)
      }
      return kframes
    }
    #expect(await eventually { written().count == 4 })
    let kframes = written()
    #expect(kframes.map(\.count) == [30, 30, 30, 12])
    #expect(Array(kframes.joined().dropFirst(2)) == (0..<100).map { UInt8($0) })
  }

  @Test func reassemblesSDUsAndGrantsCredits() async throws {
    let (fake, host, _, channel) = try await Self.setUp()
    defer { Task { await host.close() } }
    let cid = channel.localCID
    let message = (0..<5000).map { UInt8(truncatingIfNeeded: $0) }
    var frames: [[UInt8]] = []
    var rest = [UInt8(5000 & 0xFF), UInt8(5000 >> 8)] + message
    while !rest.isEmpty {
      frames.append(Array(rest.prefix(2048)))
      rest = Array(rest.dropFirst(2048))
    }
    // 20 copies of a 3-frame SDU: 60 frames, within the 64 credits given.
    for _ in 0..<20 {
      for frame in frames { fake.inject(FakeController.acl(handle: 1, cid: cid, frame)) }
    }
    for _ in 0..<20 { #expect(try await channel.receive() == message) }
    let granted = {
      fake.sentSignals(handle: 1).compactMap { signal -> UInt16? in
        if case .flowControlCredit(let c, let n) = signal.body, c == cid { return n }
        return nil
      }.reduce(0, +)
    }
    #expect(await eventually { granted() >= 32 })
  }

  @Test func unknownAndMalformedSignallingGetCommandReject() async throws {
    let (fake, host, _, _) = try await Self.setUp()
    defer { Task { await host.close() } }
    fake.inject(FakeController.acl(handle: 1, cid: 5, [0x77, 0x21, 0x00, 0x00]))
    fake.inject(FakeController.acl(handle: 1, cid: 5, [0x06, 0x22, 0x02, 0x00, 0x40, 0x00]))
    let rejected = await eventually {
      let ids = fake.sentSignals(handle: 1).compactMap { s -> UInt8? in
        if case .commandReject(let reason, _) = s.body, reason == 0 { return s.identifier }
        return nil
      }
      return ids.contains(0x21) && ids.contains(0x22)
    }
    #expect(rejected)
    // A request for a PSM nobody listens on is refused.
    let request = L2CAPSignal(
      identifier: 9,
      body: .connectionRequest(psm: 0x00F0, sourceCID: 0x0051, mtu: 100, mps: 30, credits: 1))
    fake.inject(FakeController.acl(handle: 1, cid: 5, request.encoded))
    let refused = await eventually {
      fake.sentSignals(handle: 1).contains {
        if case .connectionResponse(_, _, _, _, let result) = $0.body, $0.identifier == 9 {
          return result == 0x0002
        }
        return false
      }
    }
    #expect(refused)
  }

  @Test func oversizedFrameClosesTheChannel() async throws {
    let (fake, host, _, channel) = try await Self.setUp()
    defer { Task { await host.close() } }
    fake.inject(
      FakeController.acl(handle: 1, cid: channel.localCID, [UInt8](repeating: 0, count: 2049)))
    #expect(try await channel.receive() == nil)
    #expect(channel.isClosed)
    #expect(!channel.closedByPeer)  // a fault, not the peer's choice
    let disconnected = await eventually {
      fake.sentSignals(handle: 1).contains {
        if case .disconnectionRequest(let d, let s) = $0.body {
          return d == 0x0050 && s == channel.localCID
        }
        return false
      }
    }
    #expect(disconnected)
    await #expect(throws: L2CAPError.self) { try await channel.send([1]) }
  }

  @Test func frameWithoutCreditClosesTheChannel() async throws {
    let (fake, host, _, channel) = try await Self.setUp()
    defer { Task { await host.close() } }
    // 64 credits given; each frame is a 1-byte SDU, credited back at once
    // while fewer than 16 wait unread; nobody reads, so the 15 credits of
    // the first 15 SDUs come back, then none (inbox limit), and frame 80 is
    // out of credit.
    for _ in 0..<80 {
      fake.inject(FakeController.acl(handle: 1, cid: channel.localCID, [1, 0, 0xAB]))
    }
    _ = await eventually { channel.isClosed }
    #expect(channel.isClosed)
  }

  @Test func peerDisconnectionClosesTheChannel() async throws {
    let (fake, host, connection, channel) = try await Self.setUp()
    defer { Task { await host.close() } }
    let request = L2CAPSignal(
      identifier: 3,
      body: .disconnectionRequest(destinationCID: channel.localCID, sourceCID: 0x0050))
    fake.inject(FakeController.acl(handle: 1, cid: 5, request.encoded))
    #expect(try await channel.receive() == nil)
    #expect(channel.closedByPeer)  // the handshake reads this as the peer's refusal
    #expect(
      await eventually {
        fake.sentSignals(handle: 1).contains {
          $0.identifier == 3
            && $0.body
              == .disconnectionResponse(destinationCID: channel.localCID, sourceCID: 0x0050)
        }
      })
    fake.inject(
      HCIEvent.disconnectionComplete(status: .success, handle: 1, reason: .remoteUserTerminated)
        .encoded)
    #expect(await connection.waitForDisconnection() == .remoteUserTerminated)
  }

  /// Thousands of random and mutated packets at a live host: it neither traps
  /// nor stops working.
  @Test func hostSurvivesHostilePackets() async throws {
    let (fake, host, _, channel) = try await Self.setUp()
    var rng = SplitMix64(seed: 0x4057_11E)
    let seeds: [[UInt8]] = [
      FakeController.acl(
        handle: 1, cid: 5,
        L2CAPSignal(identifier: 1, body: .flowControlCredit(cid: 0x50, credits: 5)).encoded),
      FakeController.acl(handle: 1, cid: channel.localCID, [3, 0, 1, 2, 3]),
      FakeController.acl(
        handle: 1, cid: 5,
        L2CAPSignal(
          identifier: 2,
          body: .connectionRequest(psm: 0x80, sourceCID: 0x60, mtu: 64, mps: 23, credits: 1)
        ).encoded),
      FakeController.acl(handle: 1, cid: 4, [0x02, 0x00, 0x02]),
      FakeController.acl(handle: 1, cid: 6, [0x01, 0x03, 0x00, 0x01, 0x10, 0x07, 0x07]),
      HCIEvent.numberOfCompletedPackets([(1, 200)]).encoded,
      HCIEvent.leAdvertisingReports([
        AdvertisingReport(
          address: .randomStatic(), addressType: .random, data: [1, 2], rssi: -40, extended: true)
      ]).encoded,
      FakeController.connectionComplete(handle: 2),
      ACLPacket(handle: 1, boundary: .continuing, data: [1, 2, 3]).encoded,
    ]
    for round in 0..<4000 {
      var bytes = seeds[Int(rng.next() % UInt64(seeds.count))]
      if round % 4 == 0 {
        bytes =
          [[0x02, 0x04][Int(rng.next() % 2)]]
          + (0..<Int(rng.next() % 40)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
      } else {
        for _ in 0..<(1 + Int(rng.next() % 3)) where bytes.count > 1 {
          let index = 1 + Int(rng.next() % UInt64(bytes.count - 1))
          bytes[index] = UInt8(truncatingIfNeeded: rng.next())
        }
      }
      // Keep the handle's connection: hostile disconnections are not the point here.
      if bytes.count > 1 && bytes[0] == 0x04 && bytes[1] == 0x05 { continue }
      host.controller.handle(bytes)
    }
    #expect(host.controller.statistics.malformedPackets > 100)
    #expect(!host.isClosed)
    // Still working: a command round trip and a message on a fresh channel.
    fake.inject(
      HCIEvent.commandComplete(numCommandPackets: 1, opcode: 0, returnParameters: []).encoded)
    try await host.startAdvertising(data: [2, 1, 6], intervalMilliseconds: 100)
    await host.close()
  }
}
