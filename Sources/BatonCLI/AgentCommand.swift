import BatonAgent
import BatonBlueZ
import BatonHandoff
import BatonSystem
import FoundationEssentials

#if canImport(Glibc)
  import Glibc
#endif

/// `baton agent` (run the daemon in the foreground) and `baton check`
/// (validate and describe what the agent would do, like `sshd -t`).
enum AgentCommand {
  static func overrides(_ parsed: ParsedOptions) -> ConfigurationOverrides {
    ConfigurationOverrides(
      configFile: parsed.value("--config"), notes: parsed.value("--notes"),
      controller: parsed.value("--controller"), keyFile: parsed.value("--key-file"),
      name: parsed.value("--name"), stateDirectory: parsed.value("--state-dir"),
      hciLog: parsed.value("--hci-log"))
  }

  /// The control socket path: `--socket PATH` or the default.
  static func socketPath(_ parsed: ParsedOptions, _ paths: BatonPaths) -> String {
    if let path = parsed.value("--socket") { return paths.absolute(path) ?? path }
    return paths.defaultControlSocket
  }

  static func agent(_ arguments: [String]) -> Int32 {
    // First of all, before any thread exists: every later thread inherits
    // this mask, and only the sigwait thread takes these signals.
    SignalStream.block(UnixSignal.daemonSignals)
    SignalStream.ignoreBrokenPipe()

    var status = ExitStatus.success
    guard
      let parsed = BatonCommand.parse(
        arguments, BatonCommand.agentSpecs, command: "agent", usage: Usage.agent,
        help: Usage.agentHelp, exitStatus: &status)
    else { return status }
    if parsed.has("--verbose") { Logger.sink.threshold = .debug }
    let log = Logger(label: "agent")
    // Before the key is read: no core file or same-user debugger shows it
    // (BATON_DUMPABLE=1 keeps both, for strace or gdb; baton(1) ENVIRONMENT).
    do throws(Errno) {
      if getenv("BATON_DUMPABLE").map({ String(cString: $0) }) != "1" { try CoreDumps.disable() }
    } catch {
      log.warning("cannot keep the agent out of core dumps (prctl: \(error)); a crash may write its keys to a core file")
    }

    let paths = BatonPaths()
    let loader = ConfigurationLoader(paths: paths)
    let overrides = overrides(parsed)
    let configuration: AgentConfiguration
    let key: GroupKey?
    do {
      configuration = try loader.load(overrides)
      key = try GroupKey.loadIfPresent(contentsOfFile: configuration.keyFile)
      if key == nil {
        log.info(
          "no key file at \(configuration.keyFile): this device is in a group by pairing"
            + " ('baton pair'), or will be")
      }
      if let notice = try makeStateDirectory(configuration.stateDirectory) { log.notice(notice) }
    } catch {
      for line in "\(error)".split(separator: "\n") { log.error("\(line)") }
      return ExitStatus.failure
    }
    log.debug("configuration \(loader.configFile(overrides)), key file \(configuration.keyFile)")

    // The control socket first: a second agent is refused before it
    // touches the controller.
    let server: ControlServer
    let core: any AgentCore
    do {
      server = try ControlServer(path: socketPath(parsed, paths))
    } catch {
      log.error("\(error)")
      return ExitStatus.failure
    }
    do {
      core = try makeAgentCore(configuration: configuration, key: key, hciLog: configuration.hciLog)
    } catch {
      server.close()
      log.error("\(error)")
      return ExitStatus.failure
    }
    let daemon = AgentDaemon(
      core: core,
      settings: AgentDaemon.Settings(socketPath: server.path, configuration: configuration),
      signals: SignalStream.stream(UnixSignal.daemonSignals), server: server,
      reloadConfiguration: {
        let configuration = try loader.load(overrides)
        let key = try GroupKey.loadIfPresent(contentsOfFile: configuration.keyFile)
        try makeStateDirectory(configuration.stateDirectory)
        return (configuration, key)
      })
    return BatonCommand.runBlocking { await daemon.run() }
  }

