import BatonRadio

/// Turns the entries of an `IniFile` into the `[agent]` settings and the
/// `[folder NAME]` sections, recording a problem (file, line, key, what is
/// expected) for every unknown section or key, duplicate and bad value.
struct SectionReader {
  /// The `[agent]` values that were set.
  struct Agent {
    var name: String?
    var controller: ControllerSpec?
    var keyFile: String?
    var stateDirectory: String?
    var advertisingInterval: Duration?
    var addressRotation: Duration?
    var maxNoteSize: Int?
    var trashDays: Int?
    var trashSize: Int?
    var holdDeletions: Int?
    var holdDeletionsShare: Int?
    var allowedPeers: [String] = []
    var hciLog: String?
    var scanning: ScanningMode?
  }

  /// A `[folder NAME]` section being read.
  struct Folder {
    var name: String
    var sectionLine: Int
    var path: String?
    var pathLine: Int?
    var activityType = FolderConfiguration.defaultActivityType
    var activityTypeLine: Int?
    var pattern = FolderConfiguration.defaultPattern
    var acceptCommand: [String] = []
    var afterCommand: [String] = []
    var commandTimeout = FolderConfiguration.defaultCommandTimeout
    var notify = NotificationMode.current
    var openCommand = FolderConfiguration.defaultOpenCommand

    var configuration: FolderConfiguration {
      var folder = FolderConfiguration(
        name: name, path: path ?? "", activityType: activityType, pattern: pattern)
      folder.acceptCommand = acceptCommand
      folder.afterCommand = afterCommand
      folder.commandTimeout = commandTimeout
      folder.notify = notify
      folder.openCommand = openCommand
      return folder
    }
  }

  let file: String
  let paths: BatonPaths
  var agent = Agent()
  var folders: [Folder] = []
  var problems: [ConfigurationProblem] = []

  init(file: String, paths: BatonPaths) {
    self.file = file
    self.paths = paths
  }

  private mutating func problem(_ line: Int?, _ key: String?, _ message: String) {
    problems.append(ConfigurationProblem(file: file, line: line, key: key, message: message))
  }

  /// What a section header means: `agent`, `folder NAME`, or nothing.
  private enum SectionKind: Equatable {
    case agent
    case folder(String)
    case invalid
  }

  private func kind(of section: String) -> SectionKind {
    let words = section.split(whereSeparator: { $0 == " " || $0 == "\t" })
    if words == ["agent"] { return .agent }
    if words.count == 2 && words[0] == "folder" { return .folder(String(words[1])) }
    return .invalid
  }

  mutating func read(_ ini: IniFile) {
    for error in ini.syntaxErrors { problem(error.line, nil, error.reason) }

    // Sections first (libinih does not report one without keys).
    var agentLine: Int?
    var folderIndex: [String: Int] = [:]
    var badSections: Set<String> = []
    for section in ini.sections {
      switch kind(of: section.name) {
      case .agent:
        if let first = agentLine {
          problem(
            section.line, nil,
            "duplicate section [agent] (first at line \(first)); expected one [agent] section")
        }
        agentLine = agentLine ?? section.line
      case .folder(let name):
        do {
          _ = try ConfigurationValues.folderName(name)
        } catch {
          problem(section.line, nil, "section [\(section.name)]: \(error.message)")
          badSections.insert(section.name)
          continue
        }
        if let index = folderIndex[name] {
          problem(
            section.line, nil,
            "duplicate section [folder \(name)] (first at line \(folders[index].sectionLine)); expected a different name for each folder"
          )
        } else {
          folderIndex[name] = folders.count
          folders.append(Folder(name: name, sectionLine: section.line))
        }
      case .invalid:
        badSections.insert(section.name)
        problem(
          section.line, nil,
          "unknown section [\(section.name)]; expected [agent] or [folder NAME]")
      }
    }

    var seen: [String: Int] = [:]  // "section\u{0}key" -> first line
    for entry in ini.entries {
      if entry.section.isEmpty {
        problem(
          entry.line, entry.key,
          "the key is outside any section; expected it under [agent] or [folder NAME]")
        continue
      }
      if badSections.contains(entry.section) { continue }
      let section = kind(of: entry.section)
      if entry.isContinuation {
        if section == .agent && entry.key == "allowed-peers" {
          readAllowedPeers(entry)
        } else {
          problem(
            entry.line, entry.key,
            "this indented line is read as more of the value of '\(entry.key)'; expected keys at the start of the line (remove the indentation)"
          )
        }
        continue
      }
      let id = entry.section + "\u{0}" + entry.key
      if let first = seen[id] {
        problem(
          entry.line, entry.key,
          "set twice in [\(entry.section)] (first at line \(first)); expected each key once")
        continue
      }
      seen[id] = entry.line
      switch section {
      case .agent: readAgent(entry)
      case .folder(let name):
        // Every folder section was recorded above; be defensive anyway.
        let index =
          folderIndex[name]
          ?? {
            folderIndex[name] = folders.count
            folders.append(Folder(name: name, sectionLine: entry.line))
            return folders.count - 1
          }()
        readFolder(entry, into: index)
      case .invalid: break
      }
    }

    // A folder whose path line was refused has its problem reported already.
    for folder in folders where folder.path == nil && folder.pathLine == nil {
      problem(
        folder.sectionLine, "path",
        "section [folder \(folder.name)] has no path; expected 'path = DIR'")
    }
    folders.removeAll { $0.path == nil }
  }

