import BatonHandoff
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// What a run of the `baton` binary printed and how it exited.
struct BatonResult: Sendable {
  var status: Int32
  var stdout: String
  var stderr: String
}

/// A private world for running the built `baton` binary: its own HOME and
/// XDG directories, a notes folder and a valid key file.
final class BatonSandbox: Sendable {
  let directory: URL
  let environment: [String: String]
  /// Simulated radios started for this sandbox, stopped with it.
  private let radios = Mutex<[SimulatedRadio]>([])

  var path: String { directory.path }
  var configDirectory: String { path + "/config/baton" }
  var configFile: String { configDirectory + "/baton.conf" }
  var keyFile: String { configDirectory + "/key" }
  var notes: String { path + "/notes" }
  var socketPath: String { path + "/run/baton/control" }

  init() throws {
    directory = try TestEnvironment.temporaryDirectory("baton-cli")
    var environment = ProcessInfo.processInfo.environment
    environment["HOME"] = directory.path
    environment["XDG_CONFIG_HOME"] = directory.path + "/config"
    environment["XDG_STATE_HOME"] = directory.path + "/state"
    environment["XDG_RUNTIME_DIR"] = directory.path + "/run"
    environment["NOTIFY_SOCKET"] = nil
    self.environment = environment
    let manager = FileManager.default
    try manager.createDirectory(
      atPath: directory.path + "/config/baton", withIntermediateDirectories: true)
    try manager.createDirectory(atPath: directory.path + "/run", withIntermediateDirectories: true)
    try manager.createDirectory(
      atPath: directory.path + "/notes", withIntermediateDirectories: true)
    try GroupKey.generate().fileText.write(toFile: keyFile, atomically: false, encoding: .utf8)
    chmod(keyFile, 0o600)
  }

  func write(_ text: String, to file: String) throws {
    try text.write(toFile: file, atomically: true, encoding: .utf8)
  }

  /// Runs `baton arguments` to completion.
  func run(_ arguments: [String], environment extra: [String: String] = [:]) throws -> BatonResult {
    let errorFile = path + "/stderr-\(UUID().uuidString.prefix(8))"
    let child = try ChildProcess(
      TestEnvironment.batonBinary, arguments, stderrPath: errorFile,
      environment: environment.merging(extra) { $1 })
    var output: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while let fd = child.stdoutFD {
      let n = read(fd, &buffer, buffer.count)
      if n > 0 {
        output += buffer[..<n]
      } else if n == 0 || errno != EINTR {
        break
      }
    }
    let status = child.wait()
    let errors = (try? String(contentsOfFile: errorFile, encoding: .utf8)) ?? ""
    unlink(errorFile)
    return BatonResult(
      status: status, stdout: String(decoding: output, as: UTF8.self), stderr: errors)
  }

  /// A fresh simulated radio with one controller, kept until the sandbox
  /// goes away.
  func radio() throws -> SimulatedRadio {
    let radio = try SimulatedRadio(controllers: 1)
    radios.withLock { $0.append(radio) }
    return radio
  }

  /// Starts `baton agent arguments` in the background, stderr to `log`.
  func startAgent(_ arguments: [String], log: String, environment extra: [String: String] = [:])
    throws -> ChildProcess
  {
    try ChildProcess(
      TestEnvironment.batonBinary, ["agent"] + arguments, captureStdout: false, stderrPath: log,
      environment: environment.merging(extra) { $1 })
  }

  func contents(_ file: String) -> String {
    (try? String(contentsOfFile: file, encoding: .utf8)) ?? ""
  }

  deinit {
    for radio in radios.withLock({ $0 }) { radio.stop() }
    try? FileManager.default.removeItem(at: directory)
  }
}
