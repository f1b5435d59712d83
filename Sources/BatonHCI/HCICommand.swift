import BatonRadio
import BatonSystem

/// The HCI commands baton sends, as values that encode to (and decode from)
/// H4 command packets: 0x01, opcode (2, LE), parameter length (1), parameters.
/// Layouts: Sources/BatonHCI/HCI.docc/HCI.md.
public enum HCICommand: Equatable, Sendable, CustomStringConvertible {
  case reset
  case setEventMask(UInt64)
  case readLocalVersion
  case readLocalSupportedFeatures
  case readBufferSize
  case readBDAddr
  case leSetEventMask(UInt64)
  case leReadBufferSize
  case leReadLocalSupportedFeatures
  case leSetRandomAddress(BluetoothAddress)
  case leSetAdvertisingParameters(AdvertisingParameters)
  case leSetAdvertisingData([UInt8])
  case leSetAdvertisingEnable(Bool)
  case leSetScanParameters(ScanParameters)
  case leSetScanEnable(Bool, filterDuplicates: Bool)
  case leCreateConnection(CreateConnectionParameters)
  case leCreateConnectionCancel
  case leConnectionUpdate(handle: UInt16, ConnectionUpdateParameters)
  case disconnect(handle: UInt16, reason: HCIStatus)

  /// LE Set Advertising Parameters.
  public struct AdvertisingParameters: Equatable, Sendable {
    public var intervalMin: UInt16
    public var intervalMax: UInt16
    /// 0x00 ADV_IND.
    public var type: UInt8 = 0x00
    public var ownAddressType: AddressType = .random
    public var peerAddressType: AddressType = .public
    public var peerAddress = BluetoothAddress(littleEndian: [0, 0, 0, 0, 0, 0])!
    /// All three primary channels.
    public var channelMap: UInt8 = 0x07
    public var filterPolicy: UInt8 = 0x00
    public init(intervalMin: UInt16, intervalMax: UInt16) {
      self.intervalMin = intervalMin
      self.intervalMax = intervalMax
    }
  }

  /// LE Set Scan Parameters.
  public struct ScanParameters: Equatable, Sendable {
    /// 0x00 passive, 0x01 active.
    public var type: UInt8 = 0x00
    public var interval: UInt16 = 0x0010
    public var window: UInt16 = 0x0010
    public var ownAddressType: AddressType = .random
    public var filterPolicy: UInt8 = 0x00
    public init() {}
  }

  /// LE Create Connection.
  public struct CreateConnectionParameters: Equatable, Sendable {
    public var scanInterval: UInt16 = 0x0010
    public var scanWindow: UInt16 = 0x0010
    public var initiatorFilterPolicy: UInt8 = 0x00
    public var peerAddressType: AddressType
    public var peerAddress: BluetoothAddress
    public var ownAddressType: AddressType = .random
    /// 1.25 ms units: 30 to 50 ms.
    public var connectionIntervalMin: UInt16 = 0x0018
    public var connectionIntervalMax: UInt16 = 0x0028
    public var maxLatency: UInt16 = 0
    /// 10 ms units: 4 s.
    public var supervisionTimeout: UInt16 = 400
    public var minCELength: UInt16 = 0
    public var maxCELength: UInt16 = 0
    public init(peerAddressType: AddressType, peerAddress: BluetoothAddress) {
      self.peerAddressType = peerAddressType
      self.peerAddress = peerAddress
    }
  }

  /// LE Connection Update: a central's new parameters for a connection.
  public struct ConnectionUpdateParameters: Equatable, Sendable {
    /// 1.25 ms units.
    public var intervalMin: UInt16
    public var intervalMax: UInt16
    public var maxLatency: UInt16 = 0
    /// 10 ms units: 4 s.
    public var supervisionTimeout: UInt16 = 400
    public var minCELength: UInt16 = 0
    public var maxCELength: UInt16 = 0
    public init(intervalMin: UInt16, intervalMax: UInt16) {
      self.intervalMin = intervalMin
      self.intervalMax = intervalMax
    }
  }

