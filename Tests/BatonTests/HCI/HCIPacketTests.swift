import Testing

@testable import BatonHCI
@testable import BatonL2CAP
@testable import BatonRadio

/// Encode/decode round trips and hostile input for every HCI decoder.
@Suite("HCI packets")
struct HCIPacketTests {
  static let address = BluetoothAddress("C4:12:34:56:78:9A")!

  static let commands: [HCICommand] = {
    var adv = HCICommand.AdvertisingParameters(intervalMin: 0x20, intervalMax: 0x30)
    adv.peerAddress = address
    var scan = HCICommand.ScanParameters()
    scan.type = 1
    var create = HCICommand.CreateConnectionParameters(
      peerAddressType: .random, peerAddress: address)
    create.supervisionTimeout = 0x0C80
    var update = HCICommand.ConnectionUpdateParameters(intervalMin: 0x90, intervalMax: 0xA0)
    update.maxLatency = 2
    return [
      .reset, .setEventMask(0x2000_1FFF_FFFF_FFFF), .readLocalVersion, .readLocalSupportedFeatures,
      .readBufferSize, .readBDAddr, .leSetEventMask(0x121F), .leReadBufferSize,
      .leReadLocalSupportedFeatures, .leSetRandomAddress(address), .leSetAdvertisingParameters(adv),
      .leSetAdvertisingData([1, 2, 3]), .leSetAdvertisingData(Array(repeating: 7, count: 31)),
      .leSetAdvertisingEnable(true), .leSetScanParameters(scan),
      .leSetScanEnable(true, filterDuplicates: false),
      .leCreateConnection(create), .leCreateConnectionCancel,
      .leConnectionUpdate(handle: 0x0041, update),
      .disconnect(handle: 0x0042, reason: .remoteUserTerminated),
    ]
  }()

  static let events: [HCIEvent] = [
    .disconnectionComplete(status: .success, handle: 1, reason: .remoteUserTerminated),
    .commandComplete(numCommandPackets: 1, opcode: 0x2002, returnParameters: [0, 27, 0, 64]),
    .commandStatus(status: .commandDisallowed, numCommandPackets: 1, opcode: 0x200D),
    .numberOfCompletedPackets([(1, 3), (2, 1)]),
    .leConnectionComplete(
      .init(
        enhanced: false, status: .success, handle: 1, role: 0, peerAddressType: .random,
        peerAddress: address,
        interval: 24, latency: 0, supervisionTimeout: 400, clockAccuracy: 0)),
    .leConnectionComplete(
      .init(
        enhanced: true, status: .success, handle: 2, role: 1, peerAddressType: .random,
        peerAddress: address,
        interval: 24, latency: 0, supervisionTimeout: 400, clockAccuracy: 1)),
    .leConnectionUpdateComplete(
      .init(status: .success, handle: 1, interval: 160, latency: 0, supervisionTimeout: 400)),
    .leAdvertisingReports([
      AdvertisingReport(
        address: address, addressType: .random, data: [2, 1, 6], rssi: -50, eventType: 0)
    ]),
    .leAdvertisingReports([
      AdvertisingReport(
        address: address, addressType: .random, data: [2, 1, 6], rssi: -50, eventType: 0x13,
        extended: true),
      AdvertisingReport(
        address: address, addressType: .public, data: Array(repeating: 9, count: 200), rssi: -70,
        eventType: 0x1B, extended: true),
    ]),
    .other(code: 0x08, parameters: [0, 1, 0, 1]),
  ]

  @Test func commandsRoundTrip() throws {
    for command in Self.commands {
      let bytes = command.encoded
      #expect(bytes[0] == 0x01 && Int(bytes[3]) == bytes.count - 4)
      #expect(try HCICommand.decode(bytes) == command)
    }
    // LE Set Advertising Data is always 32 parameter bytes.
    #expect(HCICommand.leSetAdvertisingData([1]).encoded.count == 4 + 32)
  }

  @Test func eventsRoundTrip() throws {
    for event in Self.events {
      let bytes = event.encoded
      let decoded = try HCIEvent.decode(bytes)
      #expect(decoded.encoded == bytes)
    }
  }

