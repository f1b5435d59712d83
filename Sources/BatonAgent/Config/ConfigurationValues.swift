import BatonRadio

/// Parsers for the values of baton.conf(5) keys and command-line options.
/// Each returns the value, or throws a message saying what is expected.
public enum ConfigurationValues {
  /// A message for the user: what was wrong with a value.
  public struct Invalid: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
  }

  /// `scanning`: one of `ScanningMode`'s names.
  public static func scanningMode(_ text: String) throws(Invalid) -> ScanningMode {
    guard let mode = ScanningMode(rawValue: text) else {
      let names = ScanningMode.allCases.map(\.rawValue).joined(separator: " or ")
      throw Invalid("'\(text)' is not a scanning mode; expected \(names)")
    }
    return mode
  }

  /// `notify`: one of `NotificationMode`'s names.
  public static func notificationMode(_ text: String) throws(Invalid) -> NotificationMode {
    guard let mode = NotificationMode(rawValue: text) else {
      let names = NotificationMode.allCases.map(\.rawValue).joined(separator: ", ")
      throw Invalid("'\(text)' is not a notification mode; expected one of \(names)")
    }
    return mode
  }

  /// An agent or peer name: 1 to 32 bytes of UTF-8, no control characters,
  /// no commas (they separate `allowed-peers`).
  public static func name(_ text: String) throws(Invalid) -> String {
    let limit = AgentConfiguration.maximumNameLength
    guard !text.isEmpty, text.utf8.count <= limit,
      !text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }),
      !text.contains(",")
    else {
      throw Invalid(
        "'\(text)' is not a valid name; expected 1 to \(limit) bytes of text without control characters or commas"
      )
    }
    return text
  }

  /// A controller spec (`bluez[:hciN]`, `hciN`, `tcp:HOST:PORT`, `serial:/dev/ttyX[:BAUD]`).
  public static func controller(_ text: String) throws(Invalid) -> ControllerSpec {
    do {
      return try ControllerSpec(text)
    } catch {
      throw Invalid(
        "'\(text)' is not a controller (\(error.reason)); expected \(ControllerSpec.expectedForms)")
    }
  }

  /// A command line: a program and its arguments, split at blanks and tabs
  /// (no quotes, no shell: a command that needs either is a script). A
  /// program starting with `~` is taken from the home directory.
  public static func commandLine(_ text: String, paths: BatonPaths) throws(Invalid) -> [String] {
    var words = text.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
    guard let program = words.first else {
      throw Invalid("the command is empty; expected a program and its arguments, e.g. '~/bin/ask-me'")
    }
    if program.hasPrefix("'") || program.hasPrefix("\"") {
      throw Invalid(
        "'\(text)' starts with a quote, but commands are split at blanks, never by a shell;"
          + " expected a program path without quotes (put anything more in a script)")
    }
    if program.hasPrefix("~") { words[0] = try path(program, paths: paths) }
    return words
  }

  /// A whole number within `range`, optionally followed by `unit` (`ms`).
  public static func integer(
    _ text: String, in range: ClosedRange<Int>, unit: String, what: String
  ) throws(Invalid) -> Int {
    var digits = Substring(text)
    if digits.hasSuffix(unit) { digits = digits.dropLast(unit.count) }
    digits = Substring(digits.trimmingSpaces)
    guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }),
      let value = Int(digits), range.contains(value)
    else {
      throw Invalid(
        "'\(text)' is not valid; expected a whole number of \(what) from \(range.lowerBound) to \(range.upperBound)"
      )
    }
    return value
  }

  /// A size in bytes: a whole number, optionally followed by `K` or `M`
  /// (also `k`, `KiB`, `MiB`: 1024 and 1048576 bytes).
  public static func byteSize(_ text: String, in range: ClosedRange<Int>) throws(Invalid) -> Int {
    let invalid = Invalid(
      "'\(text)' is not valid; expected a size in bytes from \(range.lowerBound) to \(range.upperBound >> 20)M, optionally with a K or M suffix (1K = 1024 bytes)"
    )
    var number = Substring(text)
    var multiplier = 1
    for (suffix, factor) in [("KiB", 1 << 10), ("MiB", 1 << 20), ("K", 1 << 10), ("M", 1 << 20)] {
      if number.uppercased().hasSuffix(suffix.uppercased()) {
        number = number.dropLast(suffix.count)
        multiplier = factor
        break
      }
    }
    number = Substring(number.trimmingSpaces)
    guard !number.isEmpty, number.allSatisfy({ $0.isASCII && $0.isNumber }),
      let value = Int(number)
    else { throw invalid }
    let (bytes, overflow) = value.multipliedReportingOverflow(by: multiplier)
    guard !overflow, range.contains(bytes) else { throw invalid }
    return bytes
  }

  /// A list of peer names separated by commas and/or spaces; empty is fine.
  public static func nameList(_ text: String) throws(Invalid) -> [String] {
    var names: [String] = []
    for word in text.split(whereSeparator: { $0 == "," || $0 == " " || $0 == "\t" }) {
      names.append(try name(String(word)))
    }
    return names
  }

  /// A reverse-DNS activity type: two or more dot-separated labels of
  /// letters, digits, `-` and `_`, each starting with a letter or digit; at
  /// most 128 characters (`org.example.note`).
  public static func activityType(_ text: String) throws(Invalid) -> String {
    let labels = text.split(separator: ".", omittingEmptySubsequences: false)
    let valid =
      text.count <= 128 && labels.count >= 2
      && labels.allSatisfy { label in
        guard let first = label.first, first.isASCII, first.isLetter || first.isNumber else {
          return false
        }
        return label.allSatisfy {
          $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_")
        }
      }
    guard valid else {
      throw Invalid(
        "'\(text)' is not a reverse-DNS name; expected dot-separated labels of letters, digits, '-' and '_', such as org.example.note"
      )
    }
    return text
  }

  /// A file-name pattern for fnmatch(3): not empty, no `/`.
  public static func pattern(_ text: String) throws(Invalid) -> String {
    guard !text.isEmpty, !text.contains("/") else {
      throw Invalid(
        "'\(text)' is not a file-name pattern; expected a glob on the file name without '/', such as *.md"
      )
    }
    return text
  }

  /// A folder section name: letters, digits, `.`, `_` and `-`, 1 to 40
  /// (libinih keeps at most 50 bytes of a section header).
  public static func folderName(_ text: String) throws(Invalid) -> String {
    guard !text.isEmpty, text.count <= 40,
      text.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) })
    else {
      throw Invalid(
        "'\(text)' is not a folder name; expected letters, digits, '.', '_' and '-' (at most 40)")
    }
    return text
  }

  /// A path in the configuration file: absolute, or starting with `~`.
  public static func path(_ text: String, paths: BatonPaths) throws(Invalid) -> String {
    guard !text.isEmpty else {
      throw Invalid("the path is empty; expected an absolute path or one starting with ~")
    }
    guard text.hasPrefix("/") || text.hasPrefix("~") else {
      throw Invalid("'\(text)' is relative; expected an absolute path or one starting with ~")
    }
    guard let absolute = paths.absolute(text, relativeTo: "/") else {
      throw Invalid(
        "'\(text)' names an unknown user; expected an absolute path or one starting with ~")
    }
    return absolute
  }
}

