/// Cuts a byte stream (TCP, UART) into whole H4 packets.
///
/// H4 framing: one packet-type byte, then the packet, whose header says its
/// length: command (0x01: opcode 2, length 1), ACL (0x02: handle 2, length 2),
/// SCO (0x03: handle 2, length 1), event (0x04: code 1, length 1), ISO (0x05:
/// handle 2, 14-bit length 2). An unknown type byte means the stream is out of
/// step; there is no way to resynchronise, so it is an error.
public struct H4Framer: Sendable {
  private var buffer: [UInt8] = []
  private var start = 0

  public init() {}

  /// Bytes buffered but not yet part of a whole packet.
  public var pendingByteCount: Int { buffer.count - start }

  /// Appends bytes read from the stream.
  public mutating func append<C: Collection>(_ bytes: C) where C.Element == UInt8 {
    if start > 0 && start == buffer.count {
      buffer.removeAll(keepingCapacity: true)
      start = 0
    } else if start > 4096 {
      buffer.removeSubrange(0..<start)
      start = 0
    }
    buffer.append(contentsOf: bytes)
  }

  /// The next whole packet (type byte first), nil if more bytes are needed.
  public mutating func next() throws(TransportError) -> [UInt8]? {
    let available = buffer.count - start
    guard available >= 1 else { return nil }
    let type = buffer[start]
    let headerLength: Int
    switch type {
    case 0x01, 0x03: headerLength = 3
    case 0x02, 0x05: headerLength = 4
    case 0x04: headerLength = 2
    default: throw TransportError.framing(type: type)
    }
    guard available >= 1 + headerLength else { return nil }
    let h = start + 1
    let payloadLength: Int
    switch type {
    case 0x01, 0x03: payloadLength = Int(buffer[h + 2])
    case 0x02: payloadLength = Int(buffer[h + 2]) | Int(buffer[h + 3]) << 8
    case 0x05: payloadLength = (Int(buffer[h + 2]) | Int(buffer[h + 3]) << 8) & 0x3FFF
    default: payloadLength = Int(buffer[h + 1])
    }
    let total = 1 + headerLength + payloadLength
    guard available >= total else { return nil }
    let packet = Array(buffer[start..<(start + total)])
    start += total
    return packet
  }
}
