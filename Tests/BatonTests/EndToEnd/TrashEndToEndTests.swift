import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// Issue 30, versions on overwrite, with real `baton` processes on one
/// simulated radio and the real commands: a peer's newer version keeps the
/// one it replaces in the trash, `baton trash` lists it, and `baton
/// restore` puts it back as an edit that travels (and keeps, on both
/// sides, the version it replaces in turn). Every wait is on a file.
@Suite(.serialized) struct TrashEndToEndTests {
  /// The files in `agent`'s trash (any day) with their bytes.
  private func trash(_ agent: AgentProcess) -> [String: String] {
    var result: [String: String] = [:]
    let root = agent.notes.appendingPathComponent(".baton-trash")
    for day in (try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? [] {
      let folder = root.appendingPathComponent(day)
      for name in (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
      where !name.hasPrefix(".") {
        let bytes = FileManager.default.contents(atPath: folder.appendingPathComponent(name).path)
        result[name] = bytes.map { String(decoding: $0, as: UTF8.self) }
      }
    }
    return result
  }

  @Test func anOverwrittenVersionIsKeptAndRestoredAndItTravels() async throws {
    let group = try AgentGroup(count: 2)
    let (a, b) = (group.agents[0], group.agents[1])
    try group.startAll()
    let (v1, v2) = ("N\nfirst, written on A\n", "N\nsecond, written on B\n")
    try a.save("n.md", v1)
    #expect(
      await eventually(60, "n.md in B") { b.read("n.md") == Array(v1.utf8) }, "\(group.logs)")
    // B's edit replaces A's file: A keeps v1 in its trash.
    try b.save("n.md", v2)
    #expect(
      await eventually(60, "B's edit in A, v1 in A's trash") {
        a.read("n.md") == Array(v2.utf8) && trash(a)["n.md"] == v1
      }, "\(group.logs)")
    #expect(a.log.contains("the version it replaced is in .baton-trash/"), "\(a.log)")
    #expect(trash(b).isEmpty)  // B's own save replaced nothing of a peer's

    let (listed, listing) = try a.run(["trash"])
    #expect(listed == 0, "\(listing)")
    #expect(listing.contains("1 version in the trash, \(v1.utf8.count) bytes:"), "\(listing)")
    let line = listing.split(separator: "\n").first { $0.contains("overwritten") } ?? ""
    #expect(line.contains("  \(v1.utf8.count) bytes  ") && line.hasSuffix("/n.md"), "\(listing)")
    print(
      "issue 30, overwrite: A's log: \(a.logLines(containing: "the version it replaced"))\n"
        + "baton trash:\n\(listing)")

    // baton restore: v1 back in A as a local edit; v2 kept in A's trash.
    let (restored, said) = try a.run(["restore", a.notes.appendingPathComponent("n.md").path])
    #expect(restored == 0 && said.contains("restored n.md from .baton-trash/"), "\(said)")
    print("issue 30, baton restore: \(said)")
    #expect(a.read("n.md") == Array(v1.utf8))
    #expect(trash(a) == ["n.md": v1, "n-2.md": v2], "\(trash(a))")
    // It travels: B gets v1 back, and keeps the v2 it replaces.
    #expect(
      await eventually(60, "the restored v1 in B, v2 in B's trash") {
        b.read("n.md") == Array(v1.utf8) && trash(b)["n.md"] == v2
      }, "\(group.logs)")
    // Nothing came back over it, and no conflict copy was made anywhere.
    #expect(a.read("n.md") == Array(v1.utf8))
    let notes = { (agent: AgentProcess) in agent.files().filter { !$0.hasPrefix(".baton-trash/") } }
    #expect(notes(a) == ["n.md"] && notes(b) == ["n.md"], "\(a.files()) \(b.files())")
    let (_, after) = try b.run(["trash", "--json"])
    #expect(after.contains("\"reason\":\"overwritten\""), "\(after)")

    // What restore refuses: no version, a day that is not one.
    let (none, why) = try a.run(["restore", a.notes.appendingPathComponent("other.md").path])
    #expect(none == 1 && why.contains("the trash holds no version of other.md"), "\(why)")
    let (bad, usage) = try a.run(["restore", "n.md", "yesterday"])
    #expect(bad == 2 && usage.contains("expected yyyy-mm-dd"), "\(usage)")
  }
}
