import Foundation
import Testing

@testable import BatonNotes
@testable import BatonSystem

#if canImport(Glibc)
  import Glibc
#endif

@Suite struct NoteWriterTests {
  /// A fresh folder (not watched) and its NotesFolder.
  private func makeFolder() throws -> (URL, NotesFolder) {
    let dir = try TestEnvironment.temporaryDirectory("baton-write")
    return (dir, try NotesFolder(root: dir.path))
  }

  private func contents(_ dir: URL, _ relative: String) -> [UInt8]? {
    FileManager.default.contents(atPath: dir.appendingPathComponent(relative).path).map {
      Array($0)
    }
  }

  private func listing(_ dir: URL) -> [String] {
    (FileManager.default.subpaths(atPath: dir.path) ?? []).sorted()
  }

  @Test func writesUnchangedAndConflictCopies() throws {
    let (dir, folder) = try makeFolder()
    defer { try? FileManager.default.removeItem(at: dir) }
    let v1 = Array("# Groceries\nmilk\n".utf8)
    let v2 = Array("# Groceries\nmilk\neggs\n".utf8)
    #expect(
      try folder.writeNote("Groceries.md", bytes: v1, replacing: nil, peer: "bob")
        == .written(relativePath: "Groceries.md"))
    #expect(contents(dir, "Groceries.md") == v1)
    #expect(
      try folder.writeNote("Groceries.md", bytes: v1, replacing: nil, peer: "bob")
        == .unchanged(relativePath: "Groceries.md"))
    #expect(
      try folder.writeNote(
        "Groceries.md", bytes: v2, replacing: ContentHash(of: v1), peer: "bob")
        == .written(relativePath: "Groceries.md"))
    #expect(contents(dir, "Groceries.md") == v2)
    #expect(folder.indexEntries().map(\.hash) == [ContentHash(of: v2)])

    // A local edit the peer did not know about: the incoming note goes to a
    // conflict copy, the local file stays as it is.
    let local = Array("# Groceries\nlocal edit\n".utf8)
    try Data(local).write(to: dir.appendingPathComponent("Groceries.md"))
    let incoming = Array("# Groceries\nfrom bob\n".utf8)
    let outcome = try folder.writeNote(
      "Groceries.md", bytes: incoming, replacing: ContentHash(of: v2), peer: "Bob's Mac")
    guard case .conflictCopy(let copy) = outcome else {
      Issue.record("expected a conflict copy, got \(outcome)")
      return
    }
    #expect(copy.hasPrefix("Groceries.conflict-Bob_s_Mac-"))
    #expect(copy.hasSuffix("Z.md"))
    #expect(contents(dir, "Groceries.md") == local)
    #expect(contents(dir, copy) == incoming)
    // Expecting no file where one exists is a conflict too; a second copy
    // in the same second gets its own name.
    let again = try folder.writeNote(
      "Groceries.md", bytes: Array("# other\n".utf8), replacing: nil, peer: "Bob's Mac")
    guard case .conflictCopy(let second) = again else {
      Issue.record("expected a conflict copy, got \(again)")
      return
    }
    #expect(second != copy)
    #expect(contents(dir, "Groceries.md") == local)
    // No temporary files left behind; the trash holds v1, which v2 replaced,
    // and nothing of the conflicts (they replaced nothing).
    #expect(listing(dir).allSatisfy { !$0.hasPrefix(".") || $0.hasPrefix(".baton-trash") })
    #expect(folder.trashEntries().map(\.size) == [v1.count])
  }

  @Test func createsSubfoldersAndKeepsTheModeOfAReplacedFile() throws {
    let (dir, folder) = try makeFolder()
    defer { try? FileManager.default.removeItem(at: dir) }
    let bytes = Array("# deep\n".utf8)
    #expect(
      try folder.writeNote("a/b/c/deep.md", bytes: bytes, replacing: nil, peer: "p")
        == .written(relativePath: "a/b/c/deep.md"))
    #expect(contents(dir, "a/b/c/deep.md") == bytes)
    let path = dir.appendingPathComponent("a/b/c/deep.md").path
    chmod(path, 0o600)
    _ = try folder.writeNote(
      "a/b/c/deep.md", bytes: Array("# v2\n".utf8), replacing: ContentHash(of: bytes), peer: "p")
    var info = stat()
    stat(path, &info)
    #expect(info.st_mode & 0o777 == 0o600)
    #expect(try folder.readNote("a/b/c/deep.md") == Array("# v2\n".utf8))
  }

  /// A new note gets 0666 less the umask (the user unit's 0077 gives 0600),
  /// not a fixed 0644, and a new folder 0777 less it; an overwrite keeps the replaced file's read and
  /// write bits but never its execute, set-id or sticky bits.
  @Test func newNotesFollowTheUmaskAndOverwritesDropExecuteBits() throws {
    let (dir, folder) = try makeFolder()
    defer { try? FileManager.default.removeItem(at: dir) }
    func mode(_ relative: String) -> mode_t {
      var info = stat()
      stat(dir.appendingPathComponent(relative).path, &info)
      return info.st_mode & 0o7777
    }
    // umask is the process's: other tests running meanwhile create their
    // files narrower for a moment, which none of them checks.
    let old = umask(0o077)
    let written = Result { try folder.writeNote("new.md", bytes: Array("# n\n".utf8), replacing: nil, peer: "p") }
    umask(0o002)
    let shared = Result { try folder.writeNote("team/t.md", bytes: Array("# t\n".utf8), replacing: nil, peer: "p") }
    umask(old)
    #expect(try written.get() == .written(relativePath: "new.md"))
    #expect(mode("new.md") == 0o600)
    // Folders too: 0777 less the umask (a group-shared umask keeps group write).
    #expect(try shared.get() == .written(relativePath: "team/t.md"))
    #expect(mode("team") == 0o775)
    #expect(mode("team/t.md") == 0o664)

    let bytes = Array("# x\n".utf8)
    _ = try folder.writeNote("x.md", bytes: bytes, replacing: nil, peer: "p")
    chmod(dir.appendingPathComponent("x.md").path, 0o4775)
    _ = try folder.writeNote(
      "x.md", bytes: Array("# x2\n".utf8), replacing: ContentHash(of: bytes), peer: "p")
    #expect(mode("x.md") == 0o664)
  }

  @Test(arguments: [
    "/tmp/abs.md", "../escape.md", "a/../../escape.md", "a//b.md", "", "nul\u{0}.md",
    "ctl\u{1B}.md", String(repeating: "y", count: 256) + ".md", ".hidden.md", "x.md~", "4913",
    "#x.md#", "x.swp", "notes.txt",
  ])
  func refusesUntrustedPaths(_ path: String) throws {
    let (dir, folder) = try makeFolder()
    defer { try? FileManager.default.removeItem(at: dir) }
    #expect(throws: NotesError.self) {
      try folder.writeNote(path, bytes: Array("# x\n".utf8), replacing: nil, peer: "p")
    }
    #expect(listing(dir).isEmpty)
  }

  @Test func refusesPathsThroughSymlinks() throws {
    let (dir, folder) = try makeFolder()
    defer { try? FileManager.default.removeItem(at: dir) }
    let outside = try TestEnvironment.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: outside) }
    let fm = FileManager.default
    try fm.createSymbolicLink(
      atPath: dir.appendingPathComponent("out").path, withDestinationPath: outside.path)
    try fm.createDirectory(
      at: dir.appendingPathComponent("real"), withIntermediateDirectories: true)
    try fm.createSymbolicLink(
      atPath: dir.appendingPathComponent("real/inner").path, withDestinationPath: outside.path)
    try Data("# t\n".utf8).write(to: outside.appendingPathComponent("t.md"))
    try fm.createSymbolicLink(
      atPath: dir.appendingPathComponent("link.md").path,
      withDestinationPath: outside.appendingPathComponent("t.md").path)
    for path in ["out/x.md", "real/inner/x.md", "out/new/x.md", "link.md"] {
      do {
        _ = try folder.writeNote(path, bytes: Array("# x\n".utf8), replacing: nil, peer: "p")
        Issue.record("wrote through a symlink: \(path)")
      } catch let error as NotesError {
        guard case .symlinkInPath = error else {
          Issue.record("wrong error for \(path): \(error)")
          continue
        }
        #expect(error.description.contains("symlink"))
      }
    }
    #expect(throws: NotesError.self) { try folder.readNote("link.md") }
    #expect(listing(outside) == ["t.md"])
    #expect(contents(outside, "t.md") == Array("# t\n".utf8))
  }

  @Test func refusesNotesOverTheLimitOrNotUTF8() throws {
    let dir = try TestEnvironment.temporaryDirectory("baton-write")
    defer { try? FileManager.default.removeItem(at: dir) }
    let folder = try NotesFolder(root: dir.path, maximumNoteSize: 100)
    #expect(throws: NotesError.tooLarge(path: "big.md", size: 101, maximum: 100)) {
      try folder.writeNote(
        "big.md", bytes: [UInt8](repeating: 65, count: 101), replacing: nil, peer: "p")
    }
    #expect(throws: NotesError.self) {
      try folder.writeNote("bad.md", bytes: [0xFF, 0xFE], replacing: nil, peer: "p")
    }
  }

  /// Disk full and a read-only folder, on small tmpfs mounts (root only;
  /// otherwise a folder without write permission stands in for read-only).
  @Test func diskFullAndReadOnlyAreClearRetryableErrors() throws {
    let dir = try TestEnvironment.temporaryDirectory("baton-full")
    defer { try? FileManager.default.removeItem(at: dir) }
    let original = Array("# original\n".utf8)
    let incoming = Array(("# incoming\n" + String(repeating: "x", count: 200_000)).utf8)
    let isRoot = getuid() == 0
    if isRoot {
      #expect(
        try runProgram("/bin/mount", ["-t", "tmpfs", "-o", "size=64k", "tmpfs", dir.path]) == 0)
    }
    defer { if isRoot { _ = try? runProgram("/bin/umount", [dir.path]) } }
    if isRoot {
      try Data(original).write(to: dir.appendingPathComponent("n.md"))
      let folder = try NotesFolder(root: dir.path)
      do {
        _ = try folder.writeNote(
          "n.md", bytes: incoming, replacing: ContentHash(of: original), peer: "p")
        Issue.record("a 200 kB note fit on a 64 kB disk")
      } catch let error as NotesError {
        #expect(error == .diskFull(path: "n.md"))
        #expect(error.isRetryable)
        #expect(error.description.contains("no space left"))
      }
      #expect(contents(dir, "n.md") == original)
      #expect(listing(dir) == ["n.md"])
      #expect(folder.indexEntries().isEmpty)
      #expect(try runProgram("/bin/mount", ["-o", "remount,ro", dir.path]) == 0)
    } else {
      try Data(original).write(to: dir.appendingPathComponent("n.md"))
      chmod(dir.path, 0o555)
    }
    defer { chmod(dir.path, 0o755) }
    let folder = try NotesFolder(root: dir.path)
    do {
      _ = try folder.writeNote(
        "n.md", bytes: Array("# small\n".utf8), replacing: ContentHash(of: original), peer: "p")
      Issue.record("wrote into a read-only folder")
    } catch let error as NotesError {
      guard case .readOnly = error else {
        Issue.record("wrong error \(error)")
        return
      }
      #expect(error.isRetryable)
      #expect(error.description.contains("read-only"))
    }
    #expect(contents(dir, "n.md") == original)
  }
}

