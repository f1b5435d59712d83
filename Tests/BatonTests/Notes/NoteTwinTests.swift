import Foundation
import Testing

@testable import BatonNotes
@testable import BatonSystem

/// A peer's note whose name differs from a note here only in letter case or
/// Unicode normalisation is refused (issue 31): the two could not be told
/// apart, and are one file on a case-insensitive file system.
@Suite struct NoteTwinTests {
  /// A folder holding `existing` (indexed, as at start), and its NotesFolder.
  private func folder(with existing: [String]) throws -> (URL, NotesFolder) {
    let dir = try TestEnvironment.temporaryDirectory("baton-twins")
    for path in existing {
      let url = dir.appendingPathComponent(path)
      try FileManager.default.createDirectory(
        at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
      try Data("mine\n".utf8).write(to: url)
    }
    let folder = try NotesFolder(root: dir.path)
    _ = try folder.buildIndex()
    return (dir, folder)
  }

  /// Every file and folder, by its bytes (FileManager would compare
  /// canonically equivalent names as equal).
  private func listing(_ dir: URL) -> [[UInt8]] {
    (FileManager.default.subpaths(atPath: dir.path) ?? []).map { Array($0.utf8) }.sorted {
      $0.lexicographicallyPrecedes($1)
    }
  }

  @Test(arguments: [
    ("notes.md", "Notes.md"),
    ("Straße.md", "STRASSE.md"),
    ("Cr\u{E9}me.md", "Cre\u{301}me.md"),  // composed here, decomposed from the peer
    ("Cre\u{301}me.md", "Cr\u{E9}me.md"),
    ("work/plan.md", "Work/Plan.md"),
  ])
  func aTwinOfANoteHereIsRefused(existing: String, incoming: String) throws {
    let (dir, folder) = try folder(with: [existing])
    defer { try? FileManager.default.removeItem(at: dir) }
    let before = listing(dir)
    do {
      _ = try folder.writeNote(incoming, bytes: Array("theirs\n".utf8), replacing: nil, peer: "bob")
      Issue.record("wrote \(incoming.debugDescription) beside \(existing.debugDescription)")
    } catch {
      let message = "\(error)"
      #expect(
        message.contains("differs only in letter case or Unicode normalisation"), "\(message)")
      #expect(message.contains(NotesError.quoted(existing)) && message.contains("rename one"))
    }
    #expect(listing(dir) == before)  // not even a folder made
    #expect(folder.refusal(of: incoming) == nil)  // a names policy: declined only on writing
  }

  /// The note itself, and notes that only share letters, are written.
  @Test func theNoteItselfAndOtherNamesAreWritten() throws {
    let (dir, folder) = try folder(with: ["notes.md", "A.md", "a.md"])
    defer { try? FileManager.default.removeItem(at: dir) }
    let theirs = Array("theirs\n".utf8)
    let mine = ContentHash(of: Array("mine\n".utf8))
    #expect(
      try folder.writeNote("notes.md", bytes: theirs, replacing: mine, peer: "bob")
        == .written(relativePath: "notes.md"))
    // Twins made here by the user: each is still its own note.
    #expect(
      try folder.writeNote("A.md", bytes: theirs, replacing: mine, peer: "bob")
        == .written(relativePath: "A.md"))
    #expect(
      try folder.writeNote("notes2.md", bytes: theirs, replacing: nil, peer: "bob")
        == .written(relativePath: "notes2.md"))
  }

  /// Two twins in one batch: the first is written, the second refused.
  @Test func twinsInOneBatch() throws {
    let (dir, folder) = try folder(with: [])
    defer { try? FileManager.default.removeItem(at: dir) }
    let results = folder.writeNotes([
      NoteWrite(relativePath: "Plan.md", bytes: Array("1\n".utf8), expected: nil, peer: "bob"),
      NoteWrite(relativePath: "plan.md", bytes: Array("2\n".utf8), expected: nil, peer: "bob"),
    ])
    #expect((try? results[0].get()) == .written(relativePath: "Plan.md"))
    guard case .failure(let error) = results[1] else {
      Issue.record("both twins written")
      return
    }
    #expect("\(error)".contains("\"Plan.md\" is here"))
    #expect(listing(dir) == [Array("Plan.md".utf8)])
  }

  /// A rename that changes only the case is no twin of itself; a rename
  /// onto another note's twin is refused.
  @Test func renames() throws {
    let (dir, folder) = try folder(with: ["a.md", "b.md"])
    defer { try? FileManager.default.removeItem(at: dir) }
    let mine = ContentHash(of: Array("mine\n".utf8))
    #expect(try folder.renameNote("a.md", to: "A.md", expected: mine) == .moved)
    #expect(throws: NotesError.self) { try folder.renameNote("b.md", to: "A.md", expected: mine) }
    #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent("b.md").path))
  }

  @Test func foldingIsNFCAndCaseFolding() {
    #expect(NoteNames.folded("Straße.md") == NoteNames.folded("STRASSE.md"))
    #expect(NoteNames.folded("ΟΔΟΣ.md") == NoteNames.folded("οδος.md"))
    #expect(NoteNames.folded("Cr\u{E9}me.md") == NoteNames.folded("CRE\u{301}ME.md"))
    #expect(NoteNames.folded("a.md") != NoteNames.folded("b.md"))
  }
}
