import Foundation
import Testing

@testable import BatonAgent
@testable import BatonCLI
@testable import BatonSystem

/// Text from peers in logs and `baton status` (issue 13, bug 4).
@Suite struct DisplayEscapingTests {
  static let forged = "x\n<2>agent: FORGED \u{1B}[2J\n.md"

  @Test(arguments: [
    (forged, "x\\u{a}<2>agent: FORGED \\u{1b}[2J\\u{a}.md"),
    ("report\u{202E}fdp.md", "report\\u{202e}fdp.md"),
    ("a\r\u{85}b\u{2028}c\u{7F}", "a\\u{d}\\u{85}b\\u{2028}c\\u{7f}"),
    ("back\\slash", "back\\\\slash"),
    ("no\u{200B}tes\u{FEFF}.md", "no\\u{200b}tes\\u{feff}.md"),
    ("Crème brûlée 🇫🇷 \"quoted\"", "Crème brûlée 🇫🇷 \"quoted\""),
  ])
  func escapes(_ raw: String, _ shown: String) {
    #expect(raw.escapedForDisplay == shown)
  }

  /// A literal backslash sequence and the character it spells stay distinct.
  @Test func isUnambiguous() {
    #expect("a\\u{a}".escapedForDisplay != "a\n".escapedForDisplay)
    #expect("\\".escapedForDisplay.escapedForDisplay != "\\".escapedForDisplay)
  }

  /// A peer-supplied path logged by the engine stays on one line.
  @Test func aForgedPathCannotStartAJournalLine() {
    NotesLogCapture.install()  // captures `notes:` lines for the whole process
    let marker = "escape-test-\(UInt32.random(in: 0...UInt32.max))"
    Logger(label: "notes").warning("refused \(marker)/\(Self.forged)")
    let lines = NotesLogCapture.lines(containing: marker)
    #expect(lines.count == 1)
    #expect(lines.allSatisfy { !$0.contains("\n") && !$0.contains("\u{1B}") })
    #expect(lines.first?.hasSuffix("\\u{a}<2>agent: FORGED \\u{1b}[2J\\u{a}.md") == true)
  }

  @Test func statusShowsPeerTextEscaped() {
    var status = AgentDaemonTests.richStatus
    status.peers[0].name = "evil\nagent: desk"
    status.currentActivity?.title = "\u{1B}]0;owned\u{7}"
    status.currentActivity?.path = "a\u{202E}dm.sh"
    status.lastFailures[0].reason = "bad payload: unsafe path '\(Self.forged)'"
    let text = StatusFormatter(now: Date(timeIntervalSince1970: 1_700_000_012)).format(status)
    let plain = StatusFormatter(now: Date(timeIntervalSince1970: 1_700_000_012)).format(
      AgentDaemonTests.richStatus)
    #expect(text.split(separator: "\n").count == plain.split(separator: "\n").count)
    #expect(!text.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x202E })
    #expect(text.contains("  evil\\u{a}agent: desk  "))
    #expect(text.contains("\"\\u{1b}]0;owned\\u{7}\" (a\\u{202e}dm.sh,"))
  }
}
