import BatonHandoff
import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// The real `baton` binary, several agents on one simulated radio.
/// Serialized: each test runs a radio and two or three agents on two cores.
@Suite(.serialized) struct HandoffEndToEndTests {
  @Test func aSaveInOneFolderAppearsInTheOtherAndAnEditComesBack() async throws {
    let group = try AgentGroup(count: 2)
    let (a, b) = (group.agents[0], group.agents[1])
    try group.startAll()
    // Bytes that must survive exactly: BOM, CRLF, trailing spaces, no final newline.
    let original: [UInt8] = [0xEF, 0xBB, 0xBF] + Array("# Groceries  \r\nmilk\r\neggs   ".utf8)
    try a.save("Groceries.md", original)
    #expect(
      await eventually(20, "note in B") { b.read("Groceries.md") == original }, "\(group.logs)")

    let edited = Array("# Groceries\nmilk\neggs\nbread\n".utf8)
    try b.save("Groceries.md", edited)
    #expect(
      await eventually(20, "edit back in A") { a.read("Groceries.md") == edited }, "\(group.logs)")
    // No conflict copies: the edit was made on top of the received version.
    #expect(a.files() == ["Groceries.md"])
    #expect(b.files() == ["Groceries.md"])
  }

  @Test func oneSaveReachesTwoPeers() async throws {
    let group = try AgentGroup(count: 3)
    try group.startAll()
    let text = "Trip\nPack the tent.\n"
    try group.agents[0].save("trips/Trip.md", text)
    for peer in group.agents.dropFirst() {
      #expect(
        await eventually(30, "note in \(peer.name)") {
          peer.read("trips/Trip.md") == Array(text.utf8)
        },
        "\(group.logs)")
    }
  }

  @Test func anAgentThatWasAwayCatchesUpOnEveryNote() async throws {
    let group = try AgentGroup(count: 2, controllers: 3)
    let a = group.agents[0]
    try a.start()
    for i in 1...10 { try a.save("note\(i).md", "Note \(i)\nbody \(i)\n") }
    let c = try group.makeAgent(2, name: "agentC")
    group.agents.append(c)
    try c.start()
    #expect(
      await eventually(40, "ten notes in C") {
        (1...10).allSatisfy { c.read("note\($0).md") == Array("Note \($0)\nbody \($0)\n".utf8) }
      }, "\(group.logs)")
  }

  @Test func concurrentEditsBothSurviveOnBothSides() async throws {
    let group = try AgentGroup(count: 2)
    let (a, b) = (group.agents[0], group.agents[1])
    try group.startAll()
    try a.save("Plan.md", "Plan\nfirst\n")
    #expect(
      await eventually(20, "first version in B") { b.read("Plan.md") != nil }, "\(group.logs)")
    // Both stop, both edit, both come back: a true conflict.
    a.stop()
    b.stop()
    try a.save("Plan.md", "Plan\nA's edit\n")
    try b.save("Plan.md", "Plan\nB's edit\n")
    try a.start()
    try b.start()
    func contents(_ agent: AgentProcess) -> Set<[UInt8]> {
      Set(agent.files().compactMap { agent.read($0) })
    }
    let both: Set<[UInt8]> = [Array("Plan\nA's edit\n".utf8), Array("Plan\nB's edit\n".utf8)]
    #expect(
      await eventually(40, "both versions on both sides") {
        contents(a).isSuperset(of: both) && contents(b).isSuperset(of: both)
      }, "\(group.logs)")
    // The side that met the conflict kept its file and wrote the other edit
    // as a conflict copy; that copy is synced and both sides converge on the
    // same two files.
    #expect(
      await eventually(20, "the same files on both sides") { a.files() == b.files() },
      "\(group.logs)")
    #expect(a.files().count == 2, "\(a.files())")
    #expect(a.files().filter { $0.hasPrefix("Plan.conflict-") && $0.hasSuffix(".md") }.count == 1)
  }

  @Test func aRestartedAgentResendsNothingItsPeersHave() async throws {
    let group = try AgentGroup(count: 2)
    let (a, b) = (group.agents[0], group.agents[1])
    try group.startAll()
    for i in 1...3 { try a.save("r\(i).md", "R\(i)\n") }
    #expect(
      await eventually(30, "three notes in B") { (1...3).allSatisfy { b.read("r\($0).md") != nil } }
    )
    let received = try counter(b, "received")
    a.stop()
    try a.start()
    // Wait until B hears the restarted agent (at its new address).
    var address: String?
    #expect(
      await eventually(20, "B hears the restarted A") {
        address = try? a.status()["address"] as? String
        let peers = (try? b.status()["peers"] as? [[String: Any]]) ?? []
        return address != nil && peers.contains { $0["address"] as? String == address }
      }, "\(group.logs)")
    try a.save("r4.md", "R4\n")
    #expect(await eventually(20, "the new note in B") { b.read("r4.md") != nil }, "\(group.logs)")
    #expect(try counter(b, "received") == received + 1, "\(group.logs)")
  }

  @Test func anAgentWithAnotherKeyGetsNothingAndGivesNothing() async throws {
    let group = try AgentGroup(count: 2, controllers: 3)
    let (a, b) = (group.agents[0], group.agents[1])
    let otherKey = group.base.appendingPathComponent("other.key").path
    try AgentGroup.writeKey(GroupKey.generate(), to: otherKey)
    let stranger = try group.makeAgent(2, name: "stranger", keyPath: otherKey)
    group.agents.append(stranger)
    try group.startAll()
    try a.save("secret.md", "Secret\nfor the group only\n")
    try stranger.save("spam.md", "Spam\nnot for the group\n")
    #expect(await eventually(20, "note in B") { b.read("secret.md") != nil }, "\(group.logs)")
    // A measurement window, not synchronisation: nothing signals that a
    // stranger did not connect, so it gets the time a note takes to cross.
    try await Task.sleep(for: .seconds(3))
    #expect(stranger.files() == ["spam.md"], "\(group.logs)")
    #expect(a.read("spam.md") == nil && b.read("spam.md") == nil, "\(group.logs)")
  }

  @Test func anUndeclaredActivityTypeIsDeclined() async throws {
    let group = try AgentGroup(count: 2)
    let (a, b) = (group.agents[0], group.agents[1])
    // B watches its folder under another activity type, through a config file.
    let config = b.stateDirectory.deletingLastPathComponent().appendingPathComponent("b.conf")
    try """
    [folder recipes]
    path = \(b.notes.path)
    activity-type = org.example.recipe
    """.write(to: config, atomically: true, encoding: .utf8)
    let declined = try group.makeAgent(
      1, name: b.name, extraArguments: ["-f", config.path])
    group.agents[1] = declined
    try a.start()
    try startWithoutNotesFlag(declined)
    try a.save("note.md", "Note\nof the default type\n")
    #expect(
      await eventually(30, "a declined activity counted") {
        (try? counter(declined, "declined")) ?? 0 > 0
      },
      "\(group.logs)")
    #expect(declined.read("note.md") == nil)
  }

  @Test func aKilledAgentLeavesNoPartialFileAndConverges() async throws {
    let group = try AgentGroup(count: 2, controllers: 3)
    let (a, b) = (group.agents[0], group.agents[1])
    try group.startAll()
    // Large notes so that write-backs take a while; kill B while they arrive.
    var expected: [String: [UInt8]] = [:]
    for i in 1...8 {
      let bytes =
        Array("Big \(i)\n".utf8) + [UInt8](repeating: UInt8(ascii: "a") + UInt8(i), count: 200_000)
      expected["big\(i).md"] = bytes
      try a.save("big\(i).md", bytes)
    }
    #expect(
      await eventually(30, "the first note in B") { b.read("big1.md") != nil }, "\(group.logs)")
    b.kill9()
    for file in b.files() {
      #expect(b.read(file) == expected[file], "\(file) is whole or absent")
    }
    // A real controller is reset when its killed host's socket closes (the
    // kernel does so for hciN); bumble's simulated one keeps the dead
    // agent's connection up across HCI_Reset. So B comes back on a fresh
    // controller of the same radio, as it would on a reset one.
    b.controller = group.radio.spec(2)
    try b.start()
    #expect(
      await eventually(60, "all notes in B") { expected.allSatisfy { b.read($0.key) == $0.value } },
      "\(group.logs)")
  }

  @Test func aHundredSavesInARowAllArriveOnceInTheirFinalState() async throws {
    let group = try AgentGroup(count: 2)
    let (a, b) = (group.agents[0], group.agents[1])
    try group.startAll()
    for i in 1...100 { try a.save("n\(i).md", "N\(i)\nfinal \(i)\n") }
    #expect(
      await eventually(90, "100 notes in B") {
        (1...100).allSatisfy { b.read("n\($0).md") == Array("N\($0)\nfinal \($0)\n".utf8) }
      }, "\(group.logs)")
    #expect(b.files().count == 100, "no conflict copies or strays: \(b.files())")
    #expect(try counter(b, "received") == 100, "\(group.logs)")
  }

  @Test func sendMakesANoteCurrentAndStatusShowsPeersAndCounts() async throws {
    let group = try AgentGroup(count: 2)
    let (a, b) = (group.agents[0], group.agents[1])
    try group.startAll()
    try a.save("One.md", "# One\nfirst\n")
    try a.save("Two.md", "# Two\nsecond\n")
    #expect(
      await eventually(20, "both notes in B") {
        b.read("One.md") != nil && b.read("Two.md") != nil
      }, "\(group.logs)")

    let (code, output) = try a.run(["send", a.notes.appendingPathComponent("One.md").path])
    #expect(code == 0, "\(output)")
    #expect(output.contains("One.md"), "\(output)")
    let status = try a.status()
    let current = status["currentActivity"] as? [String: Any]
    #expect(current?["path"] as? String == "One.md", "\(status)")
    #expect(current?["title"] as? String == "One", "\(status)")
    #expect(current?["type"] as? String == "org.baton.note", "\(status)")
    #expect(try counter(a, "sent") >= 2, "\(status)")
    // B has heard A's beacons and learnt its name in the session.
    let peers = try b.status()["peers"] as? [[String: Any]] ?? []
    #expect(peers.contains { $0["name"] as? String == "agentA" }, "\(peers)")

    let (outside, message) = try a.run(["send", "/etc/hostname"])
    #expect(outside == 1, "\(message)")
    #expect(message.contains("not in a watched folder"), "\(message)")
  }

  @Test func theAddressRotatesAndPeersStillFindEachOther() async throws {
    let group = try AgentGroup(count: 2)
    let a = group.agents[0]
    // The shortest rotation the configuration allows: one minute.
    let config = group.base.appendingPathComponent("rotate.conf")
    try "[agent]\naddress-rotation = 1\n".write(to: config, atomically: true, encoding: .utf8)
    let rotating = try group.makeAgent(0, name: a.name, extraArguments: ["-f", config.path])
    group.agents[0] = rotating
    // B, linked, would hear A's new address only in its next scan window
    // (up to 72 s away: baton(1), Scanning); this test is about resolving
    // it, so B scans all the time.
    let listening = group.base.appendingPathComponent("listen.conf")
    try "[agent]\nscanning = continuous\n".write(to: listening, atomically: true, encoding: .utf8)
    let b = try group.makeAgent(1, name: group.agents[1].name, extraArguments: ["-f", listening.path])
    group.agents[1] = b
    try rotating.start()
    try b.start()
    #expect(
      await eventually(10, "an address") { (try? rotating.status()["address"] as? String) != nil })
    let first = try rotating.status()["address"] as? String
    // One session, so that B learns who A is.
    try rotating.save("before.md", "Before\nthe rotation\n")
    #expect(await eventually(20, "the first note in B") { b.read("before.md") != nil }, "\(group.logs)")
    var second: String?
    #expect(
      await eventually(75, "a new address") {
        second = try? rotating.status()["address"] as? String
        return second != nil && second != first
      }, "\(group.logs)")
    // Nothing is left to sync, so no session runs: B names A under its new
    // address by resolving it (PROTOCOL.md 3.1).
    #expect(
      await eventually(20, "A named under its new address in B's status") {
        let peers = (try? b.status()["peers"] as? [[String: Any]]) ?? []
        return peers.contains { $0["address"] as? String == second && $0["name"] as? String == "agentA" }
      }, "\(group.logs)")
    // The beacon was re-sealed under the new address and still works.
    try rotating.save("after.md", "After\nthe rotation\n")
    #expect(await eventually(20, "the note in B") { b.read("after.md") != nil }, "\(group.logs)")
  }

  // MARK: helpers

  private func counter(_ agent: AgentProcess, _ name: String) throws -> Int {
    let status = try agent.status()
    let counters = status["counters"] as? [String: Any] ?? [:]
    return (counters[name] as? Int) ?? -1
  }

  /// Starts an agent whose folder comes from its config file (no --notes).
  private func startWithoutNotesFlag(_ agent: AgentProcess) throws {
    var args = agent.arguments
    if let i = args.firstIndex(of: "--notes") { args.removeSubrange(i...(i + 1)) }
    let process = try ChildProcess(
      TestEnvironment.batonBinary, args, captureStdout: false, stdoutPath: agent.logPath,
      stderrPath: agent.logPath, environment: agent.environment)
    agent.adopt(process)
  }
}
