/// A note's bytes seen as a title line and content.
///
/// The bytes are the truth and are never rewritten: `titleLine` followed by
/// `lineBreak` and `content` is exactly `bytes`, whatever the line endings,
/// BOM or missing final newline. `title` is only for display and naming: the
/// first line without a BOM, a trailing CR, a leading ATX heading marker
/// (`#` to `######` then a space) and surrounding whitespace.
public struct Note: Sendable, Equatable, Hashable {
  /// The file's exact bytes.
  public var bytes: [UInt8]

  public init(bytes: [UInt8]) { self.bytes = bytes }

  /// The note's text, when `bytes` is valid UTF-8.
  public init(text: String) { self.bytes = Array(text.utf8) }

  /// Index of the first LF, if any.
  private var firstLineFeed: Int? { bytes.firstIndex(of: UInt8(ascii: "\n")) }

  /// The first line's raw bytes, without its LF (a CR before the LF stays).
  public var titleLine: ArraySlice<UInt8> { bytes[..<(firstLineFeed ?? bytes.endIndex)] }

  /// The LF ending the first line, or nothing for a one-line note.
  public var lineBreak: ArraySlice<UInt8> {
    guard let lf = firstLineFeed else { return bytes[bytes.endIndex...] }
    return bytes[lf...lf]
  }

  /// Everything after the first line's LF, byte for byte.
  public var content: ArraySlice<UInt8> {
    guard let lf = firstLineFeed else { return bytes[bytes.endIndex...] }
    return bytes[(lf + 1)...]
  }

  /// `content` as text (invalid UTF-8 replaced by U+FFFD).
  public var contentText: String { String(decoding: content, as: UTF8.self) }

  /// The display title (see the type's description).
  public var title: String {
    var line = titleLine
    if line.starts(with: [0xEF, 0xBB, 0xBF]) { line = line.dropFirst(3) }
    if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
    line = Note.trimmingWhitespace(line)
    // An ATX heading: 1 to 6 `#`, then a space or tab (or nothing at all).
    let hashes = line.prefix { $0 == UInt8(ascii: "#") }.count
    if (1...6).contains(hashes) {
      let rest = line.dropFirst(hashes)
      if rest.isEmpty || rest.first == UInt8(ascii: " ") || rest.first == UInt8(ascii: "\t") {
        line = Note.trimmingWhitespace(rest)
      }
    }
    return String(decoding: line, as: UTF8.self)
  }

  /// Whether `bytes` are valid UTF-8.
  public var isValidUTF8: Bool { Note.isValidUTF8(bytes) }

  static func isValidUTF8<C: Collection>(_ bytes: C) -> Bool where C.Element == UInt8 {
    var iterator = bytes.makeIterator()
    var decoder = UTF8()
    while true {
      switch decoder.decode(&iterator) {
      case .scalarValue: continue
      case .emptyInput: return true
      case .error: return false
      }
    }
  }

  private static func trimmingWhitespace(_ line: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
    func isSpace(_ b: UInt8) -> Bool {
      b == UInt8(ascii: " ") || b == UInt8(ascii: "\t") || b == UInt8(ascii: "\r")
        || b == 0x0B || b == 0x0C
    }
    var result = line
    while let first = result.first, isSpace(first) { result = result.dropFirst() }
    while let last = result.last, isSpace(last) { result = result.dropLast() }
    return result
  }
}