  private mutating func readAllowedPeers(_ entry: IniFile.Entry) {
    do {
      agent.allowedPeers += try ConfigurationValues.nameList(entry.value)
    } catch {
      problem(entry.line, entry.key, error.message)
    }
  }

  private mutating func readAgent(_ entry: IniFile.Entry) {
    let value = entry.value
    do throws(ConfigurationValues.Invalid) {
      switch entry.key {
      case "name": agent.name = try ConfigurationValues.name(value)
      case "controller": agent.controller = try ConfigurationValues.controller(value)
      case "key-file": agent.keyFile = try ConfigurationValues.path(value, paths: paths)
      case "state-dir": agent.stateDirectory = try ConfigurationValues.path(value, paths: paths)
      case "hci-log": agent.hciLog = try ConfigurationValues.path(value, paths: paths)
      case "advertising-interval":
        let range = AgentConfiguration.advertisingIntervalRange
        agent.advertisingInterval = .milliseconds(
          try ConfigurationValues.integer(value, in: range, unit: "ms", what: "milliseconds"))
      case "address-rotation":
        let range = AgentConfiguration.addressRotationRange
        agent.addressRotation = .seconds(
          60 * (try ConfigurationValues.integer(value, in: range, unit: "min", what: "minutes")))
      case "max-note-size":
        agent.maxNoteSize = try ConfigurationValues.byteSize(
          value, in: AgentConfiguration.maxNoteSizeRange)
      case "trash-days":
        agent.trashDays = try ConfigurationValues.integer(
          value, in: AgentConfiguration.trashDaysRange, unit: "d", what: "days")
      case "trash-size":
        agent.trashSize = try ConfigurationValues.byteSize(
          value, in: AgentConfiguration.trashSizeRange)
      case "hold-deletions":
        agent.holdDeletions = try ConfigurationValues.integer(
          value, in: AgentConfiguration.holdDeletionsRange, unit: "", what: "notes")
      case "hold-deletions-share":
        agent.holdDeletionsShare = try ConfigurationValues.integer(
          value, in: AgentConfiguration.holdDeletionsShareRange, unit: "%", what: "percent")
      case "allowed-peers": readAllowedPeers(entry)
      case "scanning": agent.scanning = try ConfigurationValues.scanningMode(value)
      default:
        problem(
          entry.line, entry.key,
          "unknown key in [agent]; expected one of \(ConfigurationLoader.agentKeys.joined(separator: ", "))"
        )
      }
    } catch {
      problem(entry.line, entry.key, error.message)
    }
  }

  private mutating func readFolder(_ entry: IniFile.Entry, into index: Int) {
    let value = entry.value
    do throws(ConfigurationValues.Invalid) {
      switch entry.key {
      case "path":
        folders[index].pathLine = entry.line  // given, even if refused below
        folders[index].path = try ConfigurationValues.path(value, paths: paths)
      case "activity-type":
        folders[index].activityType = try ConfigurationValues.activityType(value)
        folders[index].activityTypeLine = entry.line
      case "pattern": folders[index].pattern = try ConfigurationValues.pattern(value)
      case "accept-command":
        folders[index].acceptCommand = try ConfigurationValues.commandLine(value, paths: paths)
      case "after-command":
        folders[index].afterCommand = try ConfigurationValues.commandLine(value, paths: paths)
      case "notify": folders[index].notify = try ConfigurationValues.notificationMode(value)
      case "open-command":
        folders[index].openCommand = try ConfigurationValues.commandLine(value, paths: paths)
      case "command-timeout":
        folders[index].commandTimeout = .seconds(
          try ConfigurationValues.integer(
            value, in: FolderConfiguration.commandTimeoutRange, unit: "s", what: "seconds"))
      default:
        problem(
          entry.line, entry.key,
          "unknown key in [\(entry.section)]; expected one of \(ConfigurationLoader.folderKeys.joined(separator: ", "))"
        )
      }
    } catch {
      problem(entry.line, entry.key, error.message)
    }
  }
}
