import BatonDBus
import BatonSystem

/// D-Bus values from fuzz bytes and back, so that the code reading bluetoothd's
/// properties can be fuzzed without a bus. This is the fuzzer's own form, not
/// the D-Bus wire format (sd-bus parses that before baton sees a value): each
/// value is a tag byte (its type: the tag modulo 16) and then its payload;
/// strings and containers start with a one-byte length or count. Nesting
/// stops at `maxDepth` and a decode at `maxValues` values, so that every input
/// decodes in bounded time.
enum DBusValueBytes {
  static let maxDepth = 8
  static let maxValues = 4096

  /// The values `bytes` holds, in order (a truncated value is dropped).
  static func decode(_ bytes: [UInt8]) -> [DBusValue] {
    var reader = Reader(bytes: bytes)
    var values: [DBusValue] = []
    while !reader.atEnd, let value = reader.value(depth: 0) { values.append(value) }
    return values
  }

  static func encode(_ values: [DBusValue]) -> [UInt8] {
    var out: [UInt8] = []
    for value in values { append(value, to: &out) }
    return out
  }

  private static func append(_ value: DBusValue, to out: inout [UInt8]) {
    func integer<T: FixedWidthInteger>(_ tag: UInt8, _ v: T) {
      out.append(tag)
      withUnsafeBytes(of: v.littleEndian) { out += $0 }
    }
    func text(_ tag: UInt8, _ s: String) {
      let utf8 = Array(s.utf8.prefix(255))
      out += [tag, UInt8(utf8.count)] + utf8
    }
    switch value {
    case .byte(let v): out += [0, v]
    case .boolean(let v): out += [1, v ? 1 : 0]
    case .int16(let v): integer(2, v)
    case .uint16(let v): integer(3, v)
    case .int32(let v): integer(4, v)
    case .uint32(let v): integer(5, v)
    case .int64(let v): integer(6, v)
    case .uint64(let v): integer(7, v)
    case .double(let v): integer(8, v.bitPattern)
    case .string(let s): text(9, s)
    case .objectPath(let s): text(10, s)
    case .signature(let s): text(11, s)
    case .array(_, let items):
      out += [12, UInt8(min(255, items.count))]
      for item in items.prefix(255) { append(item, to: &out) }
    case .dictEntry(let key, let value):
      out.append(13)
      append(key, to: &out)
      append(value, to: &out)
    case .structure(let items):
      out += [14, UInt8(min(255, items.count))]
      for item in items.prefix(255) { append(item, to: &out) }
    case .variant(let inner):
      out.append(15)
      append(inner, to: &out)
    }
  }

  private struct Reader {
    let bytes: [UInt8]
    var at = 0
    var count = 0

    init(bytes: [UInt8]) { self.bytes = bytes }

    var atEnd: Bool { at >= bytes.count }

    mutating func take(_ n: Int) -> ArraySlice<UInt8>? {
      guard n <= bytes.count - at else { return nil }
      defer { at += n }
      return bytes[at..<(at + n)]
    }

    mutating func integer<T: FixedWidthInteger>(_: T.Type) -> T? {
      guard let raw = take(MemoryLayout<T>.size) else { return nil }
      var v: T = 0
      for (i, b) in raw.enumerated() { v |= T(truncatingIfNeeded: b) << (8 * i) }
      return v
    }

    mutating func text() -> String? {
      guard let n = take(1)?.first, let raw = take(Int(n)) else { return nil }
      return String(decoding: raw, as: UTF8.self)
    }

    mutating func value(depth: Int) -> DBusValue? {
      guard depth <= DBusValueBytes.maxDepth, count < DBusValueBytes.maxValues,
        let tag = take(1)?.first
      else { return nil }
      count += 1
      switch tag % 16 {
      case 0: return integer(UInt8.self).map { .byte($0) }
      case 1: return integer(UInt8.self).map { .boolean($0 & 1 == 1) }
      case 2: return integer(Int16.self).map { .int16($0) }
      case 3: return integer(UInt16.self).map { .uint16($0) }
      case 4: return integer(Int32.self).map { .int32($0) }
      case 5: return integer(UInt32.self).map { .uint32($0) }
      case 6: return integer(Int64.self).map { .int64($0) }
      case 7: return integer(UInt64.self).map { .uint64($0) }
      case 8: return integer(UInt64.self).map { .double(Double(bitPattern: $0)) }
      case 9: return text().map { .string($0) }
      case 10: return text().map { .objectPath($0) }
      case 11: return text().map { .signature($0) }
      case 12:
        guard let items = list(depth: depth) else { return nil }
        return .array(elementSignature: items.first?.signature ?? "y", items)
      case 13:
        guard let key = value(depth: depth + 1), let v = value(depth: depth + 1) else { return nil }
        return .dictEntry(key, v)
      case 14: return list(depth: depth).map { .structure($0) }
      default: return value(depth: depth + 1).map { .variant($0) }
      }
    }

    mutating func list(depth: Int) -> [DBusValue]? {
      guard let n = take(1)?.first else { return nil }
      var items: [DBusValue] = []
      for _ in 0..<n {
        guard let item = value(depth: depth + 1) else { return nil }
        items.append(item)
      }
      return items
    }
  }
}