  @Test func knownBytesDecode() throws {
    // Captured from bumble: LE Connection Complete, handle 1, central.
    let bytes: [UInt8] = [
      0x04, 0x3E, 0x13, 0x01, 0x00, 0x01, 0x00, 0x00, 0x01, 0x9A, 0x78, 0x56, 0x34, 0x12, 0xC4,
      0x18, 0x00,
      0x00, 0x00, 0x90, 0x01, 0x00,
    ]
    guard case .leConnectionComplete(let c) = try HCIEvent.decode(bytes) else {
      Issue.record("not a connection complete")
      return
    }
    #expect(
      c.peerAddress == Self.address && c.handle == 1 && c.role == 0 && c.supervisionTimeout == 400)
    #expect(HCIStatus.commandDisallowed.description == "Command Disallowed (0x0C)")
  }

  @Test func truncatedAndOversizedEventsAreRejected() {
    for event in Self.events {
      let bytes = event.encoded
      for cut in 0..<bytes.count {
        #expect(throws: HCIDecodeError.self) { try HCIEvent.decode(Array(bytes[0..<cut])) }
      }
      #expect(throws: HCIDecodeError.self) { try HCIEvent.decode(bytes + [0]) }
    }
  }

  @Test func aclFragmentationAndReassembly() throws {
    let pdu = L2CAPFrame.encode(cid: 0x40, payload: Array(0..<200).map { UInt8($0) })
    let fragments = ACLPacket.fragments(of: pdu, handle: 3, maximumLength: 27)
    #expect(fragments.count == (pdu.count + 26) / 27)
    #expect(fragments.allSatisfy { $0.data.count <= 27 })
    #expect(fragments[0].boundary == .firstNonFlushable && fragments[1].boundary == .continuing)
    var reassembler = ACLReassembler()
    var result: [UInt8]?
    for fragment in fragments {
      #expect(result == nil)
      result = try reassembler.feed(try ACLPacket.decode(fragment.encoded))
    }
    #expect(result == pdu)
    // A packet longer than the buffer size (as bumble sends) is accepted whole.
    #expect(try reassembler.feed(ACLPacket(handle: 3, boundary: .firstFlushable, data: pdu)) == pdu)
    // A continuation without a start, and a PDU longer than its header says, are errors.
    #expect(throws: HCIDecodeError.self) {
      try reassembler.feed(ACLPacket(handle: 4, boundary: .continuing, data: [1]))
    }
    #expect(throws: HCIDecodeError.self) {
      try reassembler.feed(
        ACLPacket(handle: 4, boundary: .firstFlushable, data: [1, 0, 0x40, 0, 9, 9]))
    }
  }

  /// Random bytes and single-byte mutations of valid packets: every decoder
  /// either decodes or throws; none traps. Re-encoding what decoded must decode
  /// to the same packet.
  @Test func fuzzEveryDecoder() throws {
    var rng = SplitMix64(seed: 0xBA70)
    var valid: [[UInt8]] = Self.events.map(\.encoded) + Self.commands.map(\.encoded)
    valid.append(
      ACLPacket(handle: 1, boundary: .firstFlushable, data: [4, 0, 5, 0, 1, 2, 3, 4]).encoded)
    valid.append(
      contentsOf: L2CAPSignalTests.signals.map { L2CAPFrame.encode(cid: 5, payload: $0.encoded) })
    var decodedCount = 0
    for round in 0..<6000 {
      var bytes: [UInt8]
      if round % 3 == 0 {
        bytes = (0..<Int(rng.next() % 80)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
      } else {
        bytes = valid[Int(rng.next() % UInt64(valid.count))]
        let mutations = 1 + Int(rng.next() % 3)
        for _ in 0..<mutations where !bytes.isEmpty {
          let index = Int(rng.next() % UInt64(bytes.count))
          switch rng.next() % 3 {
          case 0: bytes[index] = UInt8(truncatingIfNeeded: rng.next())
          case 1: bytes.remove(at: index)
          default: bytes.insert(UInt8(truncatingIfNeeded: rng.next()), at: index)
          }
        }
      }
      // Force the type byte sometimes so each decoder sees deep input.
      for type: UInt8 in [0x01, 0x02, 0x04] {
        var typed = bytes
        if !typed.isEmpty { typed[0] = type }
        if let event = try? HCIEvent.decode(typed) {
          decodedCount += 1
          #expect(try HCIEvent.decode(event.encoded).encoded == event.encoded)
        }
        if let command = try? HCICommand.decode(typed) {
          decodedCount += 1
          #expect(try HCICommand.decode(command.encoded) == command)
        }
        if let acl = try? ACLPacket.decode(typed) {
          decodedCount += 1
          #expect(try ACLPacket.decode(acl.encoded) == acl)
          var reassembler = ACLReassembler()
          _ = try? reassembler.feed(acl)
        }
      }
      if let signal = try? L2CAPSignal.decode(bytes) {
        decodedCount += 1
        #expect(try L2CAPSignal.decode(signal.encoded) == signal)
      }
      _ = try? L2CAPFrame.decode(bytes)
      var framer = H4Framer()
      framer.append(bytes)
      while let packet = try? framer.next() { #expect(!packet.isEmpty) }
    }
    #expect(decodedCount > 500)
  }

  @Test func addresses() {
    #expect(Self.address.description == "C4:12:34:56:78:9A")
    #expect(Self.address.bytes == [0x9A, 0x78, 0x56, 0x34, 0x12, 0xC4])
    #expect(BluetoothAddress("nonsense") == nil)
    #expect(BluetoothAddress("C4:12:34:56:78") == nil)
    for _ in 0..<100 { #expect(BluetoothAddress.randomStatic().isRandomStatic) }
  }
}
