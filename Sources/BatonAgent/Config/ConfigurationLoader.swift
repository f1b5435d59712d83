import BatonSystem
import FoundationEssentials

#if canImport(Glibc)
  import Glibc
#endif

/// Reads baton.conf(5), applies the command-line overrides and validates
/// everything into an `AgentConfiguration`, collecting every problem with
/// its file, line and key.
public struct ConfigurationLoader: Sendable {
  public var paths: BatonPaths
  /// For relative paths given on the command line.
  public var currentDirectory: String

  public init(
    paths: BatonPaths = BatonPaths(),
    currentDirectory: String = FileManager.default.currentDirectoryPath
  ) {
    self.paths = paths
    self.currentDirectory = currentDirectory
  }

  /// The keys of the `[agent]` section.
  public static let agentKeys = [
    "address-rotation", "advertising-interval", "allowed-peers", "controller", "hci-log",
    "hold-deletions", "hold-deletions-share", "key-file", "max-note-size", "name", "scanning",
    "state-dir", "trash-days", "trash-size",
  ]
  /// The keys of a `[folder NAME]` section.
  public static let folderKeys = [
    "accept-command", "activity-type", "after-command", "command-timeout", "notify",
    "open-command", "path", "pattern",
  ]

  /// The configuration file that `load` reads: `-f FILE` or the default.
  public func configFile(_ overrides: ConfigurationOverrides) -> String {
    if let file = overrides.configFile {
      return paths.absolute(file, relativeTo: currentDirectory) ?? file
    }
    return paths.defaultConfigFile
  }

  /// Reads the configuration file (a missing default file means all
  /// defaults; a missing `-f FILE` is an error) and validates it.
  public func load(_ overrides: ConfigurationOverrides) throws(ConfigurationError)
    -> AgentConfiguration
  {
    let file = configFile(overrides)
    var text = ""
    do {
      let fd = try FileDescriptor.open(file, .readOnly)
      defer { fd.closeIgnoringErrors() }
      var info = stat()
      if fstat(fd.rawValue, &info) == 0,
        let problem = FileTrust.problem(info, path: file, private: false)
      {
        throw ConfigurationError([
          ConfigurationProblem(
            file: file, message: "the configuration file is not only yours: \(problem)")
        ])
      }
      let bytes = try fd.readAll(limit: 1 << 20)
      guard let decoded = String(validating: bytes, as: UTF8.self) else {
        throw ConfigurationError([
          ConfigurationProblem(file: file, message: "the file is not UTF-8 text")
        ])
      }
      text = decoded
    } catch let error as Errno {
      if !(error == .noEntry && overrides.configFile == nil) {
        throw ConfigurationError([
          ConfigurationProblem(
            file: file, message: "cannot read the configuration file: \(error)")
        ])
      }
    } catch let error as ConfigurationError {
      throw error
    } catch {
      throw ConfigurationError([ConfigurationProblem(file: file, message: "\(error)")])
    }
    return try parse(text, file: file, overrides: overrides)
  }

  /// Validates configuration text; `file` is only for messages.
  public func parse(
    _ text: String, file: String, overrides: ConfigurationOverrides = ConfigurationOverrides(),
    checkFileSystem: Bool = true
  ) throws(ConfigurationError) -> AgentConfiguration {
    var reader = SectionReader(file: file, paths: paths)
    reader.read(IniFile(parsing: text))
    var problems = reader.problems
    let agent = reader.agent

    func commandLine<T>(_ option: String, _ parse: () throws(ConfigurationValues.Invalid) -> T)
      -> T?
    {
      do { return try parse() } catch {
        problems.append(ConfigurationProblem(file: nil, key: option, message: error.message))
        return nil
      }
    }
    func commandLinePath(_ option: String, _ value: String) -> String? {
      commandLine(option) { () throws(ConfigurationValues.Invalid) -> String in
        guard !value.isEmpty, let path = paths.absolute(value, relativeTo: currentDirectory) else {
          throw ConfigurationValues.Invalid("'\(value)' is not a usable path")
        }
        return path
      }
    }

    var configuration = AgentConfiguration(
      name: agent.name ?? BatonPaths.hostName,
      controller: agent.controller ?? .defaultSpec,
      keyFile: agent.keyFile ?? paths.defaultKeyFile,
      stateDirectory: agent.stateDirectory ?? paths.defaultStateDirectory,
      advertisingInterval: agent.advertisingInterval
        ?? AgentConfiguration.defaultAdvertisingInterval,
      addressRotation: agent.addressRotation ?? AgentConfiguration.defaultAddressRotation,
      maxNoteSize: agent.maxNoteSize ?? AgentConfiguration.defaultMaxNoteSize,
      trashDays: agent.trashDays ?? AgentConfiguration.defaultTrashDays,
      trashSize: agent.trashSize ?? AgentConfiguration.defaultTrashSize,
      holdDeletions: agent.holdDeletions ?? AgentConfiguration.defaultHoldDeletions,
      holdDeletionsShare: agent.holdDeletionsShare ?? AgentConfiguration.defaultHoldDeletionsShare,
      allowedPeers: agent.allowedPeers, hciLog: agent.hciLog,
      scanning: agent.scanning ?? .windows,
      folders: reader.folders.map(\.configuration))
    var folderLines: [[String: Int]?] = reader.folders.map {
      [
        "path": $0.pathLine ?? $0.sectionLine,
        "activity-type": $0.activityTypeLine ?? $0.sectionLine,
      ]
    }

    if let value = overrides.name,
      let name = commandLine(
        "--name", { () throws(ConfigurationValues.Invalid) in try ConfigurationValues.name(value) })
    {
      configuration.name = name
    }
    if let value = overrides.controller,
      let spec = commandLine(
        "--controller",
        { () throws(ConfigurationValues.Invalid) in try ConfigurationValues.controller(value) })
    {
      configuration.controller = spec
    }
    if let value = overrides.keyFile, let path = commandLinePath("--key-file", value) {
      configuration.keyFile = path
    }
    if let value = overrides.stateDirectory, let path = commandLinePath("--state-dir", value) {
      configuration.stateDirectory = path
    }
    if let value = overrides.hciLog, let path = commandLinePath("--hci-log", value) {
      configuration.hciLog = path
    }
    if let value = overrides.notes {
      if let path = commandLinePath("--notes", value) {
        configuration.folders = [
          FolderConfiguration(name: FolderConfiguration.commandLineName, path: path)
        ]
        folderLines = [nil]
      } else {
        configuration.folders = []
        folderLines = []
      }
    }

    if configuration.folders.isEmpty && overrides.notes == nil && problems.isEmpty {
      problems.append(
        ConfigurationProblem(
          file: file,
          message:
            "no folder to watch; add a [folder NAME] section with 'path = DIR', or run with --notes DIR"
        ))
    }
    problems += folderProblems(
      configuration.folders, lines: folderLines, file: file, checkFileSystem: checkFileSystem)
    problems += privateFileProblems(
      configuration, lines: folderLines, file: file, checkFileSystem: checkFileSystem)

    guard problems.isEmpty else {
      throw ConfigurationError(
        problems.sorted {
          ($0.file == nil ? 1 : 0, $0.line ?? 0) < ($1.file == nil ? 1 : 0, $1.line ?? 0)
        })
    }
    return configuration
  }

