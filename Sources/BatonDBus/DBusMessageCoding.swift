import BatonSystem
import CSystemd

/// Appends `DBusValue`s to, and reads them from, sd-bus messages, through
/// sd-bus's typed calls (`sd_bus_message_append_basic`, `_open_container`,
/// `_peek_type`, `_read_basic`, `_enter_container`). Must run on the thread
/// that owns the message's bus (`DBusConnection`'s bus thread).
enum DBusMessageCoding {
  /// Appends every value in order.
  static func append(_ values: [DBusValue], to message: OpaquePointer) throws(DBusError) {
    for value in values { try append(value, to: message) }
  }

  static func append(_ value: DBusValue, to m: OpaquePointer) throws(DBusError) {
    func basic<T>(_ type: Character, _ v: T) throws(DBusError) {
      var copy = v
      try check("append", sd_bus_message_append_basic(m, code(type), &copy))
    }
    switch value {
    case .byte(let v): try basic("y", v)
    case .boolean(let v): try basic("b", Int32(v ? 1 : 0))
    case .int16(let v): try basic("n", v)
    case .uint16(let v): try basic("q", v)
    case .int32(let v): try basic("i", v)
    case .uint32(let v): try basic("u", v)
    case .int64(let v): try basic("x", v)
    case .uint64(let v): try basic("t", v)
    case .double(let v): try basic("d", v)
    case .string(let s), .objectPath(let s), .signature(let s):
      // For string types sd-bus takes the string itself, not a pointer to it.
      let type = value.signature.utf8.first!
      try check("append", s.withCString { sd_bus_message_append_basic(m, CChar(type), $0) })
    case .array(let element, let items):
      try container(m, "a", element) { () throws(DBusError) in
        for item in items {
          guard item.signature == element else {
            throw DBusError.unexpectedReply(
              member: "array of \(element)", signature: item.signature)
          }
          try append(item, to: m)
        }
      }
    case .dictEntry(let key, let v):
      try container(m, "e", key.signature + v.signature) { () throws(DBusError) in
        try append(key, to: m)
        try append(v, to: m)
      }
    case .structure(let items):
      try container(m, "r", items.map(\.signature).joined()) { () throws(DBusError) in
        try append(items, to: m)
      }
    case .variant(let inner):
      try container(m, "v", inner.signature) { () throws(DBusError) in try append(inner, to: m) }
    }
  }

  private static func container(
    _ m: OpaquePointer, _ type: Character, _ contents: String, _ body: () throws(DBusError) -> Void
  ) throws(DBusError) {
    try check("open container", sd_bus_message_open_container(m, code(type), contents))
    try body()
    try check("close container", sd_bus_message_close_container(m))
  }

  /// Reads every remaining value at the current level.
  static func read(_ m: OpaquePointer) throws(DBusError) -> [DBusValue] {
    var values: [DBusValue] = []
    while true {
      var type: CChar = 0
      var contents: UnsafePointer<CChar>?
      let r = sd_bus_message_peek_type(m, &type, &contents)
      try check("peek", r)
      if r == 0 { return values }
      values.append(try readOne(m, type: type, contents: contents.map { String(cString: $0) }))
    }
  }

  private static func readOne(_ m: OpaquePointer, type: CChar, contents: String?) throws(DBusError)
    -> DBusValue
  {
    func basic<T>(_ zero: T) throws(DBusError) -> T {
      var v = zero
      try check("read", sd_bus_message_read_basic(m, type, &v))
      return v
    }
    func nested(_ body: () throws(DBusError) -> DBusValue) throws(DBusError) -> DBusValue {
      try check("enter container", sd_bus_message_enter_container(m, type, contents))
      let value = try body()
      try check("exit container", sd_bus_message_exit_container(m))
      return value
    }
    switch UInt8(bitPattern: type) {
    case UInt8(ascii: "y"): return .byte(try basic(UInt8(0)))
    case UInt8(ascii: "b"): return .boolean(try basic(Int32(0)) != 0)
    case UInt8(ascii: "n"): return .int16(try basic(Int16(0)))
    case UInt8(ascii: "q"): return .uint16(try basic(UInt16(0)))
    case UInt8(ascii: "i"): return .int32(try basic(Int32(0)))
    case UInt8(ascii: "u"): return .uint32(try basic(UInt32(0)))
    case UInt8(ascii: "x"): return .int64(try basic(Int64(0)))
    case UInt8(ascii: "t"): return .uint64(try basic(UInt64(0)))
    case UInt8(ascii: "d"): return .double(try basic(Double(0)))
    case UInt8(ascii: "h"): return .int32(try basic(Int32(-1)))  // a descriptor: kept as its number
    case UInt8(ascii: "s"), UInt8(ascii: "o"), UInt8(ascii: "g"):
      let pointer = try basic(UnsafePointer<CChar>?.none)
      let text = pointer.map { String(cString: $0) } ?? ""
      switch UInt8(bitPattern: type) {
      case UInt8(ascii: "s"): return .string(text)
      case UInt8(ascii: "o"): return .objectPath(text)
      default: return .signature(text)
      }
    case UInt8(ascii: "a"):
      return try nested { () throws(DBusError) in
        .array(elementSignature: contents ?? "", try read(m))
      }
    case UInt8(ascii: "v"):
      return try nested { () throws(DBusError) in
        let inner = try read(m)
        guard inner.count == 1 else {
          throw DBusError.unexpectedReply(member: "variant", signature: contents ?? "")
        }
        return .variant(inner[0])
      }
    case UInt8(ascii: "r"):
      return try nested { () throws(DBusError) in .structure(try read(m)) }
    case UInt8(ascii: "e"):
      return try nested { () throws(DBusError) in
        let pair = try read(m)
        guard pair.count == 2 else {
          throw DBusError.unexpectedReply(member: "dict entry", signature: contents ?? "")
        }
        return .dictEntry(pair[0], pair[1])
      }
    default:
      throw DBusError.unexpectedReply(
        member: "message", signature: String(UnicodeScalar(UInt8(bitPattern: type))))
    }
  }

  private static func code(_ c: Character) -> CChar { CChar(c.asciiValue!) }

  /// sd-bus returns a negative errno on failure.
  @discardableResult
  static func check(_ operation: String, _ result: Int32) throws(DBusError) -> Int32 {
    if result < 0 { throw DBusError.failed(operation: operation, errno: Errno(rawValue: -result)) }
    return result
  }
}
