/// Reads little-endian fields from bytes that came from outside (an HCI
/// packet, a handoff message), throwing instead of trapping when they run
/// out. The one byte decoder of baton: each layer reads through it with its
/// own error type (`ByteReader<HCIDecodeError>`, `ByteReader<WireError>`),
/// which says what was being decoded.
package struct ByteReader<Failure: ByteDecodingError> {
  package let bytes: [UInt8]
  package private(set) var offset: Int
  /// What is being decoded, for error messages.
  package let context: String

  package init(_ bytes: [UInt8], from offset: Int = 0, context: String = "") {
    self.bytes = bytes
    self.offset = offset
    self.context = context
  }

  package var remaining: Int { bytes.count - offset }
  package var isAtEnd: Bool { offset == bytes.count }

  /// The next `count` bytes.
  package mutating func take(_ count: Int) throws(Failure) -> [UInt8] {
    guard count >= 0, remaining >= count else {
      throw .truncated(context, wanted: count, at: offset, of: bytes.count)
    }
    defer { offset += count }
    return Array(bytes[offset..<(offset + count)])
  }

  package mutating func u8() throws(Failure) -> UInt8 {
    guard remaining >= 1 else { throw .truncated(context, wanted: 1, at: offset, of: bytes.count) }
    defer { offset += 1 }
    return bytes[offset]
  }

  package mutating func u16() throws(Failure) -> UInt16 { try integer(UInt16.self) }
  package mutating func u32() throws(Failure) -> UInt32 { try integer(UInt32.self) }
  package mutating func u64() throws(Failure) -> UInt64 { try integer(UInt64.self) }

  private mutating func integer<T: FixedWidthInteger & UnsignedInteger>(_: T.Type) throws(Failure)
    -> T
  {
    let size = MemoryLayout<T>.size
    guard remaining >= size else {
      throw .truncated(context, wanted: size, at: offset, of: bytes.count)
    }
    var value: T = 0
    for index in 0..<size { value |= T(bytes[offset + index]) << (8 * index) }
    offset += size
    return value
  }

  /// Fails if bytes are left over.
  package func expectEnd() throws(Failure) {
    guard isAtEnd else { throw .trailing(context, at: offset, of: bytes.count) }
  }
}

/// A layer's decoding error, as `ByteReader` makes it.
package protocol ByteDecodingError: Error {
  /// `wanted` bytes were needed at `offset` of `count` (`wanted` may be
  /// negative: a length field that made no sense).
  static func truncated(_ context: String, wanted: Int, at offset: Int, of count: Int) -> Self
  /// Bytes were left over after `offset` of `count`.
  static func trailing(_ context: String, at offset: Int, of count: Int) -> Self
}
