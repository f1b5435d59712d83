import Foundation
import Testing

@testable import BatonNotes
@testable import BatonSystem

#if canImport(Glibc)
  import Glibc
#endif

/// The trash and renames on a real folder (baton(1), "Deletions and
/// renames"): a note deleted on a peer is moved, never unlinked, and only
/// when it holds the bytes the deletion saw; emptied folders go, others stay.
@Suite struct NoteTrashTests {
  private func makeFolder(trashDays: Int = 30) throws -> (URL, NotesFolder) {
    let dir = try TestEnvironment.temporaryDirectory("baton-trash")
    return (dir, try NotesFolder(root: dir.path, trashDays: trashDays))
  }

  private func write(_ dir: URL, _ relative: String, _ text: String) throws {
    try FolderFiles.write(dir, relative, text)
  }

  private func text(_ dir: URL, _ relative: String) -> String? { FolderFiles.text(dir, relative) }

  private func exists(_ dir: URL, _ relative: String) -> Bool {
    FileManager.default.fileExists(atPath: dir.appendingPathComponent(relative).path)
  }

  private func hash(_ text: String) -> ContentHash { ContentHash(of: Array(text.utf8)) }

  @Test func aTrashedNoteKeepsItsPathUnderTheDayAndEmptiedFoldersGo() throws {
    let (dir, folder) = try makeFolder()
    defer { try? FileManager.default.removeItem(at: dir) }
    try write(dir, "a/b/n.md", "# N\n")
    try write(dir, "a/other.md", "# Other\n")
    let day = NoteWriter.day(NoteWriter.wallClock())
    let outcome = try folder.trashNote("a/b/n.md", expected: hash("# N\n"))
    #expect(outcome == .trashed(trashPath: ".baton-trash/\(day)/a/b/n.md"))
    #expect(text(dir, ".baton-trash/\(day)/a/b/n.md") == "# N\n")
    #expect(!exists(dir, "a/b/n.md") && !exists(dir, "a/b"))
    #expect(exists(dir, "a/other.md"))  // a folder with a file in it stays

    // The same name again the same day: numbered, nothing replaced.
    try write(dir, "a/b/n.md", "# N again\n")
    #expect(
      try folder.trashNote("a/b/n.md", expected: hash("# N again\n"))
        == .trashed(trashPath: ".baton-trash/\(day)/a/b/n-2.md"))
    #expect(text(dir, ".baton-trash/\(day)/a/b/n.md") == "# N\n")
    // Moved to the trash, the folder is no longer indexed as holding notes.
    #expect(try folder.buildIndex().map(\.relativePath) == ["a/other.md"])
  }

  @Test func otherBytesOrNoFileAreNotTrashed() throws {
    let (dir, folder) = try makeFolder()
    defer { try? FileManager.default.removeItem(at: dir) }
    try write(dir, "n.md", "# N\nedited\n")
    #expect(try folder.trashNote("n.md", expected: hash("# N\n")) == .changed)
    #expect(text(dir, "n.md") == "# N\nedited\n")
    #expect(try folder.trashNote("gone.md", expected: hash("# N\n")) == .gone)
    #expect(try folder.trashNote("no/such/folder.md", expected: hash("# N\n")) == .gone)
    #expect(!exists(dir, ".baton-trash"))
  }

  @Test func dayFoldersOlderThanTheRetentionGoAndNothingElse() throws {
    let (dir, folder) = try makeFolder(trashDays: 30)
    defer { try? FileManager.default.removeItem(at: dir) }
    let now = NoteWriter.wallClock()
    let old = NoteWriter.day(now - 31 * 86_400)
    let recent = NoteWriter.day(now - 29 * 86_400)
    try write(dir, ".baton-trash/\(old)/sub/x.md", "old")
    try write(dir, ".baton-trash/\(recent)/y.md", "recent")
    try write(dir, ".baton-trash/mine/z.md", "not a day folder")
    #expect(folder.purgeTrash(now: now) == 1)
    #expect(!exists(dir, ".baton-trash/\(old)"))
    #expect(text(dir, ".baton-trash/\(recent)/y.md") == "recent")
    #expect(text(dir, ".baton-trash/mine/z.md") == "not a day folder")
  }

  @Test func aRenameMovesTheFileAndNeverReplacesOne() throws {
    let (dir, folder) = try makeFolder()
    defer { try? FileManager.default.removeItem(at: dir) }
    try write(dir, "drafts/Untitled.md", "# Plans\n")
    #expect(try folder.renameNote("drafts/Untitled.md", to: "plans/Plans.md", expected: hash("# Plans\n")) == .moved)
    #expect(text(dir, "plans/Plans.md") == "# Plans\n")
    #expect(!exists(dir, "drafts"))
    try write(dir, "taken.md", "# Taken\n")
    #expect(try folder.renameNote("plans/Plans.md", to: "taken.md", expected: hash("# Plans\n")) == .taken)
    #expect(text(dir, "taken.md") == "# Taken\n" && text(dir, "plans/Plans.md") == "# Plans\n")
    #expect(try folder.renameNote("plans/Plans.md", to: "x.md", expected: hash("# Other\n")) == .changed)
    #expect(try folder.renameNote("nothing.md", to: "x.md", expected: hash("# Plans\n")) == .gone)
  }

  @Test func theDayIsUTCAndWellFormed() {
    #expect(NoteWriter.day(0) == "1970-01-01")
    #expect(NoteWriter.day(1_764_547_199) == "2025-11-30")
    #expect(NoteWriter.isDay("2026-12-01") && !NoteWriter.isDay("2026-12-1") && !NoteWriter.isDay("mine"))
  }
}
