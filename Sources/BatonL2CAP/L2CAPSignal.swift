import BatonHCI
import BatonSystem

/// One command on the LE signalling channel (CID 0x0005): code (1),
/// identifier (1), length (2), data. Layouts: Sources/BatonHCI/HCI.docc/HCI.md.
public struct L2CAPSignal: Equatable, Sendable {
  public enum Code: UInt8, Sendable {
    case commandReject = 0x01
    case disconnectionRequest = 0x06
    case disconnectionResponse = 0x07
    case connectionParameterUpdateRequest = 0x12
    case connectionParameterUpdateResponse = 0x13
    case leCreditBasedConnectionRequest = 0x14
    case leCreditBasedConnectionResponse = 0x15
    case flowControlCredit = 0x16
  }

  /// The decoded command.
  public enum Body: Equatable, Sendable {
    case commandReject(reason: UInt16, data: [UInt8])
    case disconnectionRequest(destinationCID: UInt16, sourceCID: UInt16)
    case disconnectionResponse(destinationCID: UInt16, sourceCID: UInt16)
    case connectionParameterUpdateRequest(
      intervalMin: UInt16, intervalMax: UInt16, latency: UInt16, timeout: UInt16)
    case connectionParameterUpdateResponse(result: UInt16)
    case connectionRequest(
      psm: UInt16, sourceCID: UInt16, mtu: UInt16, mps: UInt16, credits: UInt16)
    case connectionResponse(
      destinationCID: UInt16, mtu: UInt16, mps: UInt16, credits: UInt16, result: UInt16)
    case flowControlCredit(cid: UInt16, credits: UInt16)
    /// A code we do not know (answered with Command Reject).
    case unknown(code: UInt8, data: [UInt8])
  }

  public var identifier: UInt8
  public var body: Body

  public init(identifier: UInt8, body: Body) {
    self.identifier = identifier
    self.body = body
  }

  /// Command Reject reasons.
  public static let rejectNotUnderstood: UInt16 = 0x0000
  public static let rejectMTUExceeded: UInt16 = 0x0001
  public static let rejectInvalidCID: UInt16 = 0x0002

  /// LE Credit Based Connection results.
  public enum Result {
    public static let success: UInt16 = 0x0000
    public static let psmNotSupported: UInt16 = 0x0002
    public static let noResources: UInt16 = 0x0004
    public static let invalidSourceCID: UInt16 = 0x0009
    public static let sourceCIDAlreadyAllocated: UInt16 = 0x000A
    public static let unacceptableParameters: UInt16 = 0x000B

    static func name(_ result: UInt16) -> String {
      switch result {
      case 0x0000: "success"
      case 0x0002: "LE_PSM not supported"
      case 0x0004: "no resources available"
      case 0x0005: "insufficient authentication"
      case 0x0006: "insufficient authorization"
      case 0x0007: "insufficient encryption key size"
      case 0x0008: "insufficient encryption"
      case 0x0009: "invalid Source CID"
      case 0x000A: "Source CID already allocated"
      case 0x000B: "unacceptable parameters"
      default: "result 0x\(hex(result))"
      }
    }
  }

  /// The command bytes (code, identifier, length, data), without the L2CAP header.
  public var encoded: [UInt8] {
    var code: UInt8
    var d: [UInt8] = []
    switch body {
    case .commandReject(let reason, let data):
      code = 0x01
      d.appendLE(reason)
      d += data
    case .disconnectionRequest(let dcid, let scid):
      code = 0x06
      d.appendLE(dcid)
      d.appendLE(scid)
    case .disconnectionResponse(let dcid, let scid):
      code = 0x07
      d.appendLE(dcid)
      d.appendLE(scid)
    case .connectionParameterUpdateRequest(let a, let b, let c, let e):
      code = 0x12
      for v in [a, b, c, e] { d.appendLE(v) }
    case .connectionParameterUpdateResponse(let result):
      code = 0x13
      d.appendLE(result)
    case .connectionRequest(let psm, let scid, let mtu, let mps, let credits):
      code = 0x14
      for v in [psm, scid, mtu, mps, credits] { d.appendLE(v) }
    case .connectionResponse(let dcid, let mtu, let mps, let credits, let result):
      code = 0x15
      for v in [dcid, mtu, mps, credits, result] { d.appendLE(v) }
    case .flowControlCredit(let cid, let credits):
      code = 0x16
      d.appendLE(cid)
      d.appendLE(credits)
    case .unknown(let c, let data):
      code = c
      d = data
    }
    var out: [UInt8] = [code, identifier]
    out.appendLE(UInt16(d.count))
    return out + d
  }

