import BatonSystem

/// One D-Bus value, typed as on the bus. `DBusMessageCoding` appends these to
/// and reads them from sd-bus messages with sd-bus's own container calls, so
/// no D-Bus wire format is written by hand.
///
/// An array carries its element signature so an empty one still has a type;
/// a dictionary is an array of `dictEntry` values (`a{sv}` is
/// `.array("{sv}", [.dictEntry(.string(k), .variant(v)), ...])`).
public indirect enum DBusValue: Equatable, Sendable, CustomStringConvertible {
  case byte(UInt8)
  case boolean(Bool)
  case int16(Int16)
  case uint16(UInt16)
  case int32(Int32)
  case uint32(UInt32)
  case int64(Int64)
  case uint64(UInt64)
  case double(Double)
  case string(String)
  case objectPath(String)
  case signature(String)
  case array(elementSignature: String, [DBusValue])
  case dictEntry(DBusValue, DBusValue)
  case structure([DBusValue])
  case variant(DBusValue)

  /// The D-Bus type signature of this value (`s`, `a{sv}`, `(qv)` ...).
  public var signature: String {
    switch self {
    case .byte: "y"
    case .boolean: "b"
    case .int16: "n"
    case .uint16: "q"
    case .int32: "i"
    case .uint32: "u"
    case .int64: "x"
    case .uint64: "t"
    case .double: "d"
    case .string: "s"
    case .objectPath: "o"
    case .signature: "g"
    case .array(let element, _): "a" + element
    case .dictEntry(let key, let value): "{" + key.signature + value.signature + "}"
    case .structure(let items): "(" + items.map(\.signature).joined() + ")"
    case .variant: "v"
    }
  }

  public var description: String {
    switch self {
    case .byte(let v): "\(v)"
    case .boolean(let v): "\(v)"
    case .int16(let v): "\(v)"
    case .uint16(let v): "\(v)"
    case .int32(let v): "\(v)"
    case .uint32(let v): "\(v)"
    case .int64(let v): "\(v)"
    case .uint64(let v): "\(v)"
    case .double(let v): "\(v)"
    case .string(let v): "\"\(v)\""
    case .objectPath(let v): v
    case .signature(let v): "g\"\(v)\""
    case .array(_, let items): "[" + items.map(\.description).joined(separator: ", ") + "]"
    case .dictEntry(let k, let v): "\(k): \(v)"
    case .structure(let items): "(" + items.map(\.description).joined(separator: ", ") + ")"
    case .variant(let v): "<\(v)>"
    }
  }

  // MARK: Building

  /// `ay` from bytes.
  public static func bytes(_ bytes: [UInt8]) -> DBusValue {
    .array(elementSignature: "y", bytes.map { .byte($0) })
  }

  /// `a{sv}` from a dictionary (keys sorted, so the encoding is stable).
  public static func stringVariantDictionary(_ entries: [String: DBusValue]) -> DBusValue {
    .array(
      elementSignature: "{sv}",
      entries.sorted { $0.key < $1.key }.map { .dictEntry(.string($0.key), .variant($0.value)) })
  }

  // MARK: Reading

  /// The value inside a variant (recursively); other values unchanged.
  public var unwrapped: DBusValue {
    if case .variant(let inner) = self { return inner.unwrapped }
    return self
  }

  /// The text of a string, object path or signature.
  public var string: String? {
    switch unwrapped {
    case .string(let s), .objectPath(let s), .signature(let s): s
    default: nil
    }
  }

  public var bool: Bool? {
    if case .boolean(let b) = unwrapped { return b }
    return nil
  }

  /// Any integer type, as an `Int`.
  public var integer: Int? {
    switch unwrapped {
    case .byte(let v): Int(v)
    case .int16(let v): Int(v)
    case .uint16(let v): Int(v)
    case .int32(let v): Int(v)
    case .uint32(let v): Int(v)
    case .int64(let v): Int(v)
    case .uint64(let v): Int(exactly: v)
    default: nil
    }
  }

  /// The bytes of an `ay`.
  public var byteArray: [UInt8]? {
    guard case .array("y", let items) = unwrapped else { return nil }
    return items.compactMap { if case .byte(let b) = $0 { b } else { nil } }
  }

  /// The elements of any array.
  public var elements: [DBusValue]? {
    if case .array(_, let items) = unwrapped { return items }
    return nil
  }

  /// An `a{s*}` as a Swift dictionary (variant values stay variants).
  public var stringDictionary: [String: DBusValue]? {
    guard let items = elements else { return nil }
    var result: [String: DBusValue] = [:]
    for item in items {
      guard case .dictEntry(let key, let value) = item, let name = key.string else { return nil }
      result[name] = value
    }
    return result
  }

  /// An `a{q*}` (or any integer-keyed dictionary) as a Swift dictionary.
  public var integerDictionary: [Int: DBusValue]? {
    guard let items = elements else { return nil }
    var result: [Int: DBusValue] = [:]
    for item in items {
      guard case .dictEntry(let key, let value) = item, let number = key.integer else { return nil }
      result[number] = value
    }
    return result
  }
}
