import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// A fresh bumble simulator process (Tests/Radio/radio.py): `count`
/// controllers on one simulated radio, each on its own TCP port. One per
/// test, stopped by PID (`stop()`, or when the test process exits, since the
/// radio also stops when its stdin closes).
///
/// `faults` are rules for the radio's fault injection (Tests/Radio/faults.py:
/// drop, corrupt, delay, duplicate chosen HCI packets), drawn with `seed`;
/// each fault injected is one line in `faultLog`. Without `faults` the radio
/// injects none, whatever the environment says.
final class SimulatedRadio: @unchecked Sendable {
  let process: ChildProcess
  let ports: [UInt16]
  /// The fault log's path (a file in the temporary folder), when faults are on.
  let faultLog: String?

  /// The controller spec for controller `index`, as baton takes it.
  func spec(_ index: Int) -> String { "tcp:127.0.0.1:\(ports[index])" }

  /// `faultsStartOff`: the faults wait for `faultsOn()`.
  init(
    controllers count: Int = 2, extendedAdvertising: Bool = true, faults: String? = nil,
    seed: UInt64 = 1, faultsStartOff: Bool = false
  ) throws {
    let script = TestEnvironment.repository.appendingPathComponent("Tests/Radio/radio.py").path
    var arguments = [script, "--controllers", String(count), "--faults", faults ?? ""]
    if !extendedAdvertising { arguments.append("--no-extended-advertising") }
    if faultsStartOff { arguments.append("--faults-off") }
    if faults != nil {
      let log = FileManager.default.temporaryDirectory
        .appendingPathComponent("baton-faults-\(UUID().uuidString.prefix(8)).log").path
      arguments += ["--fault-seed", String(seed), "--fault-log", log]
      faultLog = log
    } else {
      faultLog = nil
    }
    process = try ChildProcess(TestEnvironment.python, arguments)
    let line = process.readLine() ?? ""
    let words = line.split(separator: " ")
    guard words.first == "READY", words.count == count + 1 else {
      process.stop()
      throw SimulatedRadioError.didNotStart(line)
    }
    ports = words.dropFirst().compactMap { UInt16($0) }
  }

  func stop() { process.stop() }

  /// Ends the faulty phase: no more faults from now on (SIGUSR1).
  func faultsOff() { process.signal(SIGUSR1) }
  /// Starts injecting faults again (SIGUSR2).
  func faultsOn() { process.signal(SIGUSR2) }

  /// The radio's switches of its faults so far, in order (true: on), as
  /// its fault log records them once made (empty without faults).
  var faultSwitches: [Bool] {
    guard let faultLog, let text = try? String(contentsOfFile: faultLog, encoding: .utf8) else {
      return []
    }
    return text.split(separator: "\n").compactMap {
      $0.hasSuffix(" faults on") ? true : $0.hasSuffix(" faults off") ? false : nil
    }
  }

  /// The faults injected so far, one line each (empty without faults).
  var injectedFaults: [String] {
    guard let faultLog, let text = try? String(contentsOfFile: faultLog, encoding: .utf8) else {
      return []
    }
    return text.split(separator: "\n").map(String.init).filter {
      !$0.contains(" faults o") && !$0.contains(" summary: ")
    }
  }

  deinit {
    stop()
    if let faultLog, ProcessInfo.processInfo.environment["BATON_KEEP_TEST_FILES"] == nil {
      try? FileManager.default.removeItem(atPath: faultLog)
    }
  }
}

enum SimulatedRadioError: Error, CustomStringConvertible {
  case didNotStart(String)
  var description: String {
    switch self {
    case .didNotStart(let line):
      "the simulated radio did not start (it printed \"\(line)\"); run Tests/Scripts/setup.sh to create the venv"
    }
  }
}