  /// Decodes one signalling command; the length must match the data exactly
  /// and the data must have the size the code requires.
  public static func decode(_ bytes: [UInt8]) throws(HCIDecodeError) -> L2CAPSignal {
    var r = ByteReader(bytes, decoding: "L2CAP signalling command")
    let code = try r.u8()
    let identifier = try r.u8()
    let length = Int(try r.u16())
    guard r.remaining == length else {
      throw r.remaining < length
        ? .truncated("L2CAP signalling command", needed: 4 + length, got: bytes.count)
        : .oversized("L2CAP signalling command", expected: 4 + length, got: bytes.count)
    }
    guard identifier != 0 else {
      throw .invalid("L2CAP signalling command", reason: "identifier 0")
    }
    let body: Body
    switch code {
    case 0x01:
      body = .commandReject(reason: try r.u16(), data: try r.take(r.remaining))
    case 0x06: body = .disconnectionRequest(destinationCID: try r.u16(), sourceCID: try r.u16())
    case 0x07: body = .disconnectionResponse(destinationCID: try r.u16(), sourceCID: try r.u16())
    case 0x12:
      body = .connectionParameterUpdateRequest(
        intervalMin: try r.u16(), intervalMax: try r.u16(), latency: try r.u16(),
        timeout: try r.u16())
    case 0x13: body = .connectionParameterUpdateResponse(result: try r.u16())
    case 0x14:
      body = .connectionRequest(
        psm: try r.u16(), sourceCID: try r.u16(), mtu: try r.u16(), mps: try r.u16(),
        credits: try r.u16())
    case 0x15:
      body = .connectionResponse(
        destinationCID: try r.u16(), mtu: try r.u16(), mps: try r.u16(), credits: try r.u16(),
        result: try r.u16())
    case 0x16: body = .flowControlCredit(cid: try r.u16(), credits: try r.u16())
    default: body = .unknown(code: code, data: try r.take(r.remaining))
    }
    try r.expectEnd()
    return L2CAPSignal(identifier: identifier, body: body)
  }
}

/// An L2CAP basic frame: length (2), channel ID (2), payload.
public enum L2CAPFrame {
  public static let signallingCID: UInt16 = 0x0005
  public static let attributeCID: UInt16 = 0x0004
  public static let securityManagerCID: UInt16 = 0x0006
  /// LE dynamic channel IDs.
  public static let dynamicCIDs: ClosedRange<UInt16> = 0x0040...0x007F
  /// LE dynamic PSMs (SPSM).
  public static let dynamicPSMs: ClosedRange<UInt16> = 0x0080...0x00FF

  /// Header plus payload.
  public static func encode(cid: UInt16, payload: [UInt8]) -> [UInt8] {
    var out: [UInt8] = []
    out.reserveCapacity(4 + payload.count)
    out.appendLE(UInt16(payload.count))
    out.appendLE(cid)
    return out + payload
  }

  /// Splits a whole PDU into (CID, payload), checking the length.
  public static func decode(_ pdu: [UInt8]) throws(HCIDecodeError) -> (
    cid: UInt16, payload: [UInt8]
  ) {
    var r = ByteReader(pdu, decoding: "L2CAP frame")
    let length = Int(try r.u16())
    let cid = try r.u16()
    guard r.remaining == length else {
      throw r.remaining < length
        ? .truncated("L2CAP frame", needed: 4 + length, got: pdu.count)
        : .oversized("L2CAP frame", expected: 4 + length, got: pdu.count)
    }
    return (cid, try r.take(length))
  }
}
