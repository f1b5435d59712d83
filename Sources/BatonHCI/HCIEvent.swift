import BatonRadio
import BatonSystem

/// The HCI events baton understands, decoded from H4 event packets
/// (0x04, event code, parameter length, parameters) and encodable again (for
/// round-trip tests). Anything else decodes to `.other`. Layouts:
/// Sources/BatonHCI/HCI.docc/HCI.md.
public enum HCIEvent: Equatable, Sendable {
  case disconnectionComplete(status: HCIStatus, handle: UInt16, reason: HCIStatus)
  case commandComplete(numCommandPackets: UInt8, opcode: UInt16, returnParameters: [UInt8])
  case commandStatus(status: HCIStatus, numCommandPackets: UInt8, opcode: UInt16)
  case numberOfCompletedPackets([(handle: UInt16, count: UInt16)])
  case leConnectionComplete(ConnectionComplete)
  case leConnectionUpdateComplete(ConnectionUpdateComplete)
  case leAdvertisingReports([AdvertisingReport])
  case other(code: UInt8, parameters: [UInt8])

  /// LE Connection Complete (0x01) and LE Enhanced Connection Complete (0x0A).
  public struct ConnectionComplete: Equatable, Sendable {
    public var enhanced: Bool
    public var status: HCIStatus
    public var handle: UInt16
    /// 0 central, 1 peripheral.
    public var role: UInt8
    public var peerAddressType: AddressType
    public var peerAddress: BluetoothAddress
    public var localResolvablePrivateAddress = BluetoothAddress(littleEndian: [0, 0, 0, 0, 0, 0])!
    public var peerResolvablePrivateAddress = BluetoothAddress(littleEndian: [0, 0, 0, 0, 0, 0])!
    public var interval: UInt16
    public var latency: UInt16
    public var supervisionTimeout: UInt16
    public var clockAccuracy: UInt8
  }

  /// LE Connection Update Complete (0x03): the parameters a connection now
  /// runs with, after either side's controller changed them.
  public struct ConnectionUpdateComplete: Equatable, Sendable {
    public var status: HCIStatus
    public var handle: UInt16
    /// 1.25 ms units.
    public var interval: UInt16
    public var latency: UInt16
    /// 10 ms units.
    public var supervisionTimeout: UInt16
    public init(
      status: HCIStatus, handle: UInt16, interval: UInt16, latency: UInt16,
      supervisionTimeout: UInt16
    ) {
      self.status = status
      self.handle = handle
      self.interval = interval
      self.latency = latency
      self.supervisionTimeout = supervisionTimeout
    }
  }

  public static func == (a: HCIEvent, b: HCIEvent) -> Bool { a.encoded == b.encoded }

  /// Decodes one H4 event packet. Throws on anything truncated, oversized or
  /// inconsistent; never traps.
  public static func decode(_ packet: [UInt8]) throws(HCIDecodeError) -> HCIEvent {
    var r = ByteReader(packet, decoding: "HCI event")
    guard try r.u8() == 0x04 else { throw .invalid("HCI event", reason: "not an event packet") }
    let code = try r.u8()
    let length = Int(try r.u8())
    guard r.remaining == length else {
      throw r.remaining < length
        ? .truncated("HCI event 0x\(hex(code))", needed: 3 + length, got: packet.count)
        : .oversized("HCI event 0x\(hex(code))", expected: 3 + length, got: packet.count)
    }
    r = ByteReader(Array(packet[3...]), decoding: eventName(code))
    let event: HCIEvent
    switch code {
    case 0x05:
      event = .disconnectionComplete(
        status: HCIStatus(rawValue: try r.u8()), handle: try r.u16() & 0x0FFF,
        reason: HCIStatus(rawValue: try r.u8()))
    case 0x0E:
      let n = try r.u8()
      let opcode = try r.u16()
      event = .commandComplete(
        numCommandPackets: n, opcode: opcode, returnParameters: try r.take(r.remaining))
    case 0x0F:
      event = .commandStatus(
        status: HCIStatus(rawValue: try r.u8()), numCommandPackets: try r.u8(), opcode: try r.u16())
    case 0x13:
      let count = Int(try r.u8())
      var entries: [(handle: UInt16, count: UInt16)] = []
      for _ in 0..<count { entries.append((try r.u16() & 0x0FFF, try r.u16())) }
      event = .numberOfCompletedPackets(entries)
    case 0x3E:
      let sub = try r.u8()
      switch sub {
      case 0x01, 0x0A:
        r = ByteReader(
          r.bytes, from: 1,
          decoding: sub == 1 ? "LE Connection Complete" : "LE Enhanced Connection Complete")
        let status = HCIStatus(rawValue: try r.u8())
        let handle = try r.u16() & 0x0FFF
        let role = try r.u8()
        let typeByte = try r.u8()
        let peer = try r.address()
        var local = BluetoothAddress(littleEndian: [0, 0, 0, 0, 0, 0])!
        var peerRPA = local
        if sub == 0x0A {
          local = try r.address()
          peerRPA = try r.address()
        }
        // A failed connection may carry junk in the other fields.
        guard let type = AddressType(rawValue: typeByte) ?? (status == .success ? nil : .public)
        else {
          throw .invalid("LE Connection Complete", reason: "peer address type 0x\(hex(typeByte))")
        }
        event = .leConnectionComplete(
          ConnectionComplete(
            enhanced: sub == 0x0A, status: status, handle: handle, role: role,
            peerAddressType: type,
            peerAddress: peer, localResolvablePrivateAddress: local,
            peerResolvablePrivateAddress: peerRPA,
            interval: try r.u16(), latency: try r.u16(), supervisionTimeout: try r.u16(),
            clockAccuracy: try r.u8()))
      case 0x03:
        r = ByteReader(r.bytes, from: 1, decoding: "LE Connection Update Complete")
        event = .leConnectionUpdateComplete(
          ConnectionUpdateComplete(
            status: HCIStatus(rawValue: try r.u8()), handle: try r.u16() & 0x0FFF,
            interval: try r.u16(), latency: try r.u16(), supervisionTimeout: try r.u16()))
      case 0x02:
        r = ByteReader(r.bytes, from: 1, decoding: "LE Advertising Report")
        let n = Int(try r.u8())
        guard n >= 1 else { throw .invalid("LE Advertising Report", reason: "zero reports") }
        var reports: [AdvertisingReport] = []
        for _ in 0..<n {
          let type = try r.u8()
          let addressType = try r.u8()
          let address = try r.address()
          let dataLength = Int(try r.u8())
          guard dataLength <= 31 else {
            throw .invalid("LE Advertising Report", reason: "data length \(dataLength) > 31")
          }
          let data = try r.take(dataLength)
          let rssi = Int8(bitPattern: try r.u8())
          reports.append(
            AdvertisingReport(
              address: address, addressType: AddressType(rawValue: addressType & 0x03)!, data: data,
              rssi: Int(rssi), eventType: UInt16(type), extended: false))
        }
        event = .leAdvertisingReports(reports)
      case 0x0D:
        r = ByteReader(r.bytes, from: 1, decoding: "LE Extended Advertising Report")
        let n = Int(try r.u8())
        guard n >= 1 else {
          throw .invalid("LE Extended Advertising Report", reason: "zero reports")
        }
        var reports: [AdvertisingReport] = []
        for _ in 0..<n {
          let type = try r.u16()
          let addressType = try r.u8()
          let address = try r.address()
          _ = try r.take(4)  // primary PHY, secondary PHY, SID, TX power
          let rssi = Int8(bitPattern: try r.u8())
          _ = try r.take(9)  // periodic interval (2), direct address type (1), direct address (6)
          let dataLength = Int(try r.u8())
          guard dataLength <= 229 else {
            throw .invalid(
              "LE Extended Advertising Report", reason: "data length \(dataLength) > 229")
          }
          let data = try r.take(dataLength)
          reports.append(
            AdvertisingReport(
              address: address, addressType: AddressType(rawValue: addressType & 0x03)!, data: data,
              rssi: Int(rssi), eventType: type, extended: true))
        }
        event = .leAdvertisingReports(reports)
      default:
        event = .other(code: code, parameters: r.bytes)
        return event
      }
    default:
      return .other(code: code, parameters: r.bytes)
    }
    try r.expectEnd()
    return event
  }

