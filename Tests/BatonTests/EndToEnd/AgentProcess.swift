import BatonHandoff
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// One `baton agent` process for end-to-end tests: its own notes folder,
/// state folder and runtime folder (for the control socket), on one
/// controller of a simulated radio.
final class AgentProcess: @unchecked Sendable {
  let name: String
  let notes: URL
  let stateDirectory: URL
  let runtimeDirectory: URL
  let logPath: String
  let keyPath: String
  /// The controller spec; may be changed before a restart.
  var controller: String
  let extraArguments: [String]
  private(set) var process: ChildProcess?

  /// Makes the folders under `base`; does not start the agent.
  init(
    name: String, base: URL, keyPath: String, controller: String, extraArguments: [String] = []
  ) throws {
    self.name = name
    let home = base.appendingPathComponent(name)
    notes = home.appendingPathComponent("notes")
    stateDirectory = home.appendingPathComponent("state")
    runtimeDirectory = home.appendingPathComponent("run")
    for url in [notes, stateDirectory, runtimeDirectory] {
      try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }
    chmod(runtimeDirectory.path, 0o700)
    logPath = home.appendingPathComponent("agent.log").path
    self.keyPath = keyPath
    self.controller = controller
    self.extraArguments = extraArguments
  }

  /// The session bus the agent is given (desktop notifications); none by default.
  var sessionBus: String?

  var environment: [String: String] {
    var env = ProcessInfo.processInfo.environment
    env["DBUS_SESSION_BUS_ADDRESS"] = sessionBus
    env["XDG_RUNTIME_DIR"] = runtimeDirectory.path
    env["XDG_CONFIG_HOME"] = notes.deletingLastPathComponent().appendingPathComponent("config").path
    return env
  }

  /// Lines for the notes folder's section (`key = value`); when set, the
  /// agent reads a configuration file with that section (`-f`) instead of
  /// taking `--notes`.
  var folderSettings: [String] = []

  /// The arguments of `baton agent`; `extraArguments` come last.
  var arguments: [String] {
    let folder =
      folderSettings.isEmpty ? ["--notes", notes.path] : ["-f", configurationPath]
    return ["agent"] + folder + [
      "--controller", controller, "--key-file", keyPath,
      "--name", name, "--state-dir", stateDirectory.path, "-v",
    ] + extraArguments
  }

  /// Where the configuration file for `folderSettings` goes.
  var configurationPath: String {
    notes.deletingLastPathComponent().appendingPathComponent("baton.conf").path
  }

  func start() throws {
    if !folderSettings.isEmpty {
      let text = (["[folder notes]", "path = \(notes.path)"] + folderSettings)
        .joined(separator: "\n") + "\n"
      try text.write(toFile: configurationPath, atomically: true, encoding: .utf8)
      chmod(configurationPath, 0o600)
    }
    let line = "=== start \(Date())\n"
    if !FileManager.default.fileExists(atPath: logPath) {
      _ = FileManager.default.createFile(atPath: logPath, contents: nil)
    }
    if let handle = FileHandle(forWritingAtPath: logPath) {
      handle.seekToEndOfFile()
      handle.write(Data(line.utf8))
      try? handle.close()
    }
    process = try ChildProcess(
      TestEnvironment.batonBinary, arguments, captureStdout: false, stdoutPath: logPath,
      stderrPath: logPath, environment: environment)
  }

  /// Takes over a process started with other arguments.
  func adopt(_ process: ChildProcess) { self.process = process }

  /// SIGTERM and wait; returns the exit code.
  @discardableResult
  func stop() -> Int32 {
    guard let process else { return 0 }
    process.stop(grace: 5)
    self.process = nil
    return process.wait()
  }

  func kill9() {
    process?.signal(SIGKILL)
    process?.wait()
    process = nil
  }

  var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

  /// The lines of the log that contain `text`: what a user reads there.
  func logLines(containing text: String) -> [String] {
    log.split(separator: "\n").filter { $0.contains(text) }.map(String.init)
  }

  /// Writes a note the way an editor would (write to a temp file, rename).
  func save(_ relativePath: String, _ text: String) throws {
    try save(relativePath, Array(text.utf8))
  }

