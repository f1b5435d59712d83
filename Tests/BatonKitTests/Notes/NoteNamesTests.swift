import Foundation
import Testing

@testable import BatonKit

@Suite struct NoteNamesTests {
  let names = NoteNames()

  @Test(arguments: [
    "note.md", "sub/note.md", "a/b/c/Groceries list.md", "Crème brûlée.md", "tag #1.md",
  ])
  func acceptsOrdinaryPaths(_ path: String) throws {
    #expect(try names.validate(path).joined(separator: "/") == path)
  }

  @Test(arguments: [
    ("", "empty"),
    ("/etc/passwd.md", "absolute"),
    ("../up.md", "`..`"),
    ("a/../../up.md", "`..`"),
    ("./note.md", "`.`"),
    ("a//b.md", "empty component"),
    ("a/", "empty component"),
    ("nul\u{0}.md", "control"),
    ("bell\u{7}.md", "control"),
    ("line\nbreak.md", "control"),
    (String(repeating: "x", count: 253) + ".md", "longer than 255"),
    (String(repeating: "abcdefgh/", count: 460) + "n.md", "longer than 4096"),
    (".hidden.md", "hidden"),
    ("dir/.goutputstream-ABC123", "hidden"),
    (".git/config.md", "hidden"),
    ("note.md~", "backup"),
    ("#note.md#", "backup"),
    ("note.md.swp", "backup"),
    ("4913", "backup"),
    ("note.txt", "does not match"),
    ("sedAb12Cd", "does not match"),
  ])
  func refusesUnsafeOrNonNotePaths(_ path: String, _ reason: String) {
    do {
      _ = try names.validate(path)
      Issue.record("accepted \(path.debugDescription)")
    } catch {
      #expect(error.description.contains(reason), "\(error)")
      #expect(!error.description.contains("\u{0}"))
    }
  }

  @Test(arguments: [
    ".goutputstream-XYZ123", ".#note.md", ".dat.nosync1a2b.Xyz", ".note.md.swp", "note.md~",
    "#note.md#", "note.swp", "note.swx", "4913", ".baton-write-12-1",
  ])
  func editorDroppingsAreNeverNotes(_ name: String) {
    #expect(NoteNames.isIgnored(name))
    #expect(!names.isNote(name))
    #expect(!NoteNames(pattern: "*").isNote(name))
  }

  @Test func patternIsConfigurable() {
    let text = NoteNames(pattern: "*.txt")
    #expect(text.isNote("a.txt"))
    #expect(!text.isNote("a.md"))
    #expect(names.isNote("a.md"))
    #expect(!names.isNote("a.markdown"))
  }

  @Test func conflictNameKeepsTheExtensionAndSanitisesThePeer() {
    // 2026-11-30 09:07:06 UTC
    let name = NoteNames.conflictName(
      for: "Groceries.md", peer: "Bob's Mac/../x", time: 1_796_029_626)
    #expect(name == "Groceries.conflict-Bob_s_Mac____x-20261130T090706Z.md")
    #expect(names.isNote(name))
    let long = NoteNames.conflictName(
      for: String(repeating: "n", count: 250) + ".md", peer: "", time: 0)
    #expect(long.utf8.count <= 255)
    #expect(long.hasSuffix(".conflict-peer-19700101T000000Z.md"))
  }
}
