import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// The real `baton` binary on a simulated radio that loses, corrupts and
/// duplicates HCI packets (issue 16 item 8): a broken session costs seconds,
/// what arrived stays, and every note gets through.
@Suite(.serialized) struct FaultEndToEndTests {
  /// ACL fragments lost and corrupted both ways on both controllers (a UART
  /// without CRC): every note arrives, each once, within a bound, and no
  /// session waits out the 20 s deadline.
  @Test func notesMakeProgressWhenACLPacketsAreLostOrCorrupted() async throws {
    let group = try AgentGroup(
      count: 2,
      faults: "drop type=acl p=0.005; corrupt type=acl p=0.002; duplicate type=acl p=0.001",
      seed: 16)
    let (a, b) = (group.agents[0], group.agents[1])
    var expected: [String: [UInt8]] = [:]
    for i in 1...30 {
      let text = "Note \(i)\n" + String(repeating: "line \(i) of a short note\n", count: 12)
      expected["n\(i).md"] = Array(text.utf8)
      try a.save("n\(i).md", text)
    }
    let started = Date()
    try group.startAll()
    #expect(
      await eventually(240, "30 notes in B") {
        expected.allSatisfy { b.read($0.key) == $0.value }
      }, "\(group.logs)")
    let elapsed = Date().timeIntervalSince(started)
    #expect(group.radio.injectedFaults.count > 0)
    // Each note was written once: what arrived was not fetched again.
    #expect(b.files().count == 30, "\(b.files())")
    #expect(try counter(b, "received") == 30, "\(group.logs)")
    // Broken sessions were noticed by the L2CAP layer, not by the deadline.
    #expect(!group.logs.contains("did not take part for"), "\(group.logs)")
    #expect(!group.logs.contains("sent nothing for 20"), "\(group.logs)")
    print("30 notes through \(group.radio.injectedFaults.count) faults in \(Int(elapsed)) s")
  }

  /// Issue 30: with 1 % of ACL packets damaged and 1 % lost (both ways, both
  /// controllers), A writes 50 notes while the faults are on, then B writes
  /// 50: at least 45 of each reach the other side while the faults last (up
  /// to 60 s after the last save), since a fault costs the frames it hit,
  /// which are sent again (PROTOCOL.md section 5, "Faults"); once the
  /// faults stop, every note arrives. At 5 % damaged and 5 % lost, most of
  /// them (at least 30) do: a frame sealed large before the first fault
  /// goes again in parts (section 5, "Parts"). Protocol 5 moved 5 and 2, 0 and 1, 3 and 3
  /// of 50 here at 1 % (A to B, B to A); protocol 6 moved 50 and 50 in each
  /// of four runs on 2 shared cores (seed 30). At 5 %, protocol 7 moved 0
  /// to 3 before the controller's lost buffers were counted lost, and in
  /// eight runs since, 50, 9, 21, 7, 10, 48, 14 and 50 A to B and 50, 50,
  /// 6, 50, 50, 2, 50 and 50 B to A (its frames sent again whole); protocol
  /// 8 moved 50 and 50 in each of ten runs. `BATON_TEST_FAULT_P` sets
  /// another rate for a measurement (at 10 %, protocol 8 moved 2 and 20,
  /// 21 and 0).
  @Test(arguments: [(0.01, 45), (0.05, 30)])
  func notesMoveWhileACLPacketsAreDamagedOrLost(rate: Double, floor: Int) async throws {
    let p = ProcessInfo.processInfo.environment["BATON_TEST_FAULT_P"] ?? "\(rate)"
    let group = try AgentGroup(
      count: 2, faults: "corrupt type=acl p=\(p); drop type=acl p=\(p)", seed: 30,
      faultsStartOff: true)
    let (a, b) = (group.agents[0], group.agents[1])
    try group.startAll()
    #expect(await linked(a, to: ["agentB"]), "\(group.logs)")
    #expect(await linked(b, to: ["agentA"]), "\(group.logs)")
    var counts: [Int] = []
    for (writer, reader, tag) in [(a, b, "a"), (b, a, "b")] {
      var expected: [String: [UInt8]] = [:]
      for i in 1...50 {
        let text = "Note \(tag)\(i)\n" + String(repeating: "line \(i) of a short note\n", count: 12)
        expected["\(tag)\(i).md"] = Array(text.utf8)
      }
      func arrived() -> Int { expected.filter { reader.read($0.key) == $0.value }.count }
      group.radio.faultsOn()
      for (name, bytes) in expected.sorted(by: { $0.key < $1.key }) { try writer.save(name, bytes) }
      _ = await eventually(60, "50 notes from \(writer.name) during the faults") { arrived() == 50 }
      counts.append(arrived())
      group.radio.faultsOff()
      #expect(
        await eventually(180, "50 notes from \(writer.name) after the faults") { arrived() == 50 },
        "\(group.logs)")
    }
    print(
      "issue 30, p=\(p): \(counts[0]) of 50 notes A to B and \(counts[1]) of 50 B to A"
        + " during the faults; \(group.radio.injectedFaults.count) faults injected")
    #expect(group.radio.injectedFaults.count > 0)
    #expect(counts.allSatisfy { $0 >= floor }, "\(counts) \(group.logs)")
  }

  /// Lost Number Of Completed Packets events: the controller's buffers
  /// they would have returned are gone while the connection lasts, until
  /// none is left. The stalled connection is dropped (which returns them)
  /// and the notes still all arrive.
  @Test func notesArriveWhenPacketCompletionsAreLost() async throws {
    let group = try AgentGroup(count: 2, faults: "drop event=0x13 p=0.25", seed: 3)
    let (a, b) = (group.agents[0], group.agents[1])
    var expected: [String: [UInt8]] = [:]
    for i in 1...12 {
      // About 3 KB each: well over the 64 buffers' worth of 27-byte packets
      // in all, so that completions run out on a connection.
      let text = "Note \(i)\n" + String(repeating: "\(i) the quick brown fox jumps\n", count: 100)
      expected["c\(i).md"] = Array(text.utf8)
      try a.save("c\(i).md", text)
    }
    try group.startAll()
    #expect(
      await eventually(240, "12 notes in B") {
        expected.allSatisfy { b.read($0.key) == $0.value }
      }, "\(group.logs)")
    #expect(group.radio.injectedFaults.count > 64)
    #expect(b.files().count == 12, "\(b.files())")
    #expect(!group.logs.contains("sent nothing for 20"), "\(group.logs)")
  }

  /// Issue 16 item 2: one lost LE Connection Complete, on the side that
  /// connects or on the side connected to, no longer stops all syncing
  /// between the pair. Each agent holds a note the other lacks; both get
  /// through, and the two end up linked.
  @Test(arguments: [0, 1])
  func oneLostConnectionCompleteDoesNotStopSyncing(controller: Int) async throws {
    let group = try AgentGroup(
      count: 2,
      faults: "drop subevent=0x0a controller=\(controller) count=1;"
        + " drop subevent=0x01 controller=\(controller) count=1")
    let (a, b) = (group.agents[0], group.agents[1])
    try a.save("from-a.md", "From A\nbefore the lost event\n")
    try b.save("from-b.md", "From B\nbefore the lost event\n")
    try group.startAll()
    #expect(
      await eventually(120, "each note on the other side") {
        b.read("from-a.md") != nil && a.read("from-b.md") != nil
      }, "\(group.logs)")
    #expect(
      group.radio.injectedFaults.contains { $0.contains("subevent 0x0a") || $0.contains("subevent 0x01") },
      "\(group.radio.injectedFaults)")
    try a.save("later.md", "Later\nfrom A\n")
    #expect(
      await eventually(60, "a later note in B") { b.read("later.md") != nil }, "\(group.logs)")
  }

  private func counter(_ agent: AgentProcess, _ name: String) throws -> Int {
    let status = try agent.status()
    let counters = status["counters"] as? [String: Any] ?? [:]
    return (counters[name] as? Int) ?? -1
  }
}
