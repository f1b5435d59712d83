import Testing

@testable import BatonHCI
@testable import BatonL2CAP

@Suite("L2CAP signalling")
struct L2CAPSignalTests {
  static let signals: [L2CAPSignal] = [
    L2CAPSignal(identifier: 1, body: .commandReject(reason: 0, data: [])),
    L2CAPSignal(identifier: 2, body: .disconnectionRequest(destinationCID: 0x40, sourceCID: 0x41)),
    L2CAPSignal(identifier: 3, body: .disconnectionResponse(destinationCID: 0x40, sourceCID: 0x41)),
    L2CAPSignal(
      identifier: 4,
      body: .connectionParameterUpdateRequest(
        intervalMin: 6, intervalMax: 12, latency: 0, timeout: 400)),
    L2CAPSignal(identifier: 5, body: .connectionParameterUpdateResponse(result: 1)),
    L2CAPSignal(
      identifier: 6,
      body: .connectionRequest(psm: 0x81, sourceCID: 0x40, mtu: 65535, mps: 2048, credits: 64)),
    L2CAPSignal(
      identifier: 7,
      body: .connectionResponse(destinationCID: 0x40, mtu: 512, mps: 64, credits: 10, result: 0)),
    L2CAPSignal(identifier: 8, body: .flowControlCredit(cid: 0x40, credits: 32)),
    L2CAPSignal(identifier: 9, body: .unknown(code: 0x77, data: [1, 2])),
  ]

  @Test func roundTrip() throws {
    for signal in Self.signals {
      #expect(try L2CAPSignal.decode(signal.encoded) == signal)
    }
    // Known bytes: LE Credit Based Connection Request, PSM 0x81, CID 0x40, MTU 23, MPS 23, 1 credit.
    let bytes: [UInt8] = [
      0x14, 0x01, 0x0A, 0x00, 0x81, 0x00, 0x40, 0x00, 0x17, 0x00, 0x17, 0x00, 0x01, 0x00,
    ]
    #expect(
      try L2CAPSignal.decode(bytes)
        == L2CAPSignal(
          identifier: 1,
          body: .connectionRequest(psm: 0x81, sourceCID: 0x40, mtu: 23, mps: 23, credits: 1)))
  }

  @Test func malformedCommandsAreRejected() {
    for signal in Self.signals {
      let bytes = signal.encoded
      for cut in 0..<bytes.count {
        #expect(throws: HCIDecodeError.self) { try L2CAPSignal.decode(Array(bytes[0..<cut])) }
      }
      #expect(throws: HCIDecodeError.self) { try L2CAPSignal.decode(bytes + [0]) }
    }
    // Identifier 0 is invalid; a wrong-size known command is invalid.
    #expect(throws: HCIDecodeError.self) {
      try L2CAPSignal.decode([0x06, 0x00, 0x04, 0x00, 0x40, 0, 0x40, 0])
    }
    #expect(throws: HCIDecodeError.self) {
      try L2CAPSignal.decode([0x06, 0x01, 0x02, 0x00, 0x40, 0])
    }
  }

  @Test func frames() throws {
    let frame = L2CAPFrame.encode(cid: 0x40, payload: [1, 2, 3])
    #expect(frame == [3, 0, 0x40, 0, 1, 2, 3])
    #expect(try L2CAPFrame.decode(frame).payload == [1, 2, 3])
    #expect(throws: HCIDecodeError.self) { try L2CAPFrame.decode([4, 0, 0x40, 0, 1, 2, 3]) }
  }
}
