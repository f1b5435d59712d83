import Foundation
import Testing

@testable import BatonNotes
@testable import BatonSystem

#if canImport(Glibc)
  import Glibc
#endif

/// Issue 30, versions on overwrite: the bytes a peer's version replaces go
/// to the trash first, `restoreNote` puts one back as a local save, and the
/// trash keeps to `trash-size`, oldest first.
@Suite struct NoteVersionTests {
  private func makeFolder(trashSize: Int = NotesFolder.defaultTrashSize) throws -> (URL, NotesFolder) {
    let dir = try TestEnvironment.temporaryDirectory("baton-versions")
    return (dir, try NotesFolder(root: dir.path, trashSize: trashSize))
  }

  private func write(_ dir: URL, _ relative: String, _ text: String) throws {
    try FolderFiles.write(dir, relative, text)
  }

  private func text(_ dir: URL, _ relative: String) -> String? { FolderFiles.text(dir, relative) }

  private func hash(_ text: String) -> ContentHash { ContentHash(of: Array(text.utf8)) }
  private var today: String { NoteWriter.day(NoteWriter.wallClock()) }

  @Test func aPeersVersionKeepsTheOneItReplacesInTheTrash() throws {
    let (dir, folder) = try makeFolder()
    defer { try? FileManager.default.removeItem(at: dir) }
    try write(dir, "a/n.md", "# N\nmine\n")
    #expect(
      try folder.writeNote("a/n.md", bytes: Array("# N\ntheirs\n".utf8), replacing: hash("# N\nmine\n"), peer: "b")
        == .written(relativePath: "a/n.md"))
    #expect(text(dir, "a/n.md") == "# N\ntheirs\n")
    #expect(text(dir, ".baton-trash/\(today)/a/n.md") == "# N\nmine\n")
    // Again, in a batch: numbered, nothing in the trash replaced.
    let results = folder.writeNotes([
      NoteWrite(relativePath: "a/n.md", bytes: Array("# N\nthird\n".utf8), expected: hash("# N\ntheirs\n"), peer: "b")
    ])
    #expect((try? results[0].get()) == .written(relativePath: "a/n.md"))
    #expect(text(dir, ".baton-trash/\(today)/a/n-2.md") == "# N\ntheirs\n")
    #expect(text(dir, ".baton-trash/\(today)/a/n.md") == "# N\nmine\n")
    #expect(
      folder.trashEntries() == [
        NoteTrashEntry(day: today, path: "a/n.md", trashPath: ".baton-trash/\(today)/a/n.md", size: 9, reason: .overwritten),
        NoteTrashEntry(day: today, path: "a/n.md", trashPath: ".baton-trash/\(today)/a/n-2.md", size: 11, reason: .overwritten),
      ])
    // A new note replaces nothing; an unexpected local version is not
    // replaced (a conflict copy), so nothing goes to the trash for either.
    _ = try folder.writeNote("new.md", bytes: Array("New\n".utf8), replacing: nil, peer: "b")
    try write(dir, "a/n.md", "# N\nedited here\n")
    if case .conflictCopy = try folder.writeNote(
      "a/n.md", bytes: Array("# N\nfourth\n".utf8), replacing: hash("# N\nthird\n"), peer: "b")
    {} else { Issue.record("expected a conflict copy") }
    #expect(folder.trashEntries().count == 2)
    #expect(text(dir, "a/n.md") == "# N\nedited here\n")
  }

  @Test func aDeletionIsListedAsOneUnderItsOwnPath() throws {
    let (dir, folder) = try makeFolder()
    defer { try? FileManager.default.removeItem(at: dir) }
    try write(dir, "d.md", "D\n")
    _ = try folder.trashNote("d.md", expected: hash("D\n"))
    try write(dir, "d.md", "D again\n")
    _ = try folder.trashNote("d.md", expected: hash("D again\n"))
    #expect(folder.trashEntries().map { [$0.path, $0.trashPath, $0.reason.rawValue] } == [
      ["d.md", ".baton-trash/\(today)/d.md", "deleted"],
      ["d.md", ".baton-trash/\(today)/d-2.md", "deleted"],
    ])
  }

  @Test func restoreBringsBackTheNewestVersionAndKeepsTheOneItReplaces() throws {
    let (dir, folder) = try makeFolder()
    defer { try? FileManager.default.removeItem(at: dir) }
    try write(dir, "n.md", "v1\n")
    _ = try folder.writeNote("n.md", bytes: Array("v2\n".utf8), replacing: hash("v1\n"), peer: "b")
    _ = try folder.writeNote("n.md", bytes: Array("v3\n".utf8), replacing: hash("v2\n"), peer: "b")
    let old = ".baton-trash/2020-01-01"
    try write(dir, "\(old)/n.md", "v0\n")

    let outcome = try folder.restoreNote("n.md")
    #expect(outcome.day == today && outcome.trashPath == ".baton-trash/\(today)/n-2.md")
    #expect(outcome.replacedTrashPath == ".baton-trash/\(today)/n-3.md" && !outcome.unchanged)
    #expect(text(dir, "n.md") == "v2\n")
    #expect(text(dir, ".baton-trash/\(today)/n-3.md") == "v3\n")
    // Again: the newest version is now the one just replaced (an undo).
    _ = try folder.restoreNote("n.md")
    #expect(text(dir, "n.md") == "v3\n")
    // A given day; a note with none there.
    #expect(try folder.restoreNote("n.md", day: "2020-01-01").trashPath == "\(old)/n.md")
    #expect(text(dir, "n.md") == "v0\n")
    #expect(try folder.restoreNote("n.md", day: "2020-01-01").unchanged)
    #expect(throws: NotesError.self) { try folder.restoreNote("n.md", day: "2021-01-01") }
    #expect(throws: NotesError.self) { try folder.restoreNote("other.md") }
    #expect(throws: NotesError.self) { try folder.restoreNote("../x.md") }
    // A restore into an absent note (deleted, then restored).
    _ = try folder.trashNote("n.md", expected: hash("v0\n"))
    let back = try folder.restoreNote("n.md")
    #expect(back.replacedTrashPath == nil && text(dir, "n.md") == "v0\n")
  }

  @Test func theSizeCapRemovesTheOldestVersionsFirst() throws {
    let (dir, folder) = try makeFolder(trashSize: 100)
    defer { try? FileManager.default.removeItem(at: dir) }
    let fill = String(repeating: "x", count: 39) + "\n"  // 40 bytes
    let now = NoteWriter.wallClock()
    let (first, second) = (NoteWriter.day(now - 2 * 86_400), NoteWriter.day(now - 86_400))
    try write(dir, ".baton-trash/\(first)/sub/old.md", fill)
    try write(dir, ".baton-trash/\(second)/older-day-2.md", fill)
    try write(dir, ".baton-trash/mine/kept.md", fill)  // not a day folder: not counted
    try write(dir, "n.md", fill)
    // 80 bytes in the trash: under the cap.
    #expect(folder.purgeTrash() == 0)
    #expect(folder.trashEntries().count == 2)
    // 120 with the overwritten version, over the cap: the oldest (`first`)
    // goes, and its emptied folders (80 left: at most nine tenths).
    _ = try folder.writeNote("n.md", bytes: Array("y\n".utf8), replacing: hash(fill), peer: "b")
    #expect(folder.trashEntries().map(\.trashPath) == [
      ".baton-trash/\(today)/n.md", ".baton-trash/\(second)/older-day-2.md",
    ])
    #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent(".baton-trash/\(first)").path))
    #expect(text(dir, ".baton-trash/mine/kept.md") == fill)
    // Within a day, the first in goes first.
    _ = try folder.writeNote("n.md", bytes: Array(fill.utf8), replacing: hash("y\n"), peer: "b")
    _ = try folder.writeNote("n.md", bytes: Array("z\n".utf8), replacing: hash(fill), peer: "b")
    #expect(folder.trashEntries().map(\.trashPath) == [
      ".baton-trash/\(today)/n.md", ".baton-trash/\(today)/n-2.md", ".baton-trash/\(today)/n-3.md",
    ])
    // 122 with n-3.md: the other old day went, 82 left.
    #expect(folder.trashEntries().reduce(0) { $0 + $1.size } == 82)
    _ = try folder.writeNote("n.md", bytes: Array(fill.utf8), replacing: hash("z\n"), peer: "b")
    // 82 + 2: still under; the next 40 brings it to 124: n.md (40) goes.
    _ = try folder.writeNote("n.md", bytes: Array("w\n".utf8), replacing: hash(fill), peer: "b")
    #expect(folder.trashEntries().map(\.trashPath) == [
      ".baton-trash/\(today)/n-2.md", ".baton-trash/\(today)/n-3.md",
      ".baton-trash/\(today)/n-4.md", ".baton-trash/\(today)/n-5.md",
    ])
  }
}