  func save(_ relativePath: String, _ bytes: [UInt8]) throws {
    let url = notes.appendingPathComponent(relativePath)
    try FileManager.default.createDirectory(
      at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
    try Data(bytes).write(to: url, options: .atomic)
  }

  func read(_ relativePath: String) -> [UInt8]? {
    (try? Data(contentsOf: notes.appendingPathComponent(relativePath))).map { Array($0) }
  }

  /// Every regular file below the notes folder but outside its trash
  /// (relative paths, sorted).
  func files() -> [String] { allFiles().filter { !$0.hasPrefix(".baton-trash/") } }

  /// The versions in the trash (paths below the notes folder, sorted; not
  /// the day folders' `.reasons`).
  func trashFiles() -> [String] {
    allFiles().filter { $0.hasPrefix(".baton-trash/") && !$0.hasSuffix("/.reasons") }
  }

  /// Every regular file below the notes folder (relative paths, sorted).
  func allFiles() -> [String] {
    let root = notes.path
    guard let walker = FileManager.default.enumerator(atPath: root) else { return [] }
    var out: [String] = []
    while let path = walker.nextObject() as? String {
      var isDirectory: ObjCBool = false
      if FileManager.default.fileExists(atPath: root + "/" + path, isDirectory: &isDirectory),
        !isDirectory.boolValue
      {
        out.append(path)
      }
    }
    return out.sorted()
  }

  /// Runs `baton ARGS` against this agent; returns the exit code and what it
  /// printed (stdout and stderr).
  func run(_ arguments: [String]) throws -> (Int32, String) {
    let out = stateDirectory.deletingLastPathComponent().appendingPathComponent("run.out").path
    try? FileManager.default.removeItem(atPath: out)
    let child = try ChildProcess(
      TestEnvironment.batonBinary, arguments, captureStdout: false, stdoutPath: out,
      stderrPath: out, environment: environment)
    let code = child.wait()
    defer { try? FileManager.default.removeItem(atPath: out) }
    return (code, (try? String(contentsOfFile: out, encoding: .utf8)) ?? "")
  }

  /// `baton status --json` against this agent, decoded loosely.
  func status() throws -> [String: Any] {
    let out = stateDirectory.deletingLastPathComponent().appendingPathComponent("status.json").path
    let child = try ChildProcess(
      TestEnvironment.batonBinary, ["status", "--json"], captureStdout: false, stdoutPath: out,
      environment: environment)
    let code = child.wait()
    defer { try? FileManager.default.removeItem(atPath: out) }
    guard code == 0, let data = FileManager.default.contents(atPath: out),
      let object = try JSONSerialization.jsonObject(with: data) as? [String: Any]
    else { throw EndToEndError.statusFailed(name, code) }
    return object
  }
}

enum EndToEndError: Error, CustomStringConvertible {
  case statusFailed(String, Int32)
  case timedOut(String)
  var description: String {
    switch self {
    case .statusFailed(let name, let code): "baton status for \(name) exited \(code)"
    case .timedOut(let what): "timed out waiting for \(what)"
    }
  }
}

/// A group of agents on one fresh simulated radio, sharing a key file.
final class AgentGroup: @unchecked Sendable {
  let radio: SimulatedRadio
  let base: URL
  let keyPath: String
  var agents: [AgentProcess] = []

  /// `faults` (with `seed`) are the radio's fault rules (SimulatedRadio);
  /// `faultsStartOff`: they wait for `radio.faultsOn()`.
  init(
    count: Int, controllers: Int? = nil, faults: String? = nil, seed: UInt64 = 1,
    faultsStartOff: Bool = false
  ) throws {
    radio = try SimulatedRadio(
      controllers: controllers ?? count, faults: faults, seed: seed,
      faultsStartOff: faultsStartOff)
    base = try TestEnvironment.temporaryDirectory("baton-e2e")
    keyPath = base.appendingPathComponent("group.key").path
    try Self.writeKey(GroupKey.generate(), to: keyPath)
    for index in 0..<count {
      agents.append(try makeAgent(index, name: "agent\(Character(UnicodeScalar(65 + index)!))"))
    }
  }

  static func writeKey(_ key: GroupKey, to path: String) throws {
    _ = FileManager.default.createFile(atPath: path, contents: Data(key.fileText.utf8))
    chmod(path, 0o600)
  }

  func makeAgent(
    _ controllerIndex: Int, name: String, keyPath: String? = nil, extraArguments: [String] = []
  ) throws -> AgentProcess {
    try AgentProcess(
      name: name, base: base, keyPath: keyPath ?? self.keyPath,
      controller: radio.spec(controllerIndex), extraArguments: extraArguments)
  }

  func startAll() throws { for agent in agents { try agent.start() } }

  /// Logs of every agent, for failure messages.
  var logs: String {
    agents.map { "----- \($0.name) -----\n\($0.log)" }.joined(separator: "\n")
  }

  func stopAll() {
    for agent in agents { agent.stop() }
    radio.stop()
  }

  deinit {
    stopAll()
    if ProcessInfo.processInfo.environment["BATON_KEEP_TEST_FILES"] == nil {
      try? FileManager.default.removeItem(at: base)
    }
  }
}

/// Waits until `agent`'s status shows a link up with each of `peers`, by
/// name (PROTOCOL.md 6.2); false after 60 s.
func linked(_ agent: AgentProcess, to peers: Set<String>) async -> Bool {
  await eventually(60, "\(agent.name) linked with \(peers.sorted())") {
    let shown = (try? agent.status()["peers"] as? [[String: Any]]) ?? []
    let up = Set(
      shown.filter { $0["link"] as? String == "up" }.compactMap { $0["name"] as? String })
    return up.isSuperset(of: peers)
  }
}