  /// Creates the state directory (and its parents) with mode 0700; one
  /// that exists must be this user's (`FileTrust`): it holds the index, the
  /// peers seen and the counters. One of this user's that others may enter
  /// (made by `mkdir -p`, say) is closed to them: returns what was done.
  @discardableResult
  static func makeStateDirectory(_ path: String) throws -> String? {
    do {
      try FileManager.default.createDirectory(
        atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    } catch {
      throw ConfigurationError([
        ConfigurationProblem(
          file: nil, key: "state-dir",
          message: "cannot create the state directory \(path): \(describe(error))")
      ])
    }
    func refused(_ problem: String) -> ConfigurationError {
      ConfigurationError([
        ConfigurationProblem(
          file: nil, key: "state-dir", message: "the state directory \(path): \(problem)")
      ])
    }
    switch stateDirectoryState(path) {
    case .absent: throw refused("\(Errno.noEntry)")
    case .refused(let problem): throw refused(problem)
    case .fine: return nil
    case .open(let mode):
      guard chmod(path, 0o700) == 0 else {
        throw refused(
          "it is open to others (mode \(mode)) and chmod failed: \(Errno.current);"
            + " run 'chmod 700 \(path)'")
      }
      return "the state directory \(path) was mode \(mode), open to others; it is 0700 now"
    }
  }

  /// An existing state directory as the agent treats it: one of this
  /// user's that others may enter (`open`, with its mode) is closed at
  /// start; one that is not a directory, or not this user's, is refused.
  enum StateDirectoryState {
    case absent, fine
    case open(mode: String)
    case refused(String)
  }

  static func stateDirectoryState(_ path: String) -> StateDirectoryState {
    var info = stat()
    guard stat(path, &info) == 0 else {
      let error = Errno.current
      return error == .noEntry ? .absent : .refused("\(error)")
    }
    guard info.st_mode & S_IFMT == S_IFDIR else { return .refused("it is not a directory") }
    if info.st_uid == getuid() && info.st_mode & 0o077 != 0 {
      return .open(mode: String(info.st_mode & 0o777, radix: 8))
    }
    return FileTrust.problem(info, path: path, private: true).map { .refused($0) } ?? .fine
  }

  /// What `check` says of an existing state directory, without changing
  /// it: nil when it is absent or fine, else (text, whether the agent
  /// would refuse it).
  static func stateDirectoryProblem(_ path: String) -> (String, refused: Bool)? {
    switch stateDirectoryState(path) {
    case .absent, .fine: nil
    case .open(let mode):
      ("the state directory \(path) is mode \(mode), open to others; the agent makes it 0700 at start", false)
    case .refused(let problem): ("the state directory \(path): \(problem)", true)
    }
  }

  static func check(_ arguments: [String]) -> Int32 {
    var status = ExitStatus.success
    guard
      let parsed = BatonCommand.parse(
        arguments, BatonCommand.agentSpecs, command: "check", usage: Usage.check,
        help: Usage.checkHelp, exitStatus: &status)
    else { return status }
    let paths = BatonPaths()
    let loader = ConfigurationLoader(paths: paths)
    let overrides = overrides(parsed)
    let file = loader.configFile(overrides)
    let configuration: AgentConfiguration
    do {
      configuration = try loader.load(overrides)
    } catch {
      Console.error("\(error)")
      Console.error(
        "configuration \(file): \(error.problems.count) problem\(error.problems.count == 1 ? "" : "s")"
      )
      return ExitStatus.failure
    }
    var keyProblem: String?
    var keyAbsent = false
    do {
      keyAbsent = try GroupKey.loadIfPresent(contentsOfFile: configuration.keyFile) == nil
    } catch {
      keyProblem = error.description
    }
    let stateProblem = stateDirectoryProblem(configuration.stateDirectory)
    var stateNote = ""
    if let stateProblem {
      stateNote = stateProblem.refused ? " (INVALID)" : " (open: closed at start)"
    }

    let exists = FileManager.default.fileExists(atPath: file)
    var lines = [
      "configuration: \(file)\(exists ? "" : " (absent: defaults)")",
      "name: \(configuration.name)",
      "controller: \(configuration.controller) (\(configuration.controller.explanation))",
      "key file: \(configuration.keyFile)"
        + (keyAbsent
          ? " (absent: the device joins its group by pairing, 'baton pair')"
          : keyProblem == nil ? " (valid)" : " (INVALID)"),
      "state directory: \(configuration.stateDirectory)\(stateNote)",
      "advertising interval: \(configuration.advertisingInterval.wholeMilliseconds) ms",
      "address rotation: every \(configuration.addressRotation.wholeMilliseconds / 60_000) minutes",
      "maximum note size: \(configuration.maxNoteSize) bytes",
      "allowed peers: "
        + (configuration.allowedPeers.isEmpty
          ? "any peer with the group key" : configuration.allowedPeers.joined(separator: ", ")),
      "HCI log: \(configuration.hciLog ?? "none")",
      "scanning: \(configuration.scanning.rawValue) (baton(1), Scanning)",
      "control socket: \(socketPath(parsed, paths))",
    ]
    if case .bluez = configuration.controller {
      // What address the beacon goes out on is bluetoothd's choice.
      if let privacy = BluetoothdPrivacy.current() {
        lines.append(
          "adapter privacy: \(privacy)"
            + (BluetoothdPrivacy.isPrivate(privacy)
              ? " (the beacon goes out on a private address)"
              : " (\(BluetoothdPrivacy.advice(privacy)))"))
      } else {
        lines.append("adapter privacy: unknown (cannot read \(BluetoothdPrivacy.mainConf))")
      }
      // Whether bluetoothd offers the advertisement monitor (baton(1), Scanning).
      if let text = BluetoothdMainConf.current() {
        lines.append(
          "passive scanning: "
            + (BluetoothdMainConf.experimental(inMainConf: text)
              ? "on (bluetoothd's advertisement monitor: no discovery; baton status says it runs)"
              : "off (\(BluetoothdMainConf.experimentalAdvice))"))
      } else {
        lines.append("passive scanning: unknown (cannot read \(BluetoothdMainConf.path))")
      }
    }
    for folder in configuration.folders {
      lines.append(
        "folder \(folder.name): \(folder.path), notes matching \(folder.pattern), activity type \(folder.activityType)"
      )
    }
    Console.out(lines.joined(separator: "\n") + "\n")
    if let (text, _) = stateProblem { Console.error(text) }
    if let keyProblem { Console.error(keyProblem) }
    if keyProblem != nil || stateProblem?.refused == true { return ExitStatus.failure }
    Console.out("configuration OK\n")
    return ExitStatus.success
  }
}
