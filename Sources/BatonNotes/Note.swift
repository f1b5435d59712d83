/// A note's bytes seen as a title line and content.
///
/// The bytes are the truth and are never rewritten: `titleLine` followed by
/// `lineBreak` and `content` is exactly `bytes`, whatever the line endings,
/// BOM or missing final newline. `title` is only for display and for the
/// handoff activity title (the one title rule, PROTOCOL.md section 5).
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

  /// The longest title in UTF-8 bytes. Peers accept titles of up to 1024
  /// bytes (`HandoffLimits.maxTitleBytes`), so a title always passes.
  public static let maximumTitleBytes = 256

  /// The title: the first line (lines end at LF or CR) that has text once a
  /// leading BOM, an ATX heading marker (`#` to `######` then a space, a tab or
  /// nothing) and surrounding whitespace are removed; invalid UTF-8 becomes
  /// U+FFFD; cut at a character (grapheme cluster) boundary to at most
  /// `maximumTitleBytes` bytes. Empty when no line has text (or its first
  /// character alone is over the cap).
  public var title: String {
    var rest = bytes[...]
    if rest.starts(with: [0xEF, 0xBB, 0xBF]) { rest = rest.dropFirst(3) }
    while !rest.isEmpty {
      let end = rest.firstIndex { $0 == UInt8(ascii: "\n") || $0 == UInt8(ascii: "\r") }
      var line = Note.trimmingWhitespace(rest[..<(end ?? rest.endIndex)])
      // An ATX heading: 1 to 6 `#`, then a space or tab (or nothing at all).
      let hashes = line.prefix { $0 == UInt8(ascii: "#") }.count
      if (1...6).contains(hashes) {
        let after = line.dropFirst(hashes)
        if after.isEmpty || after.first == UInt8(ascii: " ") || after.first == UInt8(ascii: "\t") {
          line = Note.trimmingWhitespace(after)
        }
      }
      if !line.isEmpty {
        // Decoding more than the cap keeps the character boundaries inside it exact.
        let text = String(decoding: line.prefix(4 * Note.maximumTitleBytes), as: UTF8.self)
        return text.prefix(utf8Bytes: Note.maximumTitleBytes)
      }
      guard let end else { break }
      rest = rest[(end + 1)...]
    }
    return ""
  }

  /// `title`, or when that is empty the file name (the last component
  /// of `path`) under the same cap: the activity title sent to peers.
  public func title(fileName path: String) -> String {
    let title = self.title
    guard title.isEmpty else { return title }
    let name = path.split(separator: "/").last.map(String.init) ?? path
    return name.prefix(utf8Bytes: Note.maximumTitleBytes)
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
