/// Reads little-endian fields from a packet, throwing instead of trapping
/// when the packet is too short.
package struct ByteReader {
  package let bytes: [UInt8]
  private(set) var offset: Int
  /// What is being decoded, for error messages.
  package let what: String

  package init(_ bytes: [UInt8], from offset: Int = 0, decoding what: String) {
    self.bytes = bytes
    self.offset = offset
    self.what = what
  }

  package var remaining: Int { bytes.count - offset }

  package mutating func u8() throws(HCIDecodeError) -> UInt8 {
    guard remaining >= 1 else { throw .truncated(what, needed: offset + 1, got: bytes.count) }
    defer { offset += 1 }
    return bytes[offset]
  }

  package mutating func u16() throws(HCIDecodeError) -> UInt16 {
    guard remaining >= 2 else { throw .truncated(what, needed: offset + 2, got: bytes.count) }
    defer { offset += 2 }
    return UInt16(bytes[offset]) | UInt16(bytes[offset + 1]) << 8
  }

  package mutating func take(_ count: Int) throws(HCIDecodeError) -> [UInt8] {
    guard count >= 0, remaining >= count else {
      throw .truncated(what, needed: offset + max(count, 0), got: bytes.count)
    }
    defer { offset += count }
    return Array(bytes[offset..<(offset + count)])
  }

  package mutating func address() throws(HCIDecodeError) -> BluetoothAddress {
    BluetoothAddress(littleEndian: try take(6))!
  }

  /// Fails if bytes are left over.
  package func expectEnd() throws(HCIDecodeError) {
    guard remaining == 0 else { throw .oversized(what, expected: offset, got: bytes.count) }
  }
}

extension Array where Element == UInt8 {
  package mutating func appendLE(_ value: UInt16) {
    append(UInt8(value & 0xFF))
    append(UInt8(value >> 8))
  }
  package mutating func appendLE(_ value: UInt64) {
    for shift in stride(from: 0, to: 64, by: 8) { append(UInt8((value >> UInt64(shift)) & 0xFF)) }
  }
}

/// Why a packet could not be decoded.
public enum HCIDecodeError: Error, CustomStringConvertible, Equatable {
  case truncated(String, needed: Int, got: Int)
  case oversized(String, expected: Int, got: Int)
  case invalid(String, reason: String)

  public var description: String {
    switch self {
    case .truncated(let what, let needed, let got):
      "malformed \(what): truncated (needs at least \(needed) bytes, got \(got))"
    case .oversized(let what, let expected, let got):
      "malformed \(what): \(got) bytes where \(expected) were expected"
    case .invalid(let what, let reason):
      "malformed \(what): \(reason)"
    }
  }
}
