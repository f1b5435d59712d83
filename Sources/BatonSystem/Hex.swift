/// Two upper-case hex digits.
package func hex(_ byte: UInt8) -> String {
  let digits = Array("0123456789ABCDEF")
  return String([digits[Int(byte >> 4)], digits[Int(byte & 15)]])
}

/// Four upper-case hex digits.
package func hex(_ value: UInt16) -> String { hex(UInt8(value >> 8)) + hex(UInt8(value & 0xFF)) }

/// The six bytes of a device address printed "AA:BB:CC:DD:EE:FF" (most
/// significant first, two hex digits each), least significant first as on
/// the air; nil for any other text.
package func littleEndianBytes(printedAddress text: String) -> [UInt8]? {
  let parts = text.split(separator: ":", omittingEmptySubsequences: false)
  guard parts.count == 6 else { return nil }
  var bytes: [UInt8] = []
  for part in parts.reversed() {
    guard part.count == 2, let byte = UInt8(part, radix: 16) else { return nil }
    bytes.append(byte)
  }
  return bytes
}
