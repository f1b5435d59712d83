import BatonSystem

/// One HCI ACL data packet: 0x02, handle (12 bits) with packet-boundary
/// (2 bits) and broadcast (2 bits) flags, data length (2), data.
public struct ACLPacket: Equatable, Sendable {
  /// Packet boundary flag values.
  public enum Boundary: UInt8, Sendable {
    /// First fragment, non-automatically-flushable (host to controller, LE).
    case firstNonFlushable = 0b00
    /// A continuing fragment.
    case continuing = 0b01
    /// First fragment, automatically flushable (controller to host).
    case firstFlushable = 0b10
    /// A complete L2CAP PDU (not used on LE).
    case complete = 0b11
  }

  public var handle: UInt16
  public var boundary: Boundary
  public var broadcast: UInt8
  public var data: [UInt8]

  public init(handle: UInt16, boundary: Boundary, broadcast: UInt8 = 0, data: [UInt8]) {
    self.handle = handle & 0x0FFF
    self.boundary = boundary
    self.broadcast = broadcast & 0x03
    self.data = data
  }

  /// The whole H4 packet.
  public var encoded: [UInt8] {
    var out: [UInt8] = [0x02]
    out.reserveCapacity(5 + data.count)
    out.appendLE(handle | UInt16(boundary.rawValue) << 12 | UInt16(broadcast) << 14)
    out.appendLE(UInt16(data.count))
    return out + data
  }

  /// Decodes an H4 ACL packet; the data length must match exactly.
  public static func decode(_ packet: [UInt8]) throws(HCIDecodeError) -> ACLPacket {
    var r = ByteReader(packet, decoding: "ACL packet")
    guard try r.u8() == 0x02 else { throw .invalid("ACL packet", reason: "not an ACL packet") }
    let header = try r.u16()
    let length = Int(try r.u16())
    guard r.remaining == length else {
      throw r.remaining < length
        ? .truncated("ACL packet", needed: 5 + length, got: packet.count)
        : .oversized("ACL packet", expected: 5 + length, got: packet.count)
    }
    return ACLPacket(
      handle: header & 0x0FFF, boundary: Boundary(rawValue: UInt8((header >> 12) & 3))!,
      broadcast: UInt8(header >> 14), data: try r.take(length))
  }

  /// Splits one L2CAP PDU into ACL packets of at most `maximumLength` data bytes.
  public static func fragments(of pdu: [UInt8], handle: UInt16, maximumLength: Int) -> [ACLPacket] {
    let size = max(1, maximumLength)
    var out: [ACLPacket] = []
    var offset = 0
    repeat {
      let end = min(pdu.count, offset + size)
      out.append(
        ACLPacket(
          handle: handle, boundary: offset == 0 ? .firstNonFlushable : .continuing,
          data: Array(pdu[offset..<end])))
      offset = end
    } while offset < pdu.count
    return out
  }
}

/// Reassembles L2CAP PDUs from ACL fragments, per connection handle. A
/// fragment longer than the controller's buffer size is accepted (bumble
/// sends those); a PDU longer than its own L2CAP length, a continuation with
/// no start, or a start while one is still incomplete is dropped with an error.
/// After a continuation with no start, the rest of that PDU's continuations
/// are dropped quietly (counted) until the next start: one error per gap.
public struct ACLReassembler: Sendable {
  private var partial: [UInt16: [UInt8]] = [:]
  /// Handles whose current PDU lost its start: continuations are skipped.
  private var skipping: Set<UInt16> = []
  /// Incomplete PDUs dropped because a new one started on the same handle.
  public private(set) var droppedPartialCount = 0
  /// Continuations dropped quietly after a reported gap.
  public private(set) var skippedFragmentCount = 0

  public init() {}

  /// Feeds one packet; returns a whole PDU (basic L2CAP header included)
  /// when one is complete, nil when more fragments are needed.
  public mutating func feed(_ packet: ACLPacket) throws(HCIDecodeError) -> [UInt8]? {
    var buffer: [UInt8]
    switch packet.boundary {
    case .continuing:
      guard let existing = partial[packet.handle] else {
        if skipping.contains(packet.handle) {
          skippedFragmentCount += 1
          return nil
        }
        skipping.insert(packet.handle)
        throw .invalid(
          "ACL packet",
          reason: "continuing fragment with no start on handle 0x\(hex(packet.handle))")
      }
      buffer = existing + packet.data
    default:
      // A new start drops any incomplete PDU before it (counted, the caller logs).
      if partial.removeValue(forKey: packet.handle) != nil { droppedPartialCount += 1 }
      skipping.remove(packet.handle)
      buffer = packet.data
    }
    partial[packet.handle] = buffer
    return try complete(packet.handle)
  }

  private mutating func complete(_ handle: UInt16) throws(HCIDecodeError) -> [UInt8]? {
    guard let buffer = partial[handle], buffer.count >= 2 else { return nil }
    let total = 4 + (Int(buffer[0]) | Int(buffer[1]) << 8)
    if buffer.count < total { return nil }
    partial.removeValue(forKey: handle)
    guard buffer.count == total else {
      skipping.insert(handle)
      throw .oversized("L2CAP PDU", expected: total, got: buffer.count)
    }
    return buffer
  }

  /// Forgets a handle's partial PDU (the connection ended).
  public mutating func reset(handle: UInt16) {
    partial.removeValue(forKey: handle)
    skipping.remove(handle)
  }
}