  /// A folder must not hold the agent's own files: the key file, this
  /// configuration file or the state directory (whose database the watcher
  /// would see written all the time). Compared as given and, when they
  /// exist, through `realpath` (a symlink to the folder counts).
  private func privateFileProblems(
    _ configuration: AgentConfiguration, lines: [[String: Int]?], file: String,
    checkFileSystem: Bool
  ) -> [ConfigurationProblem] {
    func resolved(_ path: String) -> [String] {
      guard checkFileSystem, let real = realpath(path, nil) else { return [path] }
      defer { free(real) }
      return [path, String(cString: real)]
    }
    let own = [
      ("the key file", configuration.keyFile), ("the configuration file", file),
      ("the state directory", configuration.stateDirectory),
    ]
    var problems: [ConfigurationProblem] = []
    for (index, folder) in configuration.folders.enumerated() {
      let roots = resolved(folder.path)
      for (what, path) in own {
        let inside = resolved(path).contains { candidate in
          roots.contains { candidate == $0 || candidate.hasPrefix($0 == "/" ? "/" : $0 + "/") }
        }
        guard inside else { continue }
        let line = lines[index]?["path"]
        problems.append(
          ConfigurationProblem(
            file: line == nil ? nil : file, line: line, key: line == nil ? "--notes" : "path",
            message:
              "folder '\(folder.name)' (\(folder.path)) holds \(what) \(path); expected a notes"
              + " folder apart from baton's own files (move \(what) out, or choose another folder)"))
      }
    }
    return problems
  }

  /// Checks the folders against each other (distinct activity types, no
  /// folder inside another) and, if asked, that each is a directory.
  private func folderProblems(
    _ folders: [FolderConfiguration], lines: [[String: Int]?], file: String, checkFileSystem: Bool
  ) -> [ConfigurationProblem] {
    var problems: [ConfigurationProblem] = []
    func problem(_ index: Int, _ key: String, _ message: String) {
      let line = lines[index]?[key]
      problems.append(
        ConfigurationProblem(
          file: line == nil ? nil : file, line: line, key: line == nil ? "--notes" : key,
          message: message))
    }
    for (index, folder) in folders.enumerated() {
      if checkFileSystem {
        var info = stat()
        if stat(folder.path, &info) != 0 {
          problem(
            index, "path",
            "folder '\(folder.name)': \(folder.path): \(Errno.current); expected an existing directory (create it or correct the path)"
          )
        } else if info.st_mode & S_IFMT != S_IFDIR {
          problem(index, "path", "folder '\(folder.name)': \(folder.path) is not a directory")
        }
      }
      for other in folders[..<index] {
        if other.activityType == folder.activityType {
          problem(
            index, "activity-type",
            "folder '\(folder.name)' uses activity type \(folder.activityType), already used by folder '\(other.name)'; expected a different activity type for each folder"
          )
        }
        if other.path == folder.path || folder.path.hasPrefix(other.path + "/")
          || other.path.hasPrefix(folder.path + "/") || other.path == "/" || folder.path == "/"
        {
          problem(
            index, "path",
            "folder '\(folder.name)' (\(folder.path)) overlaps folder '\(other.name)' (\(other.path)); expected folders that do not contain each other"
          )
        }
      }
    }
    return problems
  }
}
