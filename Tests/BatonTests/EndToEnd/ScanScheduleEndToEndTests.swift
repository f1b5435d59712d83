import Foundation
import Testing

/// The scan schedule (baton(1), Scanning) with real `baton` processes on one
/// simulated radio: linked agents stop scanning and still sync, what the
/// controller was told is read back from the agent's own HCI log, and a
/// peer that comes later is linked by its start burst.
@Suite(.serialized) struct ScanScheduleEndToEndTests {
  @Test func linkedAgentsStopScanningAndStillSync() async throws {
    let group = try AgentGroup(count: 3)
    let hciLog = group.base.appendingPathComponent("a-hci.btsnoop").path
    group.agents[0] = try group.makeAgent(0, name: "agentA", extraArguments: ["--hci-log", hciLog])
    let (a, b, c) = (group.agents[0], group.agents[1], group.agents[2])
    try a.start()
    try b.start()
    #expect(await linked(a, to: ["agentB"]), "\(group.logs)")
    #expect(await linked(b, to: ["agentA"]), "\(group.logs)")
    // The start burst ends and, with every peer linked, no window is due
    // for at least 36 s: both report the scan off.
    for agent in [a, b] {
      #expect(
        await eventually(60, "\(agent.name) not scanning") {
          (try? agent.status()["scanning"] as? String) == "windows: off"
        }, "\(group.logs)")
    }
    // The controller was told so: the last LE Set Scan Enable A sent
    // turned scanning off, after one had turned it on (the first, at
    // bring-up, turns off what a reset may have left on).
    let enables = try Self.scanEnables(inLog: hciLog)
    #expect(enables.contains(true) && enables.last == false, "scan enables: \(enables)")
    // The link carries a save with no scanning at all.
    try a.save("quiet.md", "Quiet\nsent while nobody scans\n")
    #expect(
      await eventually(30, "the note in B") {
        b.read("quiet.md") == Array("Quiet\nsent while nobody scans\n".utf8)
      }, "\(group.logs)")
    #expect(try Self.scanEnables(inLog: hciLog).last == false)
    // A newcomer scans in its start burst, hears both, and is linked with
    // both though neither of them scans now.
    try c.start()
    #expect(await linked(c, to: ["agentA", "agentB"]), "\(group.logs)")
    try c.save("late.md", "Late\n")
    #expect(
      await eventually(30, "C's note in A and B") {
        a.read("late.md") != nil && b.read("late.md") != nil
      }, "\(group.logs)")
  }

  @Test func continuousScanningIsAConfigurationChoice() async throws {
    let group = try AgentGroup(count: 1)
    let config = group.base.appendingPathComponent("a.conf").path
    try "[agent]\nscanning = continuous\n".write(toFile: config, atomically: true, encoding: .utf8)
    group.agents[0] = try group.makeAgent(0, name: "agentA", extraArguments: ["-f", config])
    let agent = group.agents[0]
    try agent.start()
    #expect(
      await eventually(30, "status says continuous") {
        (try? agent.status()["scanning"] as? String) == "continuous"
      }, "\(group.logs)")
  }

  // MARK: helpers

  /// The enable flag of every LE Set Scan Enable command in a btsnoop log
  /// (BTSnoopWriter's format: 16-byte header, then records of 24 bytes
  /// before each H4 packet).
  static func scanEnables(inLog path: String) throws -> [Bool] {
    let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
    func u32(_ at: Int) -> Int {
      bytes[at..<at + 4].reduce(0) { $0 << 8 | Int($1) }
    }
    var enables: [Bool] = []
    var at = 16
    while at + 24 <= bytes.count {
      let length = u32(at + 4)
      let packet = at + 24
      guard packet + length <= bytes.count else { break }
      // H4 command (1), opcode 0x200C little-endian, parameter length 2.
      if length >= 6, bytes[packet] == 0x01, bytes[packet + 1] == 0x0C, bytes[packet + 2] == 0x20 {
        enables.append(bytes[packet + 4] != 0)
      }
      at = packet + length
    }
    return enables
  }
}
