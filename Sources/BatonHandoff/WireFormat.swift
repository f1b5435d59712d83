/// Why a handoff message could not be decoded.
public struct WireError: Error, CustomStringConvertible, Equatable {
  public let reason: String
  public init(_ reason: String) { self.reason = reason }
  public var description: String { "malformed handoff message: \(reason)" }
}

/// Appends little-endian integers and length-prefixed fields (PROTOCOL.md, "Encoding").
struct ByteWriter {
  private(set) var bytes: [UInt8] = []

  mutating func u8(_ v: UInt8) { bytes.append(v) }
  mutating func u16(_ v: UInt16) { withUnsafeBytes(of: v.littleEndian) { bytes += $0 } }
  mutating func u32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { bytes += $0 } }
  mutating func u64(_ v: UInt64) { withUnsafeBytes(of: v.littleEndian) { bytes += $0 } }
  mutating func raw<C: Collection>(_ v: C) where C.Element == UInt8 { bytes += v }
  /// `u16` length then UTF-8 bytes, at most `max` of them: a longer string is
  /// cut at a character boundary, so what is written always passes a reader
  /// with the same limit. Fields that name something (types, paths) are
  /// checked by their callers so that this never cuts them.
  mutating func string(_ s: String, max: Int = Int(UInt16.max)) {
    let fitted = s.prefix(utf8Bytes: Swift.min(max, Int(UInt16.max)))
    u16(UInt16(fitted.utf8.count))
    raw(fitted.utf8)
  }
  /// `u32` length then the bytes.
  mutating func blob(_ v: [UInt8]) {
    u32(UInt32(clamping: v.count))
    raw(v)
  }
}

/// Reads what `ByteWriter` wrote; every read checks bounds and throws `WireError`.
struct WireReader {
  private let bytes: [UInt8]
  private(set) var offset = 0

  init(_ bytes: [UInt8]) { self.bytes = bytes }

  var remaining: Int { bytes.count - offset }
  var isAtEnd: Bool { offset == bytes.count }

  mutating func raw(_ count: Int) throws(WireError) -> [UInt8] {
    guard count >= 0, remaining >= count else {
      throw WireError("needed \(count) bytes at offset \(offset), have \(remaining)")
    }
    defer { offset += count }
    return Array(bytes[offset..<offset + count])
  }
  mutating func u8() throws(WireError) -> UInt8 { try raw(1)[0] }
  mutating func u16() throws(WireError) -> UInt16 {
    let b = try raw(2)
    return UInt16(b[0]) | UInt16(b[1]) << 8
  }
  mutating func u32() throws(WireError) -> UInt32 {
    let b = try raw(4)
    return b.reversed().reduce(0) { $0 << 8 | UInt32($1) }
  }
  mutating func u64() throws(WireError) -> UInt64 {
    let b = try raw(8)
    return b.reversed().reduce(0) { $0 << 8 | UInt64($1) }
  }
  mutating func string(max: Int = Int(UInt16.max)) throws(WireError) -> String {
    let count = Int(try u16())
    guard count <= max else { throw WireError("string of \(count) bytes exceeds \(max)") }
    guard let s = String(validating: try raw(count), as: UTF8.self) else {
      throw WireError("string is not UTF-8")
    }
    return s
  }
  mutating func blob(max: Int) throws(WireError) -> [UInt8] {
    let count = Int(try u32())
    guard count <= max else { throw WireError("field of \(count) bytes exceeds \(max)") }
    return try raw(count)
  }
  func expectEnd() throws(WireError) {
    guard isAtEnd else { throw WireError("\(remaining) unexpected trailing bytes") }
  }
}
