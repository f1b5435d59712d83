import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// `baton continue` against real agents on the simulated radio, with a stub
/// editor that records the arguments it was started with.
@Suite(.serialized) struct ContinueEndToEndTests {
  /// Runs `baton ARGS` against `agent` with `extra` in its environment;
  /// returns the exit status and what it printed.
  func run(_ agent: AgentProcess, _ arguments: [String], _ extra: [String: String?]) throws
    -> (Int32, String)
  {
    var environment = agent.environment
    for (key, value) in extra { environment[key] = value }
    let out = agent.stateDirectory.deletingLastPathComponent().appendingPathComponent("continue.out")
      .path
    try? FileManager.default.removeItem(atPath: out)
    let child = try ChildProcess(
      TestEnvironment.batonBinary, arguments, captureStdout: false, stdoutPath: out,
      stderrPath: out, environment: environment)
    let code = child.wait()
    return (code, (try? String(contentsOfFile: out, encoding: .utf8)) ?? "")
  }

  @Test func continueOpensTheNoteAPeerHandedOverInTheEditor() async throws {
    let group = try AgentGroup(count: 2)
    let (a, b) = (group.agents[0], group.agents[1])
    try group.startAll()
    let stub = group.base.appendingPathComponent("editor.sh").path
    let record = group.base.appendingPathComponent("editor.args").path
    try "#!/bin/sh\nprintf '%s\\n' \"$@\" > '\(record)'\n".write(
      toFile: stub, atomically: true, encoding: .utf8)
    chmod(stub, 0o755)

    // Before anything arrived: said plainly.
    #expect(try await eventually(20, "B's agent answering") { (try? b.status()) != nil })
    let early = try run(b, ["continue"], ["VISUAL": stub])
    #expect(early.0 == 1 && early.1.contains("no activity has been handed over yet"), "\(early)")

    try a.save("Groceries.md", "# Groceries\nmilk\n")
    #expect(
      await eventually(30, "B shows agentA's activity") {
        let shown = (try? b.status()["handedOver"] as? [[String: Any]]) ?? []
        return shown.contains { $0["peer"] as? String == "agentA" && $0["path"] as? String == "Groceries.md" }
      }, "\(group.logs)")
    let file = b.notes.appendingPathComponent("Groceries.md").path

    // VISUAL with an argument, split at blanks: the stub gets it and the path.
    let opened = try run(b, ["continue", "agentA"], ["VISUAL": stub + " --wait", "EDITOR": "false"])
    #expect(opened.0 == 0, "\(opened)")
    #expect(try String(contentsOfFile: record, encoding: .utf8) == "--wait\n\(file)\n")

    // EDITOR when VISUAL is unset; no PEER: the newest.
    try FileManager.default.removeItem(atPath: record)
    let viaEditor = try run(b, ["continue"], ["VISUAL": nil, "EDITOR": stub])
    #expect(viaEditor.0 == 0, "\(viaEditor)")
    #expect(try String(contentsOfFile: record, encoding: .utf8) == "\(file)\n")

    // An unknown peer: the known ones are listed.
    let unknown = try run(b, ["continue", "tablet"], ["VISUAL": stub])
    #expect(unknown.0 == 1, "\(unknown)")
    #expect(
      unknown.1.contains("no activity from 'tablet'; activities were handed over by: agentA"))

    // No editor at all.
    let none = try run(b, ["continue"], ["VISUAL": nil, "EDITOR": nil, "PATH": "/nonexistent"])
    #expect(none.0 == 1 && none.1.contains("no editor to open the note with"), "\(none)")

    // baton status shows it under the peer.
    let (code, text) = try b.run(["status"])
    #expect(code == 0)
    #expect(text.contains("\"Groceries\" (\(file)), handed over"), "\(text)")

    // The file gone (deleted here, after it arrived).
    try FileManager.default.removeItem(atPath: file)
    #expect(
      await eventually(30, "B's agent forgets the deleted note") {
        ((try? b.status()["handedOver"] as? [[String: Any]]) ?? []).isEmpty
      }, "\(group.logs)")
    let gone = try run(b, ["continue"], ["VISUAL": stub])
    #expect(gone.0 == 1 && gone.1.contains("no activity has been handed over yet"), "\(gone)")

    // No agent: exit 3, as the other control commands.
    b.stop()
    let stopped = try run(b, ["continue"], ["VISUAL": stub])
    #expect(stopped.0 == 3 && stopped.1.contains("no agent is running"), "\(stopped)")
  }
}
