import Foundation
import Testing

@testable import BatonAgent
@testable import BatonCLI

#if canImport(Glibc)
  import Glibc
#endif

/// The man pages, the shipped configuration and unit, and `make install`.
@Suite struct DocumentationTests {
  let repository = TestEnvironment.repository.path

  func runTool(_ path: String, _ arguments: [String]) throws -> (Int32, String) {
    let output = try TestEnvironment.temporaryDirectory("baton-tool").appendingPathComponent("out")
      .path
    defer {
      try? FileManager.default.removeItem(atPath: (output as NSString).deletingLastPathComponent)
    }
    let child = try ChildProcess(path, arguments, stdoutPath: output, stderrPath: output)
    let status = child.wait()
    return (status, (try? String(contentsOfFile: output, encoding: .utf8)) ?? "")
  }

  @Test func manPagesPassMandocLint() throws {
    let (status, output) = try runTool(
      "/usr/bin/mandoc",
      [
        "-T", "lint", "-W", "warning", repository + "/Man/baton.1",
        repository + "/Man/baton.conf.5",
      ])
    #expect(output == "")
    #expect(status == 0)
  }

  @Test func manPagesDocumentEveryOptionAndKey() throws {
    let page1 = try String(contentsOfFile: repository + "/Man/baton.1", encoding: .utf8)
    for spec in BatonCommand.agentSpecs {
      let long = try #require(spec.long)
      #expect(
        page1.contains("Fl \\-" + long.replacingOccurrences(of: "-", with: "\\-")),
        "baton.1 lacks --\(long)")
    }
    for word in [
      "Cm agent", "Cm check", "Cm keygen", "Cm status", "Cm send", "Cm continue",
      "Ev VISUAL", "Ev EDITOR", "Fl \\-json",
      "Dv SIGHUP", "Sh EXIT STATUS", "Sh EXAMPLES", "Sh DIAGNOSTICS", "Sh ENVIRONMENT",
      "PROTOCOL.md",
      "conflict",
    ] {
      #expect(page1.contains(word), "baton.1 lacks \(word)")
    }
    let page5 = try String(contentsOfFile: repository + "/Man/baton.conf.5", encoding: .utf8)
    let keys = (ConfigurationLoader.agentKeys + ConfigurationLoader.folderKeys)
    for key in keys {
      #expect(page5.contains(".It Cm \(key)\n"), "baton.conf.5 lacks \(key)")
    }
    // Each key's entry ends with its default, and the keys are alphabetical
    // within their section.
    let items = page5.components(separatedBy: ".It Cm ").dropFirst()
    for item in items where keys.contains(String(item.prefix { $0 != "\n" })) {
      #expect(item.contains("The default is"), "no default for \(item.prefix { $0 != "\n" })")
    }
    let order = items.map { String($0.prefix { $0 != "\n" }) }.filter { keys.contains($0) }
    #expect(
      order == ConfigurationLoader.agentKeys.sorted() + ConfigurationLoader.folderKeys.sorted())
  }

  /// Uncommenting every key of Config/baton.conf gives the defaults.
  @Test func shippedConfigurationShowsTheDefaults() throws {
    let text = try String(contentsOfFile: repository + "/Config/baton.conf", encoding: .utf8)
    var keysShown: [String] = []
    let uncommented = text.split(separator: "\n", omittingEmptySubsequences: false).map {
      line -> String in
      guard line.hasPrefix("#") else { return String(line) }
      let body = line.dropFirst()
      if body.hasPrefix("[folder") { return String(body) }
      guard let equals = body.firstIndex(of: "="), body.first?.isLetter == true,
        !body[..<equals].contains(" ") || body[..<equals].hasSuffix(" ")
      else { return String(line) }
      let key = body[..<equals].trimmingCharacters(in: .whitespaces)
      guard !key.contains(" ") else { return String(line) }
      keysShown.append(key)
      // An empty value means "no value / computed": leave it commented.
      return body[body.index(after: equals)...].trimmingCharacters(in: .whitespaces).isEmpty
        ? String(line) : String(body)
    }.joined(separator: "\n")
    #expect(Set(keysShown) == Set(ConfigurationLoader.agentKeys + ConfigurationLoader.folderKeys))
    let paths = BatonPaths(environment: ["HOME": "/home/u"])
    let configuration = try ConfigurationLoader(paths: paths).parse(
      uncommented, file: "baton.conf", checkFileSystem: false)
    let defaults = try ConfigurationLoader(paths: paths).parse(
      "", file: "baton.conf", overrides: ConfigurationOverrides(notes: "~/notes"),
      checkFileSystem: false)
    #expect(configuration == defaults)
  }

  @Test func unitIsATypeNotifyUserService() throws {
    let unit = try String(contentsOfFile: repository + "/Config/baton.service", encoding: .utf8)
    for line in [
      "Type=notify", "ExecStart=/usr/local/bin/baton agent", "ExecReload=/bin/kill -HUP $MAINPID",
      "Restart=on-failure", "#AmbientCapabilities=CAP_NET_ADMIN", "WantedBy=default.target",
      "LimitCORE=0", "UMask=0077",
      // The sandbox that Tests/VM's agent-unit-hardened runs the agent under.
      "NoNewPrivileges=yes", "PrivateUsers=yes", "CapabilityBoundingSet=",
      "RestrictAddressFamilies=AF_UNIX AF_BLUETOOTH", "SystemCallFilter=@system-service",
      "SystemCallArchitectures=native", "MemoryDenyWriteExecute=yes", "RestrictNamespaces=yes",
    ] {
      #expect(unit.contains("\n" + line + "\n"), "baton.service lacks \(line)")
    }
  }

  /// Config/baton.bash-completion, sourced in bash: it registers itself, and
  /// offers every command of `baton --help` (Usage.top) and their options.
  @Test func bashCompletionOffersTheCommands() throws {
    let commands = Usage.top.split(separator: "\n").compactMap { line -> String? in
      let words = line.split(separator: " ")
      guard let at = words.firstIndex(of: "baton"), at + 1 < words.count,
        !words[at + 1].hasPrefix("-")
      else { return nil }
      return String(words[at + 1])
    }
    #expect(commands.contains("pair") && commands.count >= 10)
    let script = """
      . "$1"
      complete -p baton
      complete_words() { COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _baton
        echo "${COMPREPLY[*]}"; }
      complete_words baton p
      complete_words baton ''
      complete_words baton agent --con
      complete_words baton deletions ''
      """
    let (status, output) = try runTool(
      "/bin/bash", ["-c", script, "bash", repository + "/Config/baton.bash-completion"])
    #expect(status == 0, "\(output)")
    let lines = output.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    #expect(lines.count >= 5, "\(output)")
    guard lines.count >= 5 else { return }
    #expect(lines[0] == "complete -F _baton baton")
    #expect(lines[1] == "pair")
    #expect(Set(lines[2].split(separator: " ").map(String.init)) == Set(commands + ["help"]))
    #expect(lines[3] == "--config --controller")
    #expect(lines[4] == "apply reject")
  }

  /// CONTRIBUTING.md, linked from README.md, names only `make` targets the
  /// Makefile has, and the three checks it must explain.
  @Test func contributingNamesRealMakeTargets() throws {
    let text = try String(contentsOfFile: repository + "/CONTRIBUTING.md", encoding: .utf8)
    let readme = try String(contentsOfFile: repository + "/README.md", encoding: .utf8)
    #expect(readme.contains("`CONTRIBUTING.md`"), "README.md does not name CONTRIBUTING.md")
    let makefile = try String(contentsOfFile: repository + "/Makefile", encoding: .utf8)
    // A rule's line: `name:` or `name: prerequisites` (not `NAME ?= value`).
    let targets = Set(
      makefile.split(separator: "\n").compactMap { line -> String? in
        guard let colon = line.firstIndex(of: ":"), line[line.index(after: colon)...].first != "="
        else { return nil }
        let name = line[..<colon]
        guard !name.isEmpty, name.allSatisfy({ $0.isLowercase || $0 == "-" }) else { return nil }
        return String(name)
      })
    #expect(targets.isSuperset(of: ["test", "sanitize", "fuzz", "fuzz-smoke"]), "\(targets)")
    // `make TARGET` inside code spans (every other piece between backticks).
    var named: [String] = []
    for (index, span) in text.components(separatedBy: "`").enumerated() where index % 2 == 1 {
      let words = span.split(whereSeparator: \.isWhitespace)
      for (at, word) in words.enumerated() where word == "make" && at + 1 < words.count {
        named.append(String(words[at + 1]))
      }
    }
    for target in ["test", "sanitize", "fuzz"] {
      #expect(named.contains(target), "CONTRIBUTING.md does not explain make \(target)")
    }
    for target in named {
      #expect(
        targets.contains(target), "CONTRIBUTING.md names make \(target); the Makefile has none")
    }
  }

  @Test func makeInstallHonoursDestdirAndPrefix() throws {
    let destination = try TestEnvironment.temporaryDirectory("baton-install")
    defer { try? FileManager.default.removeItem(at: destination) }
    let make = [
      "-C", repository, "DESTDIR=" + destination.path, "PREFIX=/usr", "BUILD=debug", "NOBUILD=1",
    ]
    let (status, output) = try runTool("/usr/bin/make", make + ["install"])
    #expect(status == 0, "\(output)")
    let expected: [(String, mode_t)] = [
      ("/usr/bin/baton", 0o755), ("/usr/share/man/man1/baton.1", 0o644),
      ("/usr/share/man/man5/baton.conf.5", 0o644), ("/usr/lib/systemd/user/baton.service", 0o644),
      ("/usr/share/doc/baton/baton.conf", 0o644),
      ("/usr/share/bash-completion/completions/baton", 0o644),
    ]
    for (file, mode) in expected {
      var info = stat()
      #expect(stat(destination.path + file, &info) == 0, "\(file) not installed")
      #expect(info.st_mode & 0o777 == mode, "\(file) mode")
    }
    let unit = try String(
      contentsOfFile: destination.path + "/usr/lib/systemd/user/baton.service", encoding: .utf8)
    #expect(unit.contains("\nExecStart=/usr/bin/baton agent\n"))
    let (versionStatus, version) = try runTool(destination.path + "/usr/bin/baton", ["--version"])
    #expect(versionStatus == 0 && version == BatonCommand.versionLine)

    let (removed, _) = try runTool("/usr/bin/make", make + ["uninstall"])
    #expect(removed == 0)
    for (file, _) in expected {
      #expect(access(destination.path + file, F_OK) != 0, "\(file) left behind")
    }
  }
}
