import Foundation
import Testing

/// Issue 14 end to end: thousands of notes moved in at once reach the peer
/// whole, in well under a minute, and a save made afterwards still goes
/// through promptly (the agent that was busy does not starve its sessions).
@Suite(.serialized) struct ScaleEndToEndTests {
  static let count = 2000

  static func note(_ i: Int) -> (String, [UInt8]) {
    ("d\(i % 30)/n\(i).md", Array("# Note \(i)\nsome words of note \(i) to fill a line\n".utf8))
  }

  @Test func twoThousandNotesMovedInAtOnceAllArriveWhole() async throws {
    let group = try AgentGroup(count: 2)
    let (a, b) = (group.agents[0], group.agents[1])
    try group.startAll()
    let notes = (0..<Self.count).map(Self.note)
    // Written in a staging folder, then its folders moved in: all at once.
    let staging = group.base.appendingPathComponent("staging")
    for (path, bytes) in notes {
      let url = staging.appendingPathComponent(path)
      try FileManager.default.createDirectory(
        at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
      try Data(bytes).write(to: url)
    }
    let start = Date()
    for folder in try FileManager.default.contentsOfDirectory(atPath: staging.path) {
      try FileManager.default.moveItem(
        at: staging.appendingPathComponent(folder), to: a.notes.appendingPathComponent(folder))
    }
    // Checked in order; each poll resumes where the last one stopped.
    var pending = notes[...]
    let arrived = await eventually(55, "\(Self.count) notes in B") {
      while let (path, bytes) = pending.first, b.read(path) == bytes { pending.removeFirst() }
      return pending.isEmpty
    }
    let elapsed = Date().timeIntervalSince(start)
    print("\(Self.count) notes moved into A's folder were all in B after \(elapsed) s")
    #expect(arrived, "\(pending.count) notes missing after \(elapsed) s\n\(group.logs.suffix(20_000))")
    #expect(elapsed < 55)
    #expect(b.files().count == Self.count, "no conflict copies or strays")

    // Then one more save, as a user would make: it still goes through.
    let text = Array("# After\nthe bulk\n".utf8)
    try a.save("after.md", text)
    #expect(
      await eventually(20, "one more note in B") { b.read("after.md") == text },
      "\(group.logs.suffix(20_000))")
    #expect(!a.log.contains("cannot update the advertised beacon"), "\(a.log.suffix(5_000))")
  }
}
