import CInih

/// An INI file read with libinih (the parser BlueZ uses for main.conf), with
/// the line number of every entry so that errors can name it.
///
/// libinih here is built without `INI_HANDLER_LINENO`, so its handler does
/// not get line numbers; instead the file is fed to `ini_parse_stream` one
/// line at a time through our own reader, which counts lines and also records
/// section headers (libinih does not report a section that has no keys).
public struct IniFile: Sendable, Equatable {
  /// One `key = value` line.
  public struct Entry: Sendable, Equatable {
    public var section: String
    public var key: String
    public var value: String
    public var line: Int
    /// True for an indented line that libinih joined to the key above it
    /// (its multi-line value syntax).
    public var isContinuation: Bool
  }

  /// One `[section]` line.
  public struct Section: Sendable, Equatable {
    public var name: String
    public var line: Int
  }

  /// A line libinih could not parse, or one that is too long for it.
  public struct SyntaxError: Error, Sendable, Equatable {
    public var line: Int
    public var reason: String
  }

  public var entries: [Entry] = []
  public var sections: [Section] = []
  public var syntaxErrors: [SyntaxError] = []

  /// libinih's `INI_MAX_LINE`: longer lines would be split silently.
  public static let maximumLineLength = 199

  /// Parses INI text (normally a file's contents).
  public init(parsing text: String) {
    let state = ParseState(text: text)
    let context = Unmanaged.passUnretained(state).toOpaque()
    let firstError = ini_parse_stream(
      { buffer, size, stream in
        // The reader: hand libinih the next line, like fgets(3).
        guard let buffer, let stream else { return nil }
        let state = Unmanaged<ParseState>.fromOpaque(stream).takeUnretainedValue()
        return state.nextLine(into: buffer, size: Int(size))
      }, context,
      { user, section, name, value in
        // The handler: one key = value; never fails, validation comes later.
        guard let user, let section, let name, let value else { return 1 }
        let state = Unmanaged<ParseState>.fromOpaque(user).takeUnretainedValue()
        state.add(
          section: String(cString: section), key: String(cString: name),
          value: String(cString: value))
        return 1
      }, context)
    entries = state.entries
    sections = state.sections
    syntaxErrors = state.syntaxErrors
    if firstError > 0 && !syntaxErrors.contains(where: { $0.line == Int(firstError) }) {
      syntaxErrors.append(
        SyntaxError(
          line: Int(firstError),
          reason: "expected a section header '[NAME]', a 'key = value' line or a comment"))
    }
    syntaxErrors.sort { $0.line < $1.line }
  }
}

/// The reader's and handler's shared state; used only during the
/// synchronous `ini_parse_stream` call.
private final class ParseState {
  let lines: [[UInt8]]
  var lineNumber = 0
  var entries: [IniFile.Entry] = []
  var sections: [IniFile.Section] = []
  var syntaxErrors: [IniFile.SyntaxError] = []
  private var previousKey: String?

  init(text: String) {
    // Split bytes, not Characters: "\r\n" is a single Character.
    lines = text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
      .map { Array($0) }
    // A final newline leaves an empty last element that is not a line.
    var count = lines.count
    if text.hasSuffix("\n") || text.isEmpty { count -= 1 }
    linesToRead = max(count, 0)
  }

  private let linesToRead: Int

  func nextLine(into buffer: UnsafeMutablePointer<CChar>, size: Int) -> UnsafeMutablePointer<CChar>?
  {
    guard lineNumber < linesToRead else { return nil }
    var line = lines[lineNumber]
    lineNumber += 1
    if line.last == UInt8(ascii: "\r") { line.removeLast() }
    // libinih skips a UTF-8 byte order mark on the first line; so do we.
    if lineNumber == 1 && line.starts(with: [0xEF, 0xBB, 0xBF]) { line.removeFirst(3) }
    if line.count > min(size - 2, IniFile.maximumLineLength) {
      syntaxErrors.append(
        IniFile.SyntaxError(
          line: lineNumber,
          reason: "the line is longer than \(IniFile.maximumLineLength) characters"))
      line = []
    }
    if line.contains(0) {
      syntaxErrors.append(
        IniFile.SyntaxError(line: lineNumber, reason: "the line holds a NUL byte"))
      line = []
    }
    let trimmed = line.drop { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
    if trimmed.first == UInt8(ascii: "[") {
      previousKey = nil
      if let close = trimmed.firstIndex(of: UInt8(ascii: "]")) {
        let name = String(
          decoding: trimmed[trimmed.index(after: trimmed.startIndex)..<close], as: UTF8.self)
        sections.append(IniFile.Section(name: name, line: lineNumber))
      }
    }
    line.append(UInt8(ascii: "\n"))
    for (index, byte) in line.enumerated() { buffer[index] = CChar(bitPattern: byte) }
    buffer[line.count] = 0
    return buffer
  }

  func add(section: String, key: String, value: String) {
    let raw = lineNumber > 0 ? lines[lineNumber - 1] : []
    let indented = raw.first == UInt8(ascii: " ") || raw.first == UInt8(ascii: "\t")
    // libinih treats an indented line after a key as more of that key's
    // value (and passes the same key again), even if it reads "k = v".
    let continuation = indented && previousKey == key
    entries.append(
      IniFile.Entry(
        section: section, key: key, value: value, line: lineNumber, isContinuation: continuation))
    previousKey = key
  }
}
