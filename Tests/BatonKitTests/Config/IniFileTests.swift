import Testing

@testable import BatonKit

@Suite struct IniFileTests {
  @Test func readsSectionsKeysAndLineNumbers() {
    let ini = IniFile(
      parsing: """
        # comment
        [agent]
        name = desk ; inline comment

        [folder notes]
        path = ~/notes
        [folder empty]

        """)
    #expect(ini.syntaxErrors.isEmpty)
    #expect(ini.sections.map(\.name) == ["agent", "folder notes", "folder empty"])
    #expect(ini.sections.map(\.line) == [2, 5, 7])
    #expect(ini.entries.map(\.key) == ["name", "path"])
    #expect(ini.entries.map(\.value) == ["desk", "~/notes"])
    #expect(ini.entries.map(\.line) == [3, 6])
    #expect(ini.entries.allSatisfy { !$0.isContinuation })
  }

  @Test func reportsSyntaxErrorsWithTheirLine() {
    let ini = IniFile(parsing: "[agent]\nname = a\nnot a key value line\n[broken\n")
    #expect(ini.syntaxErrors.map(\.line) == [3])
    let long = IniFile(parsing: "[agent]\nname = " + String(repeating: "x", count: 250) + "\n")
    #expect(long.syntaxErrors.map(\.line) == [2])
    #expect(long.syntaxErrors.first?.reason.contains("longer than 199") == true)
  }

  @Test func marksIndentedLinesAsContinuations() {
    let ini = IniFile(parsing: "[agent]\nallowed-peers = a\n  b, c\n")
    #expect(ini.entries.map(\.isContinuation) == [false, true])
    #expect(ini.entries.map(\.value) == ["a", "b, c"])
  }

  @Test func acceptsCRLFAndAMissingFinalNewline() {
    let ini = IniFile(parsing: "[agent]\r\nname = desk\r\ncontroller = hci1")
    #expect(ini.syntaxErrors.isEmpty)
    #expect(ini.entries.map(\.value) == ["desk", "hci1"])
    #expect(ini.entries.map(\.line) == [2, 3])
  }
}
