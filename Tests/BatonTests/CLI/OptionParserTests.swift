import Testing

@testable import BatonCLI

@Suite struct OptionParserTests {
  let specs = [
    OptionSpec(long: "config", short: "f", takesArgument: true),
    OptionSpec(long: "notes", takesArgument: true),
    OptionSpec(long: "verbose", short: "v"),
    OptionSpec(long: "json"),
  ]

  @Test func followsGNUConventions() throws {
    let parsed = try OptionParser.parse(
      ["one", "-vfA", "--notes=dir", "two", "--config", "B", "--json", "--", "-v", "--x"],
      options: specs)
    #expect(
      parsed.options.map(\.name) == ["--verbose", "--config", "--notes", "--config", "--json"])
    #expect(parsed.value("--config") == "B")
    #expect(parsed.value("--notes") == "dir")
    #expect(parsed.operands == ["one", "two", "-v", "--x"])
  }

  @Test func acceptsUnambiguousPrefixes() throws {
    #expect(
      try OptionParser.parse(["--verb", "--no", "d"], options: specs).value("--notes") == "d")
  }

  @Test func stopsAtTheFirstOperandWhenAsked() throws {
    let parsed = try OptionParser.parse(["agent", "-v"], options: specs, stopAtFirstOperand: true)
    #expect(parsed.options.isEmpty)
    #expect(parsed.operands == ["agent", "-v"])
  }

  @Test(arguments: [
    (["--bogus"], "unrecognized option '--bogus'"),
    (["--bogus=1"], "unrecognized option '--bogus'"),
    (["-x"], "invalid option -- 'x'"),
    (["-vx"], "invalid option -- 'x'"),
    (["--config"], "option '--config' requires an argument"),
    (["-f"], "option '-f' requires an argument"),
    (["--verbose=yes"], "option '--verbose' doesn't allow an argument"),
    (["--j=1"], "option '--json' doesn't allow an argument"),
  ])
  func explainsUsageErrors(_ arguments: [String], _ message: String) {
    #expect(throws: UsageError(message)) { try OptionParser.parse(arguments, options: specs) }
  }

  @Test func reportsAmbiguousPrefixes() {
    let specs = [
      OptionSpec(long: "name", takesArgument: true), OptionSpec(long: "notes", takesArgument: true),
    ]
    #expect(throws: UsageError.self) { try OptionParser.parse(["--n", "x"], options: specs) }
  }
}
