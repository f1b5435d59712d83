import Foundation
import Testing

@testable import BatonNotes
@testable import BatonSystem

@Suite struct NoteNamesTests {
  let names = NoteNames()

  @Test(arguments: [
    "note.md", "sub/note.md", "a/b/c/Groceries list.md", "Crème brûlée.md", "tag #1.md",
    // Joiners where a script needs them: a Persian word, an emoji family.
    "\u{645}\u{6CC}\u{200C}\u{62E}\u{648}\u{627}\u{647}\u{645}.md",
    "\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}.md", "1-2 recipe.md",
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
    ("csi\u{9B}31m.md", "control"),
    ("invoice\u{202E}dm.sh", "bidirectional"),
    ("report\u{202E}fdp.md", "bidirectional"),
    ("dir\u{2066}/a.md", "bidirectional"),
    ("x\u{2069}.md", "bidirectional"),
    ("lre\u{202A}.md", "bidirectional"),
    // Issue 31: names that look like other names.
    ("no\u{200B}tes.md", "U+200B, an invisible"),
    ("notes\u{FEFF}.md", "U+FEFF, an invisible"),
    ("\u{2060}notes.md", "U+2060, an invisible"),
    ("soft\u{AD}hyphen.md", "U+00AD, an invisible"),
    ("hangul\u{3164}filler.md", "U+3164, an invisible"),
    ("lrm\u{200E}.md", "U+200E, an invisible"),
    ("rlm\u{200F}.md", "U+200F, an invisible"),
    ("alm\u{61C}.md", "U+061C, an invisible"),
    ("line\u{2028}sep.md", "U+2028, an invisible"),
    ("para\u{2029}sep.md", "U+2029, an invisible"),
    ("sec\u{200C}ret.md", "U+200C, a zero-width joiner"),
    ("sec\u{200D}ret.md", "U+200D, a zero-width joiner"),
    ("\u{200D}\u{1F468}.md", "U+200D, a zero-width joiner"),
    ("work\u{2215}plan.md", "U+2215, a character that looks like a slash"),
    ("work\u{2044}plan.md", "U+2044, a character that looks like a slash"),
    ("work\u{FF0F}plan.md", "U+FF0F, a character that looks like a slash"),
    ("work\u{29F8}plan.md", "U+29F8, a character that looks like a slash"),
    ("work\u{338}plan.md", "U+0338, a character that looks like a slash"),
    ("work\u{FF3C}plan.md", "U+FF3C, a character that looks like a slash"),
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
      // The message names the file with nothing hidden in it.
      #expect(!error.description.unicodeScalars.contains(where: NoteNames.isInvisible))
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

@Suite struct InotifyTests {
  @Test func parsesEventRecordsWithTheNameAtOffset16() {
    func record(wd: Int32, mask: UInt32, cookie: UInt32, name: String, padded: Int) -> [UInt8] {
      var bytes: [UInt8] = []
      for word in [UInt32(bitPattern: wd), mask, cookie, UInt32(padded)] {
        bytes += [
          UInt8(word & 0xFF), UInt8(word >> 8 & 0xFF), UInt8(word >> 16 & 0xFF), UInt8(word >> 24),
        ]
      }
      let nameBytes = Array(name.utf8)
      return bytes + nameBytes + [UInt8](repeating: 0, count: padded - nameBytes.count)
    }
    let buffer =
      record(wd: 1, mask: 0x8, cookie: 0, name: "note.md", padded: 16)
      + record(wd: 2, mask: 0x4000_0100, cookie: 7, name: "", padded: 0)
      + record(wd: 3, mask: 0x40, cookie: 9, name: "crème.md", padded: 32)
    let events = Inotify.parse(buffer[...])
    #expect(events.count == 3)
    #expect(
      events[0]
        == Inotify.Event(watch: .init(rawValue: 1), mask: .closeWrite, cookie: 0, name: "note.md"))
    #expect(
      events[1].mask == [.create, .isDirectory] && events[1].name.isEmpty && events[1].cookie == 7)
    #expect(events[2].mask == .movedFrom && events[2].name == "crème.md")
    // A truncated record does not crash.
    #expect(Inotify.parse(buffer[..<20]).count == 1)
  }
}
