/// One thing wrong with the configuration, with where it is.
public struct ConfigurationProblem: Sendable, Equatable, CustomStringConvertible {
  /// The configuration file, or nil for the command line.
  public var file: String?
  /// The line in `file`, when the problem is on one line.
  public var line: Int?
  /// The key (`max-note-size`) or command-line option (`--notes`) at fault.
  public var key: String?
  /// What is wrong and what is expected.
  public var message: String

  public init(file: String?, line: Int? = nil, key: String? = nil, message: String) {
    self.file = file
    self.line = line
    self.key = key
    self.message = message
  }

  /// `FILE:LINE: key 'KEY': MESSAGE`, the form compilers and sshd use.
  public var description: String {
    var text = file ?? "command line"
    if let line { text += ":\(line)" }
    text += ": "
    if let key { text += file == nil ? "\(key): " : "key '\(key)': " }
    return text + message
  }
}

/// The configuration could not be used; every problem found is listed.
public struct ConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
  public var problems: [ConfigurationProblem]

  public init(_ problems: [ConfigurationProblem]) { self.problems = problems }

  /// One line per problem.
  public var description: String {
    problems.map(\.description).joined(separator: "\n")
  }
}

/// The command-line options of `baton agent` and `baton check` that override
/// the configuration file.
public struct ConfigurationOverrides: Sendable, Equatable {
  /// `-f FILE`: read this file instead of the default (and it must exist).
  public var configFile: String?
  /// `--notes DIR`: watch only DIR (folder `notes`, activity type
  /// `org.baton.note`, pattern `*.md`), ignoring `[folder]` sections.
  public var notes: String?
  /// `--controller SPEC`.
  public var controller: String?
  /// `--key-file FILE`.
  public var keyFile: String?
  /// `--name NAME`.
  public var name: String?
  /// `--state-dir DIR`.
  public var stateDirectory: String?
  /// `--hci-log FILE`.
  public var hciLog: String?

  public init(
    configFile: String? = nil, notes: String? = nil, controller: String? = nil,
    keyFile: String? = nil, name: String? = nil, stateDirectory: String? = nil,
    hciLog: String? = nil
  ) {
    self.configFile = configFile
    self.notes = notes
    self.controller = controller
    self.keyFile = keyFile
    self.name = name
    self.stateDirectory = stateDirectory
    self.hciLog = hciLog
  }
}
