import Foundation
import Testing

@testable import BatonNotes

@Suite struct NoteTests {
  @Test(arguments: [
    ("# Groceries\nmilk\n", "Groceries"),
    ("Groceries\nmilk", "Groceries"),
    ("## Plans  \r\nnext", "Plans"),
    ("\u{FEFF}# With BOM\n", "With BOM"),
    ("   ###   Spaced   \n", "Spaced"),
    ("#NoSpace\n", "#NoSpace"),
    ("####### seven\n", "####### seven"),
    ("#\n", ""),
    ("", ""),
    ("only a title", "only a title"),
    ("# Crème brûlée\n", "Crème brûlée"),
    ("\n\n## Shopping list  \n- eggs", "Shopping list"),
    ("#\n\nsecond\n", "second"),
    ("classic\rmac", "classic"),
    (String(repeating: "é", count: 200), String(repeating: "é", count: 128)),
  ])
  func title(_ text: String, _ expected: String) {
    #expect(Note(text: text).title == expected)
  }

  /// The byte-exact cases the note format must keep.
  static let exactCases: [(String, [UInt8])] = [
    ("crlf", Array("# Title\r\nline one\r\nline two\r\n".utf8)),
    ("no final newline", Array("# Title\nlast line".utf8)),
    ("bom", [0xEF, 0xBB, 0xBF] + Array("# Title\nbody\n".utf8)),
    ("empty", []),
    ("title only", Array("# Just a title".utf8)),
    ("title only with newline", Array("Just a title\n".utf8)),
    ("trailing spaces", Array("# Title   \nbody with trailing   \n  \n".utf8)),
    ("tabs and blank lines", Array("\t#\tTabbed\n\n\n\tindented\n\n".utf8)),
    ("mixed endings", Array("a\r\nb\nc\rd".utf8)),
  ]

  @Test(arguments: exactCases.map(\.1))
  func splitsWithoutLosingAByte(_ bytes: [UInt8]) {
    let note = Note(bytes: bytes)
    #expect(Array(note.titleLine) + Array(note.lineBreak) + Array(note.content) == bytes)
    #expect(note.bytes == bytes)
    #expect(note.isValidUTF8)
  }

  @Test func contentIsEverythingAfterTheFirstLine() {
    let note = Note(text: "# T\r\nbody\r\n")
    #expect(note.contentText == "body\r\n")
    #expect(Array(note.titleLine) == Array("# T\r".utf8))
  }

  @Test func invalidUTF8IsDetected() {
    #expect(!Note(bytes: [0x23, 0x20, 0xC3, 0x28]).isValidUTF8)
    #expect(!Note(bytes: [0xFF]).isValidUTF8)
    #expect(Note(bytes: Array("é✓𝄞".utf8)).isValidUTF8)
  }

  /// A file saved in one folder, reported by the watcher, written by
  /// `writeNote` into another folder: identical bytes for every case.
  @Test func roundTripsByteForByteThroughWatchAndWriteBack() async throws {
    let source = try NotesFixture()
    defer { source.close() }
    let target = try NotesFixture()
    defer { target.close() }
    for (index, (_, bytes)) in NoteTests.exactCases.enumerated() {
      try source.write("note\(index).md", bytes)
    }
    // The empty file: one more byte pattern, written as a fresh create.
    let saves = await source.recorder.wait { events in
      events.count >= NoteTests.exactCases.count
    }
    #expect(saves.count == NoteTests.exactCases.count)
    for case .saved(let save) in saves {
      let outcome = try target.folder.writeNote(
        save.relativePath, bytes: save.bytes, replacing: nil, peer: "source")
      #expect(outcome == .written(relativePath: save.relativePath))
    }
    for (index, (name, bytes)) in NoteTests.exactCases.enumerated() {
      #expect(target.bytes("note\(index).md") == bytes, "case \(name)")
      #expect(try target.folder.readNote("note\(index).md") == bytes, "case \(name)")
    }
    // The target's write-backs were not reported as local saves.
    let echoes = await target.recorder.settled(quiet: 0.3)
    #expect(echoes.isEmpty)
  }
}
