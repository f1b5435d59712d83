/// Two upper-case hex digits.
package func hex(_ byte: UInt8) -> String {
  let digits = Array("0123456789ABCDEF")
  return String([digits[Int(byte >> 4)], digits[Int(byte & 15)]])
}

/// Four upper-case hex digits.
package func hex(_ value: UInt16) -> String { hex(UInt8(value >> 8)) + hex(UInt8(value & 0xFF)) }
