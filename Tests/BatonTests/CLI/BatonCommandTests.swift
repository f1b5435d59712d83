import BatonCLI
import BatonHandoff
import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// Every subcommand of the built `baton` binary: output and exit status.
@Suite struct BatonCommandTests {
  @Test func printsVersionAndHelp() throws {
    let sandbox = try BatonSandbox()
    let version = try sandbox.run(["--version"])
    #expect(version.status == 0)
    #expect(version.stdout == "baton \(BatonCommand.version) (handoff protocol 11)\n")
    #expect(version.stderr.isEmpty)
    let help = try sandbox.run(["--help"])
    #expect(help.status == 0)
    #expect(help.stdout.contains("baton agent [options]"))
    #expect(help.stdout.contains("3 no agent running"))
    for command in ["agent", "check", "keygen", "status", "send", "continue"] {
      let result = try sandbox.run([command, "--help"])
      #expect(result.status == 0, "\(command) --help")
      #expect(result.stdout.hasPrefix("usage: baton \(command)"), "\(command) --help")
      #expect(result.stderr.isEmpty)
    }
    #expect(try sandbox.run(["agent", "-h"]).stdout.contains("--controller SPEC"))
  }

  @Test(arguments: [
    (["agent", "--bogus"], "baton: unrecognized option '--bogus'", "usage: baton agent"),
    (["agent", "--config"], "baton: option '--config' requires an argument", "usage: baton agent"),
    (["agent", "-f"], "baton: option '-f' requires an argument", "usage: baton agent"),
    (["agent", "-v=1", "-q"], "baton: invalid option -- '='", "usage: baton agent"),
    (
      ["check", "--verbose=yes"], "baton: option '--verbose' doesn't allow an argument",
      "usage: baton check"
    ),
    (["check", "extra"], "baton: check: unexpected argument 'extra'", "usage: baton check"),
    (["keygen", "-x"], "baton: invalid option -- 'x'", "usage: baton keygen"),
    (
      ["status", "--json=1"], "baton: option '--json' doesn't allow an argument",
      "usage: baton status"
    ),
    (
      ["status", "--socket"], "baton: option '--socket' requires an argument", "usage: baton status"
    ),
    (
      ["status", "--watch", "--json"],
      "baton: status: --watch shows the transfers as text; leave out --json (or --watch)",
      "usage: baton status"
    ),
    (["send"], "baton: send: missing operand", "usage: baton send"),
    (["send", "a", "b"], "baton: send: unexpected argument 'b'", "usage: baton send"),
    (["dance"], "baton: unknown command 'dance'", "usage: baton agent [options]"),
    ([], "baton: no command given", "usage: baton agent [options]"),
    (["--frobnicate"], "baton: unrecognized option '--frobnicate'", "usage: baton agent [options]"),
  ])
  func rejectsBadUsageWithOneLineAndTheUsage(
    _ arguments: [String], _ message: String, _ usage: String
  ) throws {
    let result = try BatonSandbox().run(arguments)
    #expect(result.status == 2)
    #expect(result.stdout.isEmpty)
    let lines = result.stderr.split(separator: "\n")
    #expect(lines.first.map(String.init) == message)
    #expect(lines.dropFirst().first?.hasPrefix(usage) == true)
  }

  @Test func keygenPrintsAKeyThatLoads() throws {
    let sandbox = try BatonSandbox()
    let first = try sandbox.run(["keygen"])
    let second = try sandbox.run(["keygen"])
    #expect(first.status == 0 && first.stderr.isEmpty)
    #expect(first.stdout != second.stdout)
    let key = try GroupKey(parsing: first.stdout, path: "stdout")
    #expect(key.bytes.count == 32)
  }

