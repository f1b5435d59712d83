import BatonTestSupport
import Foundation

/// Where things are when tests run: the repository, the built `baton`
/// binary, and the simulated-radio venv made by Tests/Scripts/setup.sh.
enum TestEnvironment {
  /// The repository's top folder.
  static let repository: URL = TestPaths.repository

  /// The venv's python (override with BATON_PYTHON).
  static var python: String {
    ProcessInfo.processInfo.environment["BATON_PYTHON"]
      ?? repository.appendingPathComponent(".venv/bin/python3").path
  }

  /// The `baton` executable built by `swift build` (override with BATON_BIN).
  static var batonBinary: String {
    if let path = ProcessInfo.processInfo.environment["BATON_BIN"] { return path }
    for configuration in ["debug", "release"] {
      let path = repository.appendingPathComponent(".build/\(configuration)/baton").path
      if FileManager.default.isExecutableFile(atPath: path) { return path }
    }
    return repository.appendingPathComponent(".build/debug/baton").path
  }

  /// A new empty temporary folder, removed by the caller when done.
  static func temporaryDirectory(_ label: String = "baton-test") throws -> URL {
    try TestPaths.temporaryDirectory(label)
  }
}
