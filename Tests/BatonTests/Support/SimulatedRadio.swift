import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// A fresh bumble simulator process (Tests/Radio/radio.py): `count`
/// controllers on one simulated radio, each on its own TCP port. One per
/// test, stopped by PID (`stop()`, or when the test process exits, since the
/// radio also stops when its stdin closes).
final class SimulatedRadio: @unchecked Sendable {
  let process: ChildProcess
  let ports: [UInt16]

  /// The controller spec for controller `index`, as baton takes it.
  func spec(_ index: Int) -> String { "tcp:127.0.0.1:\(ports[index])" }

  init(controllers count: Int = 2, extendedAdvertising: Bool = true) throws {
    let script = TestEnvironment.repository.appendingPathComponent("Tests/Radio/radio.py").path
    process = try ChildProcess(
      TestEnvironment.python,
      [script, "--controllers", String(count)]
        + (extendedAdvertising ? [] : ["--no-extended-advertising"]))
    let line = process.readLine() ?? ""
    let words = line.split(separator: " ")
    guard words.first == "READY", words.count == count + 1 else {
      process.stop()
      throw SimulatedRadioError.didNotStart(line)
    }
    ports = words.dropFirst().compactMap { UInt16($0) }
  }

  func stop() { process.stop() }

  deinit { stop() }
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
