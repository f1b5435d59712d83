import Foundation

/// Files in a test's notes folder, by path relative to it: what the note
/// suites write and read back.
enum FolderFiles {
  /// Writes `text` at `relative` under `dir`, making its folders.
  static func write(_ dir: URL, _ relative: String, _ text: String) throws {
    let url = dir.appendingPathComponent(relative)
    try FileManager.default.createDirectory(
      at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
    try Data(text.utf8).write(to: url)
  }

  /// The text at `relative` under `dir`, or nil when there is no file.
  static func text(_ dir: URL, _ relative: String) -> String? {
    FileManager.default.contents(atPath: dir.appendingPathComponent(relative).path).map {
      String(decoding: $0, as: UTF8.self)
    }
  }
}
