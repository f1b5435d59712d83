import Foundation

/// Where the tests and the benchmarks find things: the repository they were
/// built from, and fresh temporary folders.
package enum TestPaths {
  /// The repository's top folder (this file is
  /// Sources/BatonTestSupport/TestPaths.swift).
  package static let repository: URL = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

  /// A new empty folder named `label-XXXXXXXX` in the temporary folder
  /// (TMPDIR), removed by the caller when done.
  package static func temporaryDirectory(_ label: String) throws -> URL {
    let url = FileManager.default.temporaryDirectory
      .appendingPathComponent("\(label)-\(UUID().uuidString.prefix(8))")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
  }
}
