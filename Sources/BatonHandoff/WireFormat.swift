import BatonSystem

/// Why a handoff message could not be decoded.
public struct WireError: Error, CustomStringConvertible, Equatable, ByteDecodingError {
  public let reason: String
  public init(_ reason: String) { self.reason = reason }
  public var description: String { "malformed handoff message: \(reason)" }

  package static func truncated(_ context: String, wanted: Int, at offset: Int, of count: Int)
    -> WireError
  {
    WireError("needed \(wanted) bytes at offset \(offset), have \(count - offset)")
  }

  package static func trailing(_ context: String, at offset: Int, of count: Int) -> WireError {
    WireError("\(count - offset) unexpected trailing bytes")
  }
}

/// Handoff messages are read with BatonSystem's `ByteReader`, failing with
/// `WireError` (PROTOCOL.md, "Encoding").
typealias WireReader = ByteReader<WireError>

/// The length-prefixed fields of PROTOCOL.md ("Encoding").
extension ByteWriter {
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

extension ByteReader where Failure == WireError {
  mutating func raw(_ count: Int) throws(WireError) -> [UInt8] { try take(count) }
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
}