@Suite struct ConflictCopyBoundTests {
  /// A peer that keeps sending versions of a note that conflict with a local
  /// edit gets at most `ConflictCopyBudget.defaultLimit` copies of it in an
  /// hour; later versions replace the newest copy, the local note is kept.
  @Test func conflictCopiesOfOneNoteAreBoundedPerHour() throws {
    let dir = try TestEnvironment.temporaryDirectory("baton-write")
    defer { try? FileManager.default.removeItem(at: dir) }
    let folder = try NotesFolder(root: dir.path)
    let local = Array("# Groceries\nlocal edit\n".utf8)
    try Data(local).write(to: dir.appendingPathComponent("Groceries.md"))
    let limit = ConflictCopyBudget.defaultLimit
    var copies: [String] = []
    var last: [UInt8] = []
    for i in 0..<(limit + 15) {
      last = Array("# Groceries\nfrom the flood \(i)\n".utf8)
      let outcome = try folder.writeNote(
        "Groceries.md", bytes: last, replacing: nil, peer: "flood")
      guard case .conflictCopy(let copy) = outcome else {
        Issue.record("expected a conflict copy, got \(outcome)")
        return
      }
      copies.append(copy)
    }
    let names = (try FileManager.default.contentsOfDirectory(atPath: dir.path)).filter {
      $0.contains(".conflict-")
    }
    #expect(names.count == limit)
    #expect(Set(copies).count == limit)
    #expect(
      FileManager.default.contents(atPath: dir.appendingPathComponent("Groceries.md").path)
        .map { Array($0) } == local)
    // The newest incoming bytes are kept, in the most recent copy; each
    // version a replacement overwrote is in the trash, so no byte is lost.
    #expect(
      FileManager.default.contents(atPath: dir.appendingPathComponent(copies.last!).path)
        .map { Array($0) } == last)
    let trashed = folder.trashEntries()
    #expect(trashed.count == 15, "\(trashed)")
    #expect(trashed.allSatisfy { $0.reason == .overwritten }, "\(trashed)")
    // Another note has its own bound.
    try Data(local).write(to: dir.appendingPathComponent("Other.md"))
    guard
      case .conflictCopy(let other) = try folder.writeNote(
        "Other.md", bytes: Array("x\n".utf8), replacing: nil, peer: "flood")
    else { Issue.record("expected a conflict copy"); return }
    #expect(other.hasPrefix("Other.conflict-flood-"))
  }

  @Test func theBudgetStartsAgainAfterAnHour() {
    let budget = ConflictCopyBudget(limit: 2, period: 3600)
    #expect(budget.decide("a.md", now: 1000) == .newCopy)
    budget.recordCopy("a.md", copyPath: "a.conflict-1.md", now: 1000)
    #expect(budget.decide("a.md", now: 1001) == .newCopy)
    budget.recordCopy("a.md", copyPath: "a.conflict-2.md", now: 1001)
    #expect(budget.decide("a.md", now: 1002) == .replace("a.conflict-2.md", firstTime: true))
    #expect(budget.decide("a.md", now: 1003) == .replace("a.conflict-2.md", firstTime: false))
    #expect(budget.decide("b.md", now: 1003) == .newCopy)
    #expect(budget.decide("a.md", now: 1000 + 3601) == .newCopy)
  }
}