  /// The whole H4 packet.
  public var encoded: [UInt8] {
    var code: UInt8
    var p: [UInt8] = []
    switch self {
    case .disconnectionComplete(let status, let handle, let reason):
      code = 0x05
      p.append(status.rawValue)
      p.appendLE(handle)
      p.append(reason.rawValue)
    case .commandComplete(let n, let opcode, let returned):
      code = 0x0E
      p.append(n)
      p.appendLE(opcode)
      p += returned
    case .commandStatus(let status, let n, let opcode):
      code = 0x0F
      p += [status.rawValue, n]
      p.appendLE(opcode)
    case .numberOfCompletedPackets(let entries):
      code = 0x13
      p.append(UInt8(entries.count))
      for e in entries {
        p.appendLE(e.handle)
        p.appendLE(e.count)
      }
    case .leConnectionComplete(let c):
      code = 0x3E
      p.append(c.enhanced ? 0x0A : 0x01)
      p.append(c.status.rawValue)
      p.appendLE(c.handle)
      p += [c.role, c.peerAddressType.rawValue]
      p += c.peerAddress.bytes
      if c.enhanced {
        p += c.localResolvablePrivateAddress.bytes + c.peerResolvablePrivateAddress.bytes
      }
      p.appendLE(c.interval)
      p.appendLE(c.latency)
      p.appendLE(c.supervisionTimeout)
      p.append(c.clockAccuracy)
    case .leConnectionUpdateComplete(let u):
      code = 0x3E
      p += [0x03, u.status.rawValue]
      for v in [u.handle, u.interval, u.latency, u.supervisionTimeout] { p.appendLE(v) }
    case .leAdvertisingReports(let reports):
      code = 0x3E
      let extended = reports.first?.extended ?? false
      p.append(extended ? 0x0D : 0x02)
      p.append(UInt8(reports.count))
      for report in reports {
        if extended {
          p.appendLE(report.eventType)
          p.append(report.addressType.rawValue)
          p += report.address.bytes
          p += [0x01, 0x00, 0xFF, 0x7F, UInt8(bitPattern: Int8(clamping: report.rssi))]
          p += [0, 0, 0, 0, 0, 0, 0, 0, 0]
          p.append(UInt8(report.data.count))
          p += report.data
        } else {
          p.append(UInt8(report.eventType & 0xFF))
          p.append(report.addressType.rawValue)
          p += report.address.bytes
          p.append(UInt8(report.data.count))
          p += report.data
          p.append(UInt8(bitPattern: Int8(clamping: report.rssi)))
        }
      }
    case .other(let c, let parameters):
      code = c
      p = parameters
    }
    return [0x04, code, UInt8(p.count)] + p
  }

  static func eventName(_ code: UInt8) -> String {
    switch code {
    case 0x05: "Disconnection Complete"
    case 0x0E: "Command Complete"
    case 0x0F: "Command Status"
    case 0x13: "Number Of Completed Packets"
    case 0x3E: "LE Meta event"
    default: "HCI event 0x\(hex(code))"
    }
  }
}
