import Foundation
import Testing

@testable import BatonNotes

#if canImport(Glibc)
  import Glibc
#endif

/// A writer process (`baton-bench notes --write-loop`) rewriting a big note
/// through `writeNote` is killed with SIGKILL at random points, many times:
/// the note is always one complete version, never a partial one, and no
/// leftover ever counts as a note.
@Suite struct NoteCrashTests {
  static let size = 400_000

  /// The bytes `baton-bench` writes as version `n` (NotesBenchmark.version).
  static func version(_ n: Int) -> [UInt8] {
    let letter = UInt8(ascii: "a") + UInt8(n % 26)
    return Array("# version \(n)\n".utf8) + [UInt8](repeating: letter, count: size)
      + [UInt8(ascii: "\n")]
  }

  /// The version number `bytes` claims, if it is exactly that version.
  static func completeVersion(_ bytes: [UInt8]) -> Int? {
    guard let newline = bytes.firstIndex(of: UInt8(ascii: "\n")) else { return nil }
    let header = String(decoding: bytes[..<newline], as: UTF8.self)
    guard header.hasPrefix("# version "), let n = Int(header.dropFirst(10)) else { return nil }
    return version(n) == bytes ? n : nil
  }

  @Test func sigkilledWriterNeverLeavesAPartialNote() throws {
    let bench = TestEnvironment.benchBinary
    #expect(
      FileManager.default.isExecutableFile(atPath: bench),
      "build baton-bench first (swift build)")
    let dir = try TestEnvironment.temporaryDirectory("baton-crash")
    defer { try? FileManager.default.removeItem(at: dir) }
    let note = dir.appendingPathComponent("big.md")
    try Data(NoteCrashTests.version(0)).write(to: note)

    var generator = SystemRandomNumberGenerator()
    var versionsSeen: Set<Int> = [0]
    var trashedSeen = 0
    let rounds = 50
    for _ in 0..<rounds {
      let child = try ChildProcess(
        bench,
        ["notes", "--write-loop", dir.path, "big.md", "--size", "\(NoteCrashTests.size)"],
        captureStdout: true)
      // After its first complete write, kill it at a random point.
      #expect(child.readLine() == "READY")
      usleep(UInt32.random(in: 0...20_000, using: &generator))
      child.signal(SIGKILL)
      #expect(child.wait() == 128 + SIGKILL)
      let bytes = try #require(FileManager.default.contents(atPath: note.path))
      let n = NoteCrashTests.completeVersion(Array(bytes))
      #expect(n != nil, "partial note: \(bytes.count) bytes")
      if let n { versionsSeen.insert(n) }
      // Only dotfile temporaries may be left, and none is a note.
      let names = try FileManager.default.contentsOfDirectory(atPath: dir.path)
      let noteNames = NoteNames()
      #expect(names.filter { noteNames.isNote($0) } == ["big.md"])
      #expect(names.allSatisfy { $0 == "big.md" || $0.hasPrefix(".") })
      // Every version the writes replaced is in the trash, each complete.
      let trash = dir.appendingPathComponent(".baton-trash")
      for path in FileManager.default.subpaths(atPath: trash.path) ?? []
      where path.hasSuffix(".md") {
        let kept = FileManager.default.contents(atPath: trash.appendingPathComponent(path).path)
        #expect(kept.map { NoteCrashTests.completeVersion(Array($0)) != nil } ?? true, "\(path)")
        trashedSeen += 1
      }
    }
    #expect(trashedSeen > 0)
    // Every round wrote at least one version before its kill.
    #expect(versionsSeen.count > rounds, "versions seen: \(versionsSeen.count)")
    // The next start clears the dead writers' temporaries.
    let folder = try NotesFolder(root: dir.path)
    let entries = try folder.buildIndex()
    #expect(entries.map(\.relativePath) == ["big.md"])
    #expect(
      try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted()
        == [".baton-trash", "big.md"])
  }
}
