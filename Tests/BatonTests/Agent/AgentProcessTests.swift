import BatonAgent
import BatonSystem
import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// `baton agent` as a process on a simulated controller of its own:
/// signals, reload, the control socket and sd_notify. The assertions hold
/// for the handoff agent on a simulated controller.
@Suite struct AgentProcessTests {
  func start(_ sandbox: BatonSandbox, _ extra: [String] = [], environment: [String: String] = [:])
    async throws -> (ChildProcess, String)
  {
    let log = sandbox.path + "/agent.log"
    let controller = try sandbox.radio().spec(0)
    let agent = try sandbox.startAgent(
      ["--notes", sandbox.notes, "--controller", controller, "--name", "desk"] + extra,
      log: log, environment: environment)
    #expect(
      await eventually(10, "the agent listens") { sandbox.contents(log).contains("control socket") }
    )
    return (agent, log)
  }

  @Test(arguments: [SIGTERM, SIGINT])
  func stopsOnSignalWithinTwoSecondsAndCleansUp(_ signal: Int32) async throws {
    let sandbox = try BatonSandbox()
    let (agent, log) = try await start(sandbox)
    #expect(access(sandbox.socketPath, F_OK) == 0)
    let started = Date()
    agent.signal(signal)
    #expect(await eventually(10, "the agent exits") { agent.hasExited })
    let elapsed = Date().timeIntervalSince(started)
    #expect(agent.wait() == 0)
    #expect(elapsed < 2)
    #expect(access(sandbox.socketPath, F_OK) != 0)
    let text = sandbox.contents(log)
    #expect(
      text.contains("<6>agent: received \(signal == SIGTERM ? "SIGTERM" : "SIGINT"), stopping\n"))
    #expect(text.contains("<6>agent: stopped\n"))
  }

  /// Two agents on one state folder would share a device id: the second is
  /// refused, with the first one's pid, and the first carries on.
  @Test func aSecondAgentOnTheSameStateFolderIsRefused() async throws {
    let sandbox = try BatonSandbox()
    let (first, _) = try await start(sandbox)
    defer { first.stop() }
    let log = sandbox.path + "/second.log"
    let second = try sandbox.startAgent(
      [
        "--notes", sandbox.notes, "--controller", try sandbox.radio().spec(0), "--name", "copy",
        "--socket", sandbox.path + "/run/second",
      ], log: log)
    #expect(await eventually(10, "the second agent exits") { second.hasExited })
    #expect(second.hasExited, "a second agent runs on the same state folder")
    if !second.hasExited { second.stop() }
    #expect(second.wait() == 1)
    let text = sandbox.contents(log)
    #expect(text.contains("is in use by another baton agent (pid \(first.pid))"), "\(text)")
    #expect(!first.hasExited)
    #expect(try sandbox.run(["status"]).status == 0)
  }

  /// Issue 16 item 9: a command answer lost during the first bring-up (a
  /// glitch on a UART) does not end the agent: the bring-up is retried with
  /// the back-off of a later reopen (1, 2, 5, 10, 30 s), each retry logged.
  @Test func aLostAnswerDuringTheFirstBringUpIsRetriedWithBackOff() async throws {
    let sandbox = try BatonSandbox()
    // The first answer to HCI_Reset is lost, then the first answer to LE
    // Read Buffer Size: the third bring-up gets through.
    let radio = try SimulatedRadio(
      controllers: 1,
      faults: "drop event=0x0e opcode=0x0c03 count=1; drop event=0x0e opcode=0x2002 count=1")
    defer { radio.stop() }
    let log = sandbox.path + "/agent.log"
    let agent = try sandbox.startAgent(
      ["--notes", sandbox.notes, "--controller", radio.spec(0), "--name", "desk"], log: log)
    defer { agent.stop() }
    #expect(
      await eventually(40, "the agent advertises or exits") {
        agent.hasExited || sandbox.contents(log).contains("<6>radio: advertising as ")
      })
    let text = sandbox.contents(log)
    #expect(!agent.hasExited, "\(text)")
    #expect(text.contains("<6>radio: advertising as "), "\(text)")
    let retries = text.split(separator: "\n").filter {
      $0.hasPrefix("<4>radio: cannot bring up the controller \(radio.spec(0)): ")
    }
    #expect(retries.count == 2, "\(text)")
    #expect(retries.first?.contains("HCI Reset got no answer") == true, "\(text)")
    #expect(retries.first?.hasSuffix("; trying again in 1.0 seconds") == true, "\(text)")
    #expect(retries.last?.contains("HCI LE Read Buffer Size got no answer") == true, "\(text)")
    #expect(retries.last?.hasSuffix("; trying again in 2.0 seconds") == true, "\(text)")
    #expect(radio.injectedFaults.count == 2, "\(radio.injectedFaults)")
    #expect(try sandbox.run(["status"]).status == 0)
  }

  /// What waiting cannot mend still ends the first start: no controller
  /// listens at the address.
  @Test func aControllerThatCannotBeReachedAtStartEndsTheAgent() async throws {
    let sandbox = try BatonSandbox()
    let radio = try SimulatedRadio(controllers: 1)
    let spec = radio.spec(0)
    radio.stop()
    let log = sandbox.path + "/agent.log"
    let agent = try sandbox.startAgent(
      ["--notes", sandbox.notes, "--controller", spec, "--name", "desk"], log: log)
    #expect(await eventually(20, "the agent exits") { agent.hasExited })
    if !agent.hasExited { agent.stop() }
    #expect(agent.wait() == 1, "\(sandbox.contents(log))")
    #expect(
      sandbox.contents(log).contains(
        "<3>agent: the agent stopped: cannot use the controller \(spec)"),
      "\(sandbox.contents(log))")
  }

  @Test func answersStatusWhileRunning() async throws {
    let sandbox = try BatonSandbox()
    let (agent, _) = try await start(sandbox)
    defer { agent.stop() }
    let status = try sandbox.run(["status"])
    #expect(status.status == 0)
    #expect(status.stdout.hasPrefix("agent: desk"))
    #expect(status.stdout.contains("\nfolders:\n  notes  \(sandbox.notes)  org.baton.note\n"))
    #expect(
      status.stdout.contains(
        "activities: 0 sent, 0 received, 0 declined, 0 failed (0 conflicts); 0 sessions\n"))
    let json = try sandbox.run(["status", "--json"])
    #expect(json.status == 0)
    let decoded = try ControlCoding.decode(AgentStatus.self, from: Array(json.stdout.utf8))
    #expect(decoded.name == "desk")
    #expect(
      decoded.folders == [
        AgentStatus.Folder(name: "notes", path: sandbox.notes, activityType: "org.baton.note")
      ])
    // A file in no watched folder cannot be sent; the refusal reaches the
    // user.
    let note = sandbox.path + "/outside.md"
    try sandbox.write("# A\n", to: note)
    let send = try sandbox.run(["send", note])
    #expect(send.status == 1)
    #expect(send.stdout.isEmpty)
    #expect(send.stderr.hasPrefix("baton: "))
    let missing = try sandbox.run(["send", sandbox.notes + "/none.md"])
    #expect(missing.status == 1)
    #expect(missing.stderr == "baton: \(sandbox.notes)/none.md: No such file or directory\n")
    // A second agent on the same socket refuses to start, before it touches
    // its controller.
    let second = try sandbox.run(["agent", "--notes", sandbox.notes, "--controller", "hci0"])
    #expect(second.status == 1)
    #expect(second.stderr.contains("<3>agent: another agent is already running"))
  }

  @Test func reloadsOnSIGHUPAndKeepsTheOldConfigurationWhenTheNewOneIsBad() async throws {
    let sandbox = try BatonSandbox()
    let other = sandbox.path + "/other"
    try FileManager.default.createDirectory(atPath: other, withIntermediateDirectories: true)
    try sandbox.write(
      "[agent]\nname = desk\n[folder notes]\npath = ~/notes\n", to: sandbox.configFile)
    let log = sandbox.path + "/agent.log"
    let agent = try sandbox.startAgent(["--controller", try sandbox.radio().spec(0)], log: log)
    defer { agent.stop() }
    #expect(
      await eventually(10, "the agent listens") { sandbox.contents(log).contains("control socket") }
    )
    #expect(try sandbox.run(["status", "--json"]).stdout.contains("\"name\":\"desk\""))

    try sandbox.write(
      "[agent]\nname = desk2\n[folder notes]\npath = ~/notes\n[folder other]\npath = ~/other\nactivity-type = org.example.other\n",
      to: sandbox.configFile)
    agent.signal(SIGHUP)
    #expect(
      await eventually(10, "the reload is logged") {
        sandbox.contents(log).contains("reloaded: desk2")
      })
    var status = try ControlCoding.decode(
      AgentStatus.self, from: Array(try sandbox.run(["status", "--json"]).stdout.utf8))
    #expect(status.name == "desk2")
    #expect(status.folders.map(\.name) == ["notes", "other"])

    try sandbox.write("[agent]\nname = desk3\nmax-note-size = huge\n", to: sandbox.configFile)
    agent.signal(SIGHUP)
    #expect(
      await eventually(10, "the failed reload is logged") {
        sandbox.contents(log).contains("reload failed")
      })
    #expect(
      sandbox.contents(log).contains(
        "<3>agent: \(sandbox.configFile):3: key 'max-note-size': 'huge' is not valid; expected a size in bytes"
      ))
    #expect(!agent.hasExited)
    status = try ControlCoding.decode(
      AgentStatus.self, from: Array(try sandbox.run(["status", "--json"]).stdout.utf8))
    #expect(status.name == "desk2")
    #expect(status.folders.count == 2)

    agent.signal(SIGTERM)
    #expect(await eventually(10, "the agent exits") { agent.hasExited })
    #expect(agent.wait() == 0)
  }

  @Test func failsAtStartWithABadConfigurationOrKey() async throws {
    let sandbox = try BatonSandbox()
    try sandbox.write(
      "[agent]\ncontroller = usb\n[folder n]\npath = ~/notes\n", to: sandbox.configFile)
    let bad = try sandbox.run(["agent"])
    #expect(bad.status == 1)
    #expect(
      bad.stderr.hasPrefix(
        "<3>agent: \(sandbox.configFile):2: key 'controller': 'usb' is not a controller"))
    #expect(bad.stderr.split(separator: "\n").count == 1)
    unlink(sandbox.configFile)
    chmod(sandbox.keyFile, 0o640)
    let key = try sandbox.run(["agent", "--notes", sandbox.notes, "--controller", "hci0"])
    #expect(key.status == 1)
    #expect(
      key.stderr.hasPrefix(
        "<3>agent: key file \(sandbox.keyFile) is readable by its group (mode 640)"))
  }

  @Test func tellsSystemdItIsReadyAndStopping() async throws {
    let sandbox = try BatonSandbox()
    let notifyPath = sandbox.path + "/notify"
    let receiver = DatagramReceiver(notifyPath)
    let (agent, _) = try await start(sandbox, environment: ["NOTIFY_SOCKET": notifyPath])
    let ready = receiver.receive()
    #expect(ready.hasPrefix("READY=1\nSTATUS=Running as desk on tcp:127.0.0.1:"))
    #expect(ready.hasSuffix(", watching \(sandbox.notes)"))
    // Notified without libsystemd: an agent on its own controller never
    // talks to D-Bus, so it does not load the library (CBatonShims/systemd.c).
    let mapsFile = try #require(FileHandle(forReadingAtPath: "/proc/\(agent.pid)/maps"))
    let maps = String(decoding: mapsFile.readDataToEndOfFile(), as: UTF8.self)
    try mapsFile.close()
    #expect(maps.contains("libsqlite3"))
    #expect(!maps.contains("libsystemd"))
    agent.signal(SIGHUP)
    #expect(receiver.receive().hasPrefix("RELOADING=1\nMONOTONIC_USEC="))
    #expect(receiver.receive().hasPrefix("READY=1\n"))
    agent.signal(SIGTERM)
    #expect(receiver.receive() == "STOPPING=1\nSTATUS=Stopping")
    #expect(await eventually(10, "the agent exits") { agent.hasExited })
    #expect(agent.wait() == 0)
  }

  @Test func replacesAStaleSocketAtStart() async throws {
    let sandbox = try BatonSandbox()
    try FileManager.default.createDirectory(
      atPath: sandbox.path + "/run/baton", withIntermediateDirectories: true)
    let stale = try UnixSocket.listen(path: sandbox.socketPath)
    stale.close()
    let (agent, log) = try await start(sandbox)
    #expect(
      sandbox.contents(log).contains("<5>control: removing stale socket \(sandbox.socketPath)\n"))
    #expect(try sandbox.run(["status"]).status == 0)
    agent.signal(SIGTERM)
    #expect(await eventually(10, "the agent exits") { agent.hasExited })
    #expect(agent.wait() == 0)
  }
}
