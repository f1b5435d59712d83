/// Appends little-endian fields: the encoder that goes with `ByteReader`
/// (handoff messages build on it; HCI packets use the `appendLE` underneath).
package struct ByteWriter {
  package private(set) var bytes: [UInt8] = []

  package init() {}

  package mutating func u8(_ v: UInt8) { bytes.append(v) }
  package mutating func u16(_ v: UInt16) { bytes.appendLE(v) }
  package mutating func u32(_ v: UInt32) { bytes.appendLE(v) }
  package mutating func u64(_ v: UInt64) { bytes.appendLE(v) }
  package mutating func raw<C: Collection>(_ v: C) where C.Element == UInt8 { bytes += v }
}

extension Array where Element == UInt8 {
  /// Appends `value` least significant byte first.
  package mutating func appendLE<T: FixedWidthInteger & UnsignedInteger>(_ value: T) {
    for index in 0..<MemoryLayout<T>.size {
      append(UInt8(truncatingIfNeeded: value >> (8 * index)))
    }
  }
}
