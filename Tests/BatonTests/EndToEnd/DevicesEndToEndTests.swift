import Foundation
import Testing

/// Issue 26, removal, with real `baton` processes on one simulated radio
/// and the real commands: `baton devices` lists the group; after `baton
/// devices remove`, the removed agent (still running, still holding the
/// key file and every secret it had) gets nothing new and is ignored,
/// while the others keep syncing; a member that was away learns of the
/// removal from the first member it meets. Every wait is on a file or a
/// log line that must come: the members ignore the removed agent's beacons
/// (of the epoch it was removed from), so none links with it.
@Suite(.serialized) struct DevicesEndToEndTests {
  /// Whether `baton devices` on `agent` comes to list `name` as removed.
  private func listsRemoved(_ agent: AgentProcess, _ name: String) async -> Bool {
    await eventually(30, "\(agent.name) lists \(name) as removed") {
      let (_, listing) = (try? agent.run(["devices"])) ?? (1, "")
      return listing.split(separator: "\n").contains {
        $0.contains("  \(name) ") && $0.contains("removed by")
      }
    }
  }

  @Test func aRemovedAgentGetsNothingNewAndAnAwayMemberCatchesUp() async throws {
    let group = try AgentGroup(count: 3)
    let (a, b, c) = (group.agents[0], group.agents[1], group.agents[2])
    try group.startAll()
    let first = ["a.md": "A\nfrom A\n", "b.md": "B\nfrom B\n", "c.md": "C\nfrom C\n"]
    for (agent, file) in [(a, "a.md"), (b, "b.md"), (c, "c.md")] {
      try agent.save(file, first[file]!)
    }
    #expect(
      await eventually(90, "every first note everywhere") {
        [a, b, c].allSatisfy { agent in first.allSatisfy { agent.read($0.key) == Array($0.value.utf8) } }
      }, "\(group.logs)")
    // Every pair linked: each has had the others' records in a handshake
    // of its own (the notes may have come relayed), and no agent is still
    // connecting to B when B stops. Such an attempt would stay pending in
    // the agent's bumble controller for good, and every later LE Create
    // Connection would fail with Command Disallowed (HCI.md).
    for agent in [a, b, c] {
      let others = Set([a, b, c].map(\.name)).subtracting([agent.name])
      #expect(await linked(agent, to: others), "\(group.logs)")
    }
    let (listed, listing) = try a.run(["devices"])
    #expect(listed == 0, "\(listing)")
    for name in ["agentA", "agentB", "agentC"] {
      #expect(listing.contains("  \(name) "), "\(listing)")
    }
    #expect(
      listing.split(separator: "\n").contains { $0.contains("agentA") && $0.hasSuffix("this device") },
      "\(listing)")

    // B goes away; A removes C.
    b.stop()
    let (removed, said) = try a.run(["devices", "remove", "agentC"])
    #expect(removed == 0 && said.contains("removed agentC"), "\(said)")
    #expect(
      await eventually(30, "A on the new epoch") { a.log.contains("moved to epoch 1") },
      "\(a.log)")
    #expect(await listsRemoved(a, "agentC"), "\(a.log)")

    // C keeps writing; A writes too. C, still on epoch 0, keeps
    // advertising; A hears its beacon, which opens only with the old
    // epoch's keys and is C's, and ignores it: it never links with C.
    try c.save("from-c.md", "Late\nfrom C, removed\n")
    try a.save("from-a.md", "New\nfrom A, after the removal\n")
    #expect(
      await eventually(60, "A ignores C's beacons") { a.log.contains(ignoringC) }, "\(a.log)")
    // B comes back on its old epoch while C is off (a member that meets the
    // removed device before any member that knows of the removal takes what
    // it sends until then: PROTOCOL.md 6.3), and learns of it from A.
    c.stop()
    try b.start()
    #expect(
      await eventually(90, "B has A's new note") {
        b.read("from-a.md") == Array("New\nfrom A, after the removal\n".utf8)
      }, "\(group.logs)")
    #expect(await listsRemoved(b, "agentC"), "\(b.log)")
    #expect(b.log.contains("moved to epoch 1"), "\(b.log)")
    // C, back with everything it held, is ignored by B too.
    let ignoredBefore = occurrences(ignoringC, in: b.log)
    try c.start()
    #expect(
      await eventually(60, "B ignores C's beacons") {
        occurrences(ignoringC, in: b.log) > ignoredBefore
      }, "\(group.logs)")
    // Nobody linked with C once on the new epoch (a link would have ended
    // in a refusal), C got nothing written after its removal, and nobody
    // took C's note.
    for agent in [a, b] {
      #expect(!after(ignoringC, in: agent.log).contains(refusedC), "\(agent.log)")
    }
    #expect(c.read("from-a.md") == nil, "\(group.logs)")
    #expect(a.read("from-c.md") == nil && b.read("from-c.md") == nil, "\(group.logs)")
  }

  /// What a member logs on hearing C's beacon of the epoch C was removed from.
  private let ignoringC = "ignoring the beacons of agentC"
  /// What a member logs on refusing C after a handshake ("... was removed
  /// from the group by agentA; it gets nothing").
  private let refusedC = "was removed from the group by"

  private func occurrences(_ line: String, in log: String) -> Int {
    log.components(separatedBy: line).count - 1
  }

  /// The log from the first `line` on (empty when there is none): what the
  /// generation that logged it did, and the later ones.
  private func after(_ line: String, in log: String) -> Substring {
    guard let range = log.range(of: line) else { return "" }
    return log[range.lowerBound...]
  }
}