  public var opcode: UInt16 {
    switch self {
    case .reset: 0x0C03
    case .setEventMask: 0x0C01
    case .readLocalVersion: 0x1001
    case .readLocalSupportedFeatures: 0x1003
    case .readBufferSize: 0x1005
    case .readBDAddr: 0x1009
    case .leSetEventMask: 0x2001
    case .leReadBufferSize: 0x2002
    case .leReadLocalSupportedFeatures: 0x2003
    case .leSetRandomAddress: 0x2005
    case .leSetAdvertisingParameters: 0x2006
    case .leSetAdvertisingData: 0x2008
    case .leSetAdvertisingEnable: 0x200A
    case .leSetScanParameters: 0x200B
    case .leSetScanEnable: 0x200C
    case .leCreateConnection: 0x200D
    case .leCreateConnectionCancel: 0x200E
    case .leConnectionUpdate: 0x2013
    case .disconnect: 0x0406
    }
  }

  /// The command's name in the spec's words, for logs and errors.
  public var name: String { HCICommand.name(of: opcode) }

  public var description: String { name }

  static func name(of opcode: UInt16) -> String {
    switch opcode {
    case 0x0C03: "Reset"
    case 0x0C01: "Set Event Mask"
    case 0x1001: "Read Local Version Information"
    case 0x1003: "Read Local Supported Features"
    case 0x1005: "Read Buffer Size"
    case 0x1009: "Read BD_ADDR"
    case 0x2001: "LE Set Event Mask"
    case 0x2002: "LE Read Buffer Size"
    case 0x2003: "LE Read Local Supported Features"
    case 0x2005: "LE Set Random Address"
    case 0x2006: "LE Set Advertising Parameters"
    case 0x2008: "LE Set Advertising Data"
    case 0x200A: "LE Set Advertising Enable"
    case 0x200B: "LE Set Scan Parameters"
    case 0x200C: "LE Set Scan Enable"
    case 0x200D: "LE Create Connection"
    case 0x200E: "LE Create Connection Cancel"
    case 0x2013: "LE Connection Update"
    case 0x0406: "Disconnect"
    default: "command 0x\(hex(opcode))"
    }
  }

  /// The parameters, without the header.
  public var parameters: [UInt8] {
    var p: [UInt8] = []
    switch self {
    case .reset, .readLocalVersion, .readLocalSupportedFeatures, .readBufferSize, .readBDAddr,
      .leReadBufferSize, .leReadLocalSupportedFeatures, .leCreateConnectionCancel:
      break
    case .setEventMask(let mask), .leSetEventMask(let mask):
      p.appendLE(mask)
    case .leSetRandomAddress(let address):
      p += address.bytes
    case .leSetAdvertisingParameters(let a):
      p.appendLE(a.intervalMin)
      p.appendLE(a.intervalMax)
      p += [a.type, a.ownAddressType.rawValue, a.peerAddressType.rawValue]
      p += a.peerAddress.bytes
      p += [a.channelMap, a.filterPolicy]
    case .leSetAdvertisingData(let data):
      // Always 32 bytes: length, then the data padded with zeros.
      p.append(UInt8(min(data.count, 31)))
      p += data.prefix(31)
      p += [UInt8](repeating: 0, count: 31 - min(data.count, 31))
    case .leSetAdvertisingEnable(let on):
      p.append(on ? 1 : 0)
    case .leSetScanParameters(let s):
      p.append(s.type)
      p.appendLE(s.interval)
      p.appendLE(s.window)
      p += [s.ownAddressType.rawValue, s.filterPolicy]
    case .leSetScanEnable(let on, let filter):
      p += [on ? 1 : 0, filter ? 1 : 0]
    case .leCreateConnection(let c):
      p.appendLE(c.scanInterval)
      p.appendLE(c.scanWindow)
      p += [c.initiatorFilterPolicy, c.peerAddressType.rawValue]
      p += c.peerAddress.bytes
      p.append(c.ownAddressType.rawValue)
      for v in [
        c.connectionIntervalMin, c.connectionIntervalMax, c.maxLatency, c.supervisionTimeout,
        c.minCELength, c.maxCELength,
      ] { p.appendLE(v) }
    case .leConnectionUpdate(let handle, let u):
      p.appendLE(handle)
      for v in [
        u.intervalMin, u.intervalMax, u.maxLatency, u.supervisionTimeout, u.minCELength,
        u.maxCELength,
      ] { p.appendLE(v) }
    case .disconnect(let handle, let reason):
      p.appendLE(handle)
      p.append(reason.rawValue)
    }
    return p
  }

  /// The whole H4 packet.
  public var encoded: [UInt8] {
    let p = parameters
    var out: [UInt8] = [0x01]
    out.appendLE(opcode)
    out.append(UInt8(p.count))
    return out + p
  }

