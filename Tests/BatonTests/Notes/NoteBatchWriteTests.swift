import Foundation
import Testing

@testable import BatonNotes
@testable import BatonSystem

/// `writeNotes`: several incoming notes with one flush, each with the same
/// outcome `writeNote` would give it, and no temporary file left behind.
@Suite struct NoteBatchWriteTests {
  @Test func batchGivesEachNoteItsOwnOutcome() throws {
    let dir = try TestEnvironment.temporaryDirectory("baton-batch")
    defer { try? FileManager.default.removeItem(at: dir) }
    let folder = try NotesFolder(root: dir.path)
    let local = Array("# Local\nmine\n".utf8)
    try Data(local).write(to: dir.appendingPathComponent("edited.md"))
    let same = Array("# Same\n".utf8)
    try Data(same).write(to: dir.appendingPathComponent("same.md"))
    var writes = (0..<50).map {
      NoteWrite(
        relativePath: "sub\($0 % 3)/n\($0).md", bytes: Array("# Note \($0)\n".utf8), expected: nil,
        peer: "bob")
    }
    writes.append(
      NoteWrite(relativePath: "edited.md", bytes: Array("# Theirs\n".utf8), expected: nil, peer: "bob"))
    writes.append(NoteWrite(relativePath: "same.md", bytes: same, expected: nil, peer: "bob"))
    writes.append(NoteWrite(relativePath: "../escape.md", bytes: [0x61], expected: nil, peer: "bob"))
    let results = folder.writeNotes(writes)
    #expect(results.count == writes.count)
    for i in 0..<50 {
      #expect(try results[i].get() == .written(relativePath: "sub\(i % 3)/n\(i).md"))
      #expect(
        FileManager.default.contents(atPath: dir.path + "/sub\(i % 3)/n\(i).md")
          == Data("# Note \(i)\n".utf8))
    }
    guard case .success(.conflictCopy(let copy)) = results[50] else {
      Issue.record("expected a conflict copy, got \(results[50])")
      return
    }
    #expect(FileManager.default.contents(atPath: dir.path + "/" + copy) == Data("# Theirs\n".utf8))
    #expect(FileManager.default.contents(atPath: dir.path + "/edited.md") == Data(local))
    #expect(try results[51].get() == .unchanged(relativePath: "same.md"))
    #expect((try? results[52].get()) == nil)
    let leftovers = (FileManager.default.subpaths(atPath: dir.path) ?? []).filter {
      ($0 as NSString).lastPathComponent.hasPrefix(NoteNames.temporaryPrefix)
    }
    #expect(leftovers.isEmpty)
    // The writes are not reported back as local saves: the index holds them.
    #expect(folder.index.entry("sub1/n1.md")?.hash == ContentHash(of: Array("# Note 1\n".utf8)))
  }
}

/// Start-up on a large folder (issue 14): files whose size, time and inode
/// match their stamps are indexed without being read; a changed one is read.
@Suite struct NoteStampTests {
  @Test func unchangedFilesAreTrustedChangedOnesReadAgain() throws {
    let dir = try TestEnvironment.temporaryDirectory("baton-stamps")
    defer { try? FileManager.default.removeItem(at: dir) }
    for i in 0..<20 {
      try Data("# Note \(i)\n".utf8).write(to: dir.appendingPathComponent("n\(i).md"))
    }
    let first = try NotesFolder(root: dir.path)
    try first.buildIndex()
    let stamps = first.takeFreshStamps()
    #expect(stamps.count == 20)
    #expect(first.takeFreshStamps().isEmpty)

    // A stamp lying about the hash proves the file was not read: the index takes it.
    let liar = ContentHash(of: Array("not what the file holds".utf8))
    var trusted = stamps.map { $0.relativePath == "n3.md" ? with($0, hash: liar) : $0 }
    // n5.md changes after its stamp: it must be read again.
    try Data("# Note 5, edited at more length\n".utf8).write(to: dir.appendingPathComponent("n5.md"))
    trusted.append(stamps.first { $0.relativePath == "n5.md" }!)
    let second = try NotesFolder(root: dir.path)
    second.trust(trusted)
    let entries = Dictionary(uniqueKeysWithValues: try second.buildIndex().map { ($0.relativePath, $0) })
    #expect(entries.count == 20)
    #expect(entries["n3.md"]?.hash == liar)
    #expect(entries["n5.md"]?.hash == ContentHash(of: Array("# Note 5, edited at more length\n".utf8)))
    #expect(second.takeFreshStamps().map(\.relativePath) == ["n5.md"])
  }

  private func with(_ stamp: NoteFileStamp, hash: ContentHash) -> NoteFileStamp {
    var copy = stamp
    copy.hash = hash
    return copy
  }
}
