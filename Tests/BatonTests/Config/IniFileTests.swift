import Testing

@testable import BatonAgent

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

@Suite struct ConfigurationRobustnessTests {
  let loader = ConfigurationLoader(
    paths: BatonPaths(environment: ["HOME": "/h"]), currentDirectory: "/")

  func problems(_ text: String) -> [ConfigurationProblem] {
    do {
      _ = try loader.parse(text, file: "f", checkFileSystem: false)
      return []
    } catch {
      return error.problems
    }
  }

  @Test func acceptsAByteOrderMark() throws {
    let configuration = try loader.parse(
      "\u{FEFF}[folder notes]\npath = /n\n", file: "f", checkFileSystem: false)
    #expect(configuration.folders.map(\.name) == ["notes"])
  }

  @Test func neverCrashesOnOddInput() {
    let long = String(repeating: "x", count: 60)
    #expect(problems("[folder \(long)]\npath = /n\n").first?.line == 1)
    #expect(!problems("[folder a b]\npath = /n\n").isEmpty)
    #expect(!problems("[folder]\npath = /n\n").isEmpty)
    #expect(!problems("\u{0}\n[agent\n=\n==\n[]\n").isEmpty)
    #expect(!problems(String(repeating: "[agent]\n", count: 3)).isEmpty)
    #expect(problems("[ agent ]\nname = x\n[folder a]\npath = /a\n").isEmpty)
    for _ in 0..<200 {
      let bytes = (0..<Int.random(in: 0..<120)).map { _ in
        "[]=;# \nab-_.~/\t\r".randomElement()!
      }
      _ = problems(String(bytes))
    }
  }
}