  /// Decodes an H4 command packet (for tests and the snoop log reader).
  public static func decode(_ packet: [UInt8]) throws(HCIDecodeError) -> HCICommand {
    var r = ByteReader(packet, decoding: "HCI command")
    guard try r.u8() == 0x01 else { throw .invalid("HCI command", reason: "not a command packet") }
    let opcode = try r.u16()
    let length = Int(try r.u8())
    guard r.remaining == length else {
      throw r.remaining < length
        ? .truncated("HCI command", needed: 4 + length, got: packet.count)
        : .oversized("HCI command", expected: 4 + length, got: packet.count)
    }
    func addressType(_ v: UInt8) throws(HCIDecodeError) -> AddressType {
      guard let t = AddressType(rawValue: v) else {
        throw .invalid("HCI command", reason: "address type 0x\(hex(v))")
      }
      return t
    }
    let command: HCICommand
    switch opcode {
    case 0x0C03: command = .reset
    case 0x1001: command = .readLocalVersion
    case 0x1003: command = .readLocalSupportedFeatures
    case 0x1005: command = .readBufferSize
    case 0x1009: command = .readBDAddr
    case 0x2002: command = .leReadBufferSize
    case 0x2003: command = .leReadLocalSupportedFeatures
    case 0x200E: command = .leCreateConnectionCancel
    case 0x0C01, 0x2001:
      var mask: UInt64 = 0
      for i in 0..<8 { mask |= UInt64(try r.u8()) << UInt64(8 * i) }
      command = opcode == 0x0C01 ? .setEventMask(mask) : .leSetEventMask(mask)
    case 0x2005: command = .leSetRandomAddress(try r.address())
    case 0x2006:
      var a = AdvertisingParameters(intervalMin: try r.u16(), intervalMax: try r.u16())
      a.type = try r.u8()
      a.ownAddressType = try addressType(try r.u8())
      a.peerAddressType = try addressType(try r.u8())
      a.peerAddress = try r.address()
      a.channelMap = try r.u8()
      a.filterPolicy = try r.u8()
      command = .leSetAdvertisingParameters(a)
    case 0x2008:
      let n = Int(try r.u8())
      guard n <= 31 else {
        throw .invalid("HCI command", reason: "advertising data length \(n) > 31")
      }
      let data = try r.take(31)
      command = .leSetAdvertisingData(Array(data.prefix(n)))
    case 0x200A: command = .leSetAdvertisingEnable(try r.u8() != 0)
    case 0x200B:
      var s = ScanParameters()
      s.type = try r.u8()
      s.interval = try r.u16()
      s.window = try r.u16()
      s.ownAddressType = try addressType(try r.u8())
      s.filterPolicy = try r.u8()
      command = .leSetScanParameters(s)
    case 0x200C: command = .leSetScanEnable(try r.u8() != 0, filterDuplicates: try r.u8() != 0)
    case 0x200D:
      let scanInterval = try r.u16()
      let scanWindow = try r.u16()
      let policy = try r.u8()
      let peerType = try addressType(try r.u8())
      var c = CreateConnectionParameters(peerAddressType: peerType, peerAddress: try r.address())
      c.scanInterval = scanInterval
      c.scanWindow = scanWindow
      c.initiatorFilterPolicy = policy
      c.ownAddressType = try addressType(try r.u8())
      c.connectionIntervalMin = try r.u16()
      c.connectionIntervalMax = try r.u16()
      c.maxLatency = try r.u16()
      c.supervisionTimeout = try r.u16()
      c.minCELength = try r.u16()
      c.maxCELength = try r.u16()
      command = .leCreateConnection(c)
    case 0x2013:
      let handle = try r.u16()
      var u = ConnectionUpdateParameters(intervalMin: try r.u16(), intervalMax: try r.u16())
      u.maxLatency = try r.u16()
      u.supervisionTimeout = try r.u16()
      u.minCELength = try r.u16()
      u.maxCELength = try r.u16()
      command = .leConnectionUpdate(handle: handle, u)
    case 0x0406:
      command = .disconnect(handle: try r.u16(), reason: HCIStatus(rawValue: try r.u8()))
    default:
      throw .invalid("HCI command", reason: "unknown opcode 0x\(hex(opcode))")
    }
    try r.expectEnd()
    return command
  }
}
