import BatonHandoff
import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// Links that stay up (PROTOCOL.md 6.1): real `baton` processes on one
/// simulated radio. Every wait is on a positive signal (a file, a status
/// field); the bounds are generous so a loaded machine passes too.
@Suite(.serialized) struct LinkEndToEndTests {
  @Test func simultaneousSavesOnBothSidesAllArriveOverTheLink() async throws {
    let group = try AgentGroup(count: 2)
    let (a, b) = (group.agents[0], group.agents[1])
    try group.startAll()
    #expect(await linked(a, to: ["agentB"]), "\(group.logs)")
    #expect(await linked(b, to: ["agentA"]), "\(group.logs)")
    // Saves on both sides at once, interleaved, while the link carries both ways.
    for i in 1...20 {
      try a.save("a\(i).md", "A\(i)\nfrom A\n")
      try b.save("b\(i).md", "B\(i)\nfrom B\n")
    }
    // One note both sides edit at once: a conflict, resolved once.
    try a.save("both.md", "Both\nA's words\n")
    try b.save("both.md", "Both\nB's words\n")
    func complete(_ agent: AgentProcess) -> Bool {
      (1...20).allSatisfy {
        agent.read("a\($0).md") == Array("A\($0)\nfrom A\n".utf8)
          && agent.read("b\($0).md") == Array("B\($0)\nfrom B\n".utf8)
      }
    }
    #expect(await eventually(60, "all 40 notes on both sides") { complete(a) && complete(b) },
      "\(group.logs)")
    // Both edits survive, and both sides end with the same files (the note
    // and its conflict copies; how many copies depends on which save each
    // side indexed first, so that is not asserted here: see
    // HandoffEndToEndTests.concurrentEditsBothSurviveOnBothSides).
    let both: Set<[UInt8]> = [Array("Both\nA's words\n".utf8), Array("Both\nB's words\n".utf8)]
    func contents(_ agent: AgentProcess) -> Set<[UInt8]> {
      Set(agent.files().filter { $0.hasPrefix("both") }.compactMap { agent.read($0) })
    }
    #expect(
      await eventually(60, "both edits, the same files on both sides") {
        contents(a).isSuperset(of: both) && a.files() == b.files() && contents(a) == contents(b)
      }, "\(group.logs)")
    // Still linked: nothing needed a new connection.
    #expect(await linked(a, to: ["agentB"]), "\(group.logs)")
  }

  @Test func aPeerKilledWhileLinkedIsLinkedAgainAfterItRestarts() async throws {
    let group = try AgentGroup(count: 2, controllers: 3)
    let (a, b) = (group.agents[0], group.agents[1])
    try group.startAll()
    try a.save("before.md", "Before\nthe kill\n")
    #expect(await eventually(30, "the first note in B") { b.read("before.md") != nil },
      "\(group.logs)")
    #expect(await linked(a, to: ["agentB"]), "\(group.logs)")
    b.kill9()
    // A killed agent's controller keeps the link up (bumble's does; so does a
    // UART controller whose host died): to A it is half-open. B comes back on
    // a fresh controller, as it would on a reset one, with a new address.
    b.controller = group.radio.spec(2)
    try b.start()
    try a.save("after-a.md", "After\nfrom A\n")
    try b.save("after-b.md", "After\nfrom B\n")
    #expect(
      await eventually(60, "both new notes on both sides") {
        b.read("after-a.md") != nil && a.read("after-b.md") != nil && b.read("before.md") != nil
      }, "\(group.logs)")
    // The link is up again, with B at its new address.
    var bAddress: String?
    #expect(
      await eventually(60, "A linked with the restarted B") {
        bAddress = try? b.status()["address"] as? String
        let peers = (try? a.status()["peers"] as? [[String: Any]]) ?? []
        return bAddress != nil
          && peers.contains {
            $0["address"] as? String == bAddress && $0["link"] as? String == "up"
              && $0["name"] as? String == "agentB"
          }
      }, "\(group.logs)")
    // And it carries saves made from now on.
    try b.save("later.md", "Later\nfrom B\n")
    #expect(
      await eventually(30, "a later note in A") { a.read("later.md") != nil }, "\(group.logs)")
  }

  /// The controller drops the connection in the middle of a note's
  /// transfer (the radio's `disconnect` fault: a supervision timeout, reason
  /// 0x08, reported to both hosts): the link goes down on both sides, comes
  /// back up, and the note arrives whole, and so does the next one.
  @Test func aLinkDroppedByTheControllerMidTransferComesBackAndTheNoteArrives() async throws {
    let group = try AgentGroup(
      count: 2, faults: "disconnect type=acl to=controller controller=0 skip=40 count=1",
      faultsStartOff: true)
    let (a, b) = (group.agents[0], group.agents[1])
    try group.startAll()
    #expect(await linked(a, to: ["agentB"]), "\(group.logs)")
    #expect(await linked(b, to: ["agentA"]), "\(group.logs)")
    // About 60 KB: hundreds of ACL packets, so the 41st from A's host is
    // in the middle of it.
    let big = "Big\n" + String(repeating: "a line of the long note that is cut\n", count: 1700)
    group.radio.faultsOn()
    try a.save("big.md", big)
    #expect(
      await eventually(90, "the long note whole in B") { b.read("big.md") == Array(big.utf8) },
      "\(group.logs)")
    #expect(
      group.radio.injectedFaults.contains { $0.contains("disconnected C0") },
      "\(group.radio.injectedFaults)")
    // It was cut: the link went down, then up again, on A's side.
    #expect(
      await eventually(30, "A's link down and up again") {
        let lines = a.log.split(separator: "\n").filter { $0.contains("handoff: link with agentB") }
        return lines.contains { $0.contains(" down: ") }
          && lines.filter { $0.contains(") up (") }.count >= 2
      }, "\(group.logs)")
    #expect(await linked(a, to: ["agentB"]), "\(group.logs)")
    try a.save("after.md", "After\nthe cut\n")
    #expect(
      await eventually(30, "a later note in B") { b.read("after.md") != nil }, "\(group.logs)")
  }

  @Test func threeAgentsAreAllLinkedAndStatusNamesEveryPeer() async throws {
    let group = try AgentGroup(count: 3)
    try group.startAll()
    let names = group.agents.map(\.name)
    for agent in group.agents {
      let others = Set(names.filter { $0 != agent.name })
      #expect(await linked(agent, to: others), "\(agent.name): \(group.logs)")
    }
    for agent in group.agents {
      try agent.save("from-\(agent.name).md", "From \(agent.name)\n")
    }
    for agent in group.agents {
      #expect(
        await eventually(60, "every note in \(agent.name)") {
          names.allSatisfy { agent.read("from-\($0).md") == Array("From \($0)\n".utf8) }
        }, "\(group.logs)")
    }
  }

  @Test func aConnectionOnWhichNoChannelIsOpenedIsDropped() async throws {
    let group = try AgentGroup(count: 2, controllers: 3)
    let (a, b) = (group.agents[0], group.agents[1])
    try a.start()
    var address: String?
    #expect(
      await eventually(30, "A's address") {
        address = try? a.status()["address"] as? String
        return address != nil
      })
    guard let address else { return }
    // An independent host connects to A and opens nothing (as when the
    // connecting agent's Connection Complete was lost): A drops it.
    let script = TestEnvironment.repository.appendingPathComponent("Tests/Radio/peer.py").path
    let peer = try ChildProcess(
      TestEnvironment.python,
      [script, "connect-only", "--peer", address, "--port", String(group.radio.ports[2]),
        "--seconds", "60"])
    defer { peer.stop() }
    _ = try await BumbleInteropTests.expectLine("CONNECTED", from: peer)
    let ended = try await BumbleInteropTests.expectLine("DISCONNECTED", from: peer)
    #expect(ended.count >= 1, "\(group.logs)")
    #expect(a.log.contains("opened no channel"), "\(group.logs)")
    // And A still links and syncs.
    try b.start()
    try a.save("after.md", "After\nthe stray connection\n")
    #expect(await eventually(30, "the note in B") { b.read("after.md") != nil }, "\(group.logs)")
  }
}