  @Test func checkDescribesAGoodConfiguration() throws {
    let sandbox = try BatonSandbox()
    try sandbox.write(
      """
      [agent]
      name = desk
      controller = tcp:127.0.0.1:7001
      max-note-size = 512K
      allowed-peers = laptop
      [folder notes]
      path = ~/notes
      activity-type = org.example.note
      """, to: sandbox.configFile)
    let result = try sandbox.run(["check"])
    #expect(result.status == 0)
    #expect(result.stderr.isEmpty)
    let expected = [
      "configuration: \(sandbox.configFile)",
      "name: desk",
      "controller: tcp:127.0.0.1:7001 (HCI/H4 over TCP to 127.0.0.1 port 7001)",
      "key file: \(sandbox.keyFile) (valid)",
      "state directory: \(sandbox.path)/state/baton",
      "advertising interval: 200 ms",
      "address rotation: every 15 minutes",
      "maximum note size: 524288 bytes",
      "allowed peers: laptop",
      "HCI log: none",
      "scanning: windows (baton(1), Scanning)",
      "control socket: \(sandbox.socketPath)",
      "folder notes: \(sandbox.notes), notes matching *.md, activity type org.example.note",
      "configuration OK",
    ]
    #expect(result.stdout.split(separator: "\n").map(String.init) == expected)

    // Overrides apply, as they would for the agent.
    try FileManager.default.createDirectory(
      atPath: sandbox.path + "/other", withIntermediateDirectories: true)
    let overridden = try sandbox.run([
      "check", "--name", "laptop", "--notes", sandbox.path + "/other", "--controller=hci1",
    ])
    #expect(overridden.status == 0)
    #expect(overridden.stdout.contains("name: laptop\n"))
    #expect(overridden.stdout.contains("controller: hci1 (kernel adapter hci1"))
    #expect(
      overridden.stdout.contains(
        "folder notes: \(sandbox.path)/other, notes matching *.md, activity type org.baton.note\n"))
  }

  @Test func checkReportsEveryProblemWithFileAndLine() throws {
    let sandbox = try BatonSandbox()
    let file = sandbox.path + "/bad.conf"
    try sandbox.write(
      "[agent]\nadvertising-interval = fast\n[folder notes]\npath = ~/missing\npattern = a/b\n",
      to: file)
    let result = try sandbox.run(["check", "-f", file])
    #expect(result.status == 1)
    #expect(result.stdout.isEmpty)
    let lines = result.stderr.split(separator: "\n").map(String.init)
    #expect(
      lines == [
        "baton: \(file):2: key 'advertising-interval': 'fast' is not valid; expected a whole number of milliseconds from 20 to 10240",
        "baton: \(file):4: key 'path': folder 'notes': \(sandbox.path)/missing: No such file or directory; expected an existing directory (create it or correct the path)",
        "baton: \(file):5: key 'pattern': 'a/b' is not a file-name pattern; expected a glob on the file name without '/', such as *.md",
        "baton: configuration \(file): 3 problems",
      ])
  }

  @Test func checkRefusesABadKeyFile() throws {
    let sandbox = try BatonSandbox()
    chmod(sandbox.keyFile, 0o644)
    let open = try sandbox.run(["check", "--notes", sandbox.notes])
    #expect(open.status == 1)
    #expect(open.stdout.contains("(INVALID)"))
    #expect(
      open.stderr
        == "baton: key file \(sandbox.keyFile) is readable by its group and others (mode 644); run 'chmod 600 \(sandbox.keyFile)'\n"
    )
    chmod(sandbox.keyFile, 0o640)
    let group = try sandbox.run(["check", "--notes", sandbox.notes])
    #expect(group.stderr.contains("is readable by its group (mode 640)"), "\(group.stderr)")
    chmod(sandbox.keyFile, 0o604)
    let others = try sandbox.run(["check", "--notes", sandbox.notes])
    #expect(others.stderr.contains("is readable by others (mode 604)"), "\(others.stderr)")
    // No key file at all: a device that joins by pairing.
    let missing = try sandbox.run(["check", "--notes", sandbox.notes, "--key-file", "nokey"])
    #expect(missing.status == 0, "\(missing.stderr)")
    #expect(
      missing.stdout.contains("/nokey (absent: the device joins its group by pairing"),
      "\(missing.stdout)")
    // A key file that is there but cannot be read is still an error.
    let directory = try sandbox.run(["check", "--notes", sandbox.notes, "--key-file", "/"])
    #expect(directory.status == 1)
    #expect(directory.stderr.hasPrefix("baton: cannot read key file /: not a regular file"))
  }

  /// `check` says what the agent would do with an existing state
  /// directory: close one of the user's open to others (check itself
  /// changes nothing), refuse one of another user's.
  @Test func checkReportsTheStateDirectory() throws {
    let sandbox = try BatonSandbox()
    let state = sandbox.path + "/state/baton"
    try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
    chmod(state, 0o755)
    let open = try sandbox.run(["check", "--notes", sandbox.notes])
    #expect(open.status == 0, "\(open.stderr)")
    #expect(open.stdout.contains("state directory: \(state) (open: closed at start)\n"))
    #expect(
      open.stderr
        == "baton: the state directory \(state) is mode 755, open to others; the agent makes it 0700 at start\n"
    )
    var info = stat()
    stat(state, &info)
    #expect(info.st_mode & 0o777 == 0o755)
    chmod(state, 0o700)
    let closed = try sandbox.run(["check", "--notes", sandbox.notes])
    #expect(closed.status == 0 && closed.stderr.isEmpty, "\(closed.stderr)")
    #expect(closed.stdout.contains("state directory: \(state)\n"))
    guard getuid() == 0 else { return }
    #expect(chown(state, 65534, 65534) == 0)
    let other = try sandbox.run(["check", "--notes", sandbox.notes])
    #expect(other.status == 1)
    #expect(other.stdout.contains("state directory: \(state) (INVALID)\n"))
    #expect(
      other.stderr.contains(
        "the state directory \(state): it belongs to user id 65534, not to you (0)"),
      "\(other.stderr)")
  }

  @Test func checkWithoutAnyConfigurationNeedsAFolder() throws {
    let sandbox = try BatonSandbox()
    let result = try sandbox.run(["check"])
    #expect(result.status == 1)
    #expect(result.stderr.hasPrefix("baton: \(sandbox.configFile): no folder to watch"))
    let missing = try sandbox.run(["check", "-f", "nothing.conf"])
    #expect(missing.status == 1)
    #expect(
      missing.stderr.contains("cannot read the configuration file: No such file or directory"))
  }

  @Test func statusAndSendSayPlainlyThatNoAgentRuns() throws {
    let sandbox = try BatonSandbox()
    let status = try sandbox.run(["status"])
    #expect(status.status == 3)
    #expect(status.stdout.isEmpty)
    #expect(
      status.stderr
        == "baton: no agent is running (no socket at \(sandbox.socketPath)); start one with 'baton agent' or 'systemctl --user start baton'\n"
    )
    let note = sandbox.notes + "/a.md"
    try sandbox.write("# A\n", to: note)
    let send = try sandbox.run(["send", note])
    #expect(send.status == 3)
    #expect(send.stderr.hasPrefix("baton: no agent is running"))
    // With no agent, that is what matters (exit 3), whatever the file.
    let missing = try sandbox.run(["send", sandbox.notes + "/none.md"])
    #expect(missing.status == 3)
    #expect(missing.stderr.hasPrefix("baton: no agent is running"))
    let open = try sandbox.run(["continue", "laptop"])
    #expect(open.status == 3)
    #expect(open.stderr.hasPrefix("baton: no agent is running"))
    #expect(try sandbox.run(["continue", "a", "b"]).status == 2)
  }

  /// A stand-in agent on a socket at `socketPath`: answers the first
  /// request with `answer` (a JSON line; a connection closed without one,
  /// such as the client's probe, is passed over), run as `user` (nil: this
  /// user).
  private func fakeAgent(at socketPath: String, answer: String, user: String? = nil) throws
    -> ChildProcess
  {
    let script = """
      import socket, sys
      s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
      s.bind(sys.argv[1]); s.listen(1)
      print("ready", flush=True)
      while True:
          c, _ = s.accept()
          if c.recv(65536):
              c.sendall(sys.argv[2].encode() + b"\\n")
              break
          c.close()
      """
    let python = ["/usr/bin/python3", "-c", script, socketPath, answer]
    let command = user.map { ["/usr/bin/setpriv", "--reuid=\($0)", "--regid=\($0)", "--clear-groups"] + python } ?? python
    let child = try ChildProcess(command[0], Array(command.dropFirst()))
    #expect(child.readLine() == "ready")
    return child
  }

  /// The agent's words are escaped before they reach the terminal: a
  /// refusal carrying an escape sequence prints it as `\u{1b}`.
  @Test func theAgentsAnswerIsEscapedForTheTerminal() throws {
    let sandbox = try BatonSandbox()
    let socketPath = sandbox.path + "/fake.sock"
    let agent = try fakeAgent(
      at: socketPath, answer: #"{"ok":false,"error":"no\u001b[2J\u001b]0;owned\u0007"}"#)
    defer { agent.stop() }
    let note = sandbox.notes + "/a.md"
    try sandbox.write("# A\n", to: note)
    let send = try sandbox.run(["send", "--socket", socketPath, note])
    #expect(send.status == 1)
    #expect(!send.stderr.contains("\u{1B}") && !send.stderr.contains("\u{07}"))
    #expect(send.stderr.contains(#"no\u{1b}[2J\u{1b}]0;owned\u{7}"#), "\(send.stderr)")
  }

  /// A socket answered by another user is not this user's agent: nothing
  /// is sent to it and nothing it says is believed.
  @Test(.enabled(if: getuid() == 0, "running a stand-in agent as another user needs root"))
  func anAgentOfAnotherUserIsNotTrusted() throws {
    let sandbox = try BatonSandbox()
    let directory = "/tmp/baton-other-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    #expect(mkdir(directory, 0o777) == 0)
    chmod(directory, 0o777)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let socketPath = directory + "/control"
    let agent = try fakeAgent(
      at: socketPath, answer: #"{"ok":true,"message":"sent, trust me"}"#, user: "65534")
    defer { agent.stop() }
    let note = sandbox.notes + "/a.md"
    try sandbox.write("# A\n", to: note)
    let send = try sandbox.run(["send", "--socket", socketPath, note])
    #expect(send.status == 1)
    #expect(!send.stdout.contains("trust me"))
    #expect(send.stderr.contains("is answered by user id 65534, not by you (0)"), "\(send.stderr)")
  }

  /// A state directory of this user's that others can enter (made by
  /// `mkdir -p`, say) holds the index and the peers seen: the agent closes
  /// it and says so. One of another user's is refused (SystemTests has the
  /// key file's case; FileTrust is the same check).
  @Test func anAgentClosesItsStateDirectoryToOthers() throws {
    let sandbox = try BatonSandbox()
    let state = sandbox.path + "/state/baton"
    try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
    chmod(state, 0o755)
    // No controller answers on this port: the agent stops after the check.
    let agent = try sandbox.run([
      "agent", "--notes", sandbox.notes, "--controller", "tcp:127.0.0.1:1",
    ])
    #expect(
      agent.stderr.contains("the state directory \(state) was mode 755, open to others; it is 0700 now"),
      "\(agent.stderr)")
    var info = stat()
    stat(state, &info)
    #expect(info.st_mode & 0o777 == 0o700)
  }
}
