import Foundation
import Testing

@testable import BatonSystem

#if canImport(Glibc)
  import Glibc
#endif

/// `FileSystem` and `sleepThread`: the path calls that used to read `errno`
/// outside BatonSystem.
@Suite struct FileSystemTests {
  @Test func linkStatusSeesTheLinkAndNamesAMissingPath() throws {
    let dir = try TestEnvironment.temporaryDirectory("file-system")
    defer { try? FileManager.default.removeItem(at: dir) }
    let target = dir.appendingPathComponent("target").path
    let link = dir.appendingPathComponent("link").path
    try Data("x".utf8).write(to: URL(fileURLWithPath: target))
    #expect(symlink(target, link) == 0)
    #expect(try FileSystem.linkStatus(target).st_mode & S_IFMT == S_IFREG)
    #expect(try FileSystem.linkStatus(link).st_mode & S_IFMT == S_IFLNK)
    #expect(throws: Errno.noEntry) { try FileSystem.linkStatus(dir.path + "/missing") }
  }

  @Test func renameMovesAndSaysWhyNot() throws {
    let dir = try TestEnvironment.temporaryDirectory("file-system")
    defer { try? FileManager.default.removeItem(at: dir) }
    let from = dir.appendingPathComponent("from").path
    let to = dir.appendingPathComponent("to").path
    try Data("x".utf8).write(to: URL(fileURLWithPath: from))
    try FileSystem.rename(from, to: to)
    #expect(FileManager.default.fileExists(atPath: to))
    #expect(throws: Errno.noEntry) { try FileSystem.rename(from, to: to) }
  }

  /// A program that cannot be run leaves this process in place, with why.
  @Test func executeReturnsWhyAProgramCannotRun() {
    #expect(FileSystem.execute(["/nonexistent/baton-editor", "note.md"]) == .noEntry)
    #expect(FileSystem.execute([]) == Errno(rawValue: EINVAL))
  }

  @Test func sleepThreadReturns() {
    sleepThread(for: .zero)
    sleepThread(for: .nanoseconds(1))
  }
}
