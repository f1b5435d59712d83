import BatonHandoff
import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// Issue 12 with real `baton` processes on one simulated radio and real
/// tools: `rm`, `mv`, `rm -r`, an editor that saves through a backup rename.
/// Every wait is on a positive signal (a file, a status field).
@Suite(.serialized) struct DeletionEndToEndTests {
  /// Runs a tool in `agent`'s notes folder; true if it exited 0.
  private func tool(_ agent: AgentProcess, _ arguments: [String]) throws -> Bool {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: arguments[0])
    process.arguments = Array(arguments.dropFirst())
    process.currentDirectoryURL = agent.notes
    try process.run()
    process.waitUntilExit()
    return process.terminationStatus == 0
  }

  /// The bytes of `path` in `agent`'s trash (any day), or nil.
  private func trashed(_ agent: AgentProcess, _ path: String) -> [UInt8]? {
    let trash = agent.notes.appendingPathComponent(".baton-trash")
    let days = (try? FileManager.default.contentsOfDirectory(atPath: trash.path)) ?? []
    for day in days.sorted() {
      if let bytes = FileManager.default.contents(
        atPath: trash.appendingPathComponent(day).appendingPathComponent(path).path)
      {
        return Array(bytes)
      }
    }
    return nil
  }

  private func exists(_ agent: AgentProcess, _ path: String) -> Bool {
    FileManager.default.fileExists(atPath: agent.notes.appendingPathComponent(path).path)
  }

  private func counter(_ agent: AgentProcess, _ name: String) -> Int {
    ((try? agent.status()["counters"] as? [String: Any])?[name] as? Int) ?? 0
  }

  @Test func rmMvAndAnEditorsBackupSaveTravelAsWhatTheyAre() async throws {
    let group = try AgentGroup(count: 2)
    let (a, b) = (group.agents[0], group.agents[1])
    try group.startAll()
    let notes = [
      "n1.md": "N1\nto delete\n", "keep.md": "Keep\nto rename\n", "sub/n2.md": "N2\nin sub\n",
      "sub/deeper/n3.md": "N3\ndeeper\n", "v.md": "V\nfirst\n",
    ]
    for (path, text) in notes { try a.save(path, text) }
    #expect(
      await eventually(60, "every note in B") {
        notes.allSatisfy { b.read($0.key) == Array($0.value.utf8) }
      }, "\(group.logs)")

    #expect(try tool(a, ["/bin/rm", "n1.md"]))
    #expect(try tool(a, ["/bin/mv", "keep.md", "renamed.md"]))
    #expect(try tool(a, ["/bin/rm", "-r", "sub"]))
    // vim's default save: the note renamed to a backup, the new bytes
    // written under the name, the backup removed.
    #expect(try tool(a, ["/bin/mv", "v.md", "v.md~"]))
    try a.save("v.md", "V\nsecond\n")
    #expect(try tool(a, ["/bin/rm", "v.md~"]))

    #expect(
      await eventually(60, "the deletions, the rename and the save in B") {
        !exists(b, "n1.md") && trashed(b, "n1.md") == Array("N1\nto delete\n".utf8)
          && b.read("renamed.md") == Array("Keep\nto rename\n".utf8) && !exists(b, "keep.md")
          && trashed(b, "sub/n2.md") != nil && trashed(b, "sub/deeper/n3.md") != nil
          && !exists(b, "sub") && b.read("v.md") == Array("V\nsecond\n".utf8)
      }, "\(group.logs)")
    // A rename is a rename, not a deletion; an editor's save is a save (the
    // version it replaced on B is kept, listed as overwritten).
    #expect(trashed(b, "keep.md") == nil && trashed(b, "v.md") == Array("V\nfirst\n".utf8))
    let (_, listing) = try b.run(["trash"])
    let line = listing.split(separator: "\n").first { $0.hasSuffix("/v.md") } ?? ""
    #expect(line.contains("  overwritten  "), "\(listing)")
    #expect(counter(b, "renamed") == 1, "\(group.logs)")
    #expect(counter(b, "trashed") == 3, "\(group.logs)")
    // Nothing came back to A.
    #expect(!exists(a, "n1.md") && !exists(a, "keep.md") && !exists(a, "sub"))
  }

  @Test func anAgentAwayDuringADeletionKeepsItsEditEverywhere() async throws {
    let group = try AgentGroup(count: 3)
    let (a, b, c) = (group.agents[0], group.agents[1], group.agents[2])
    try group.startAll()
    try a.save("x.md", "X\nfirst\n")
    try a.save("y.md", "Y\nto delete\n")
    #expect(
      await eventually(60, "both notes in B and C") {
        [b, c].allSatisfy { $0.read("x.md") != nil && $0.read("y.md") != nil }
      }, "\(group.logs)")
    #expect(c.stop() == 0)
    #expect(try tool(a, ["/bin/rm", "x.md", "y.md"]))
    #expect(
      await eventually(60, "the deletions in B") {
        trashed(b, "x.md") != nil && trashed(b, "y.md") != nil
      }, "\(group.logs)")
    // C, stopped, has its note edited; y.md it leaves alone.
    try c.save("x.md", "X\nedited on C while it was away\n")
    try c.start()
    let edit = Array("X\nedited on C while it was away\n".utf8)
    #expect(
      await eventually(90, "C's edit back on all three, y.md deleted on C") {
        [a, b, c].allSatisfy { $0.read("x.md") == edit } && !exists(c, "y.md")
          && trashed(c, "y.md") != nil
      }, "\(group.logs)")
  }

  /// Issue 30: `mv notes notes-old && mkdir notes` (here rename(2) then
  /// mkdir(2) with no gap, or with the new folder made only once the
  /// withdrawal is logged) deletes nothing anywhere: every peer keeps every
  /// note, no trash is made, and a note saved in the new folder travels.
  @Test(arguments: [false, true])
  func aReplacedFolderIsWithdrawnAndEveryPeerKeepsEveryNote(gap: Bool) async throws {
    let group = try AgentGroup(count: 3)
    let (a, b, c) = (group.agents[0], group.agents[1], group.agents[2])
    try group.startAll()
    let notes = [
      "one.md": "One\n", "two.md": "Two\n", "sub/three.md": "Three\nin sub\n",
      "sub/deeper/four.md": "Four\ndeeper\n",
    ]
    for (path, text) in notes { try a.save(path, text) }
    let everywhere = {
      notes.allSatisfy { note in [b, c].allSatisfy { $0.read(note.key) == Array(note.value.utf8) } }
    }
    #expect(await eventually(60, "every note in B and C") { everywhere() }, "\(group.logs)")

    let old = a.notes.path + "-old"
    #expect(rename(a.notes.path, old) == 0)
    if gap {
      #expect(
        await eventually(30, "A's withdrawal") { a.log.contains("4 notes withdrawn here") },
        "\(group.logs)")
    }
    #expect(mkdir(a.notes.path, 0o755) == 0)
    #expect(
      await eventually(30, "A watching the new folder") {
        a.log.contains("4 notes withdrawn here") && a.log.contains("is there again")
      }, "\(group.logs)")
    // Notes saved in the new folder travel, and one deleted there is
    // deleted everywhere: its removal is confirmed after the removal delay
    // of anything the replacement left pending, so once it is in the
    // peers' trash, every deletion A would make of the old notes is too.
    try a.save("new.md", "New\nin the new folder\n")
    try a.save("tmp.md", "Tmp\nto delete\n")
    #expect(
      await eventually(60, "the new notes in B and C") {
        [b, c].allSatisfy { $0.read("new.md") != nil && $0.read("tmp.md") != nil }
      }, "\(group.logs)")
    #expect(unlink(a.notes.appendingPathComponent("tmp.md").path) == 0)
    #expect(
      await eventually(60, "tmp.md in the trash of B and C") {
        [b, c].allSatisfy { trashed($0, "tmp.md") == Array("Tmp\nto delete\n".utf8) }
      }, "\(group.logs)")
    #expect(everywhere(), "\(group.logs)")
    for peer in [b, c] {
      #expect(peer.trashFiles().count == 1, "\(group.logs)")
      #expect(counter(peer, "trashed") == 1, "\(group.logs)")
    }
    print("issue 30, folder replaced: the trash of B and C: \([b, c].map { $0.trashFiles() })")
    // The withdrawn notes stay with the peers; A's new folder holds only its new note.
    #expect(a.files() == ["new.md"], "\(group.logs)")
    // A withdrawn note edited on a peer comes back to A with the edit.
    try b.save("one.md", "One\nedited on B\n")
    #expect(
      await eventually(60, "B's edit of one.md in A") {
        a.read("one.md") == Array("One\nedited on B\n".utf8)
      }, "\(group.logs)")
    #expect(a.files() == ["new.md", "one.md"], "\(group.logs)")
    #expect(!a.log.contains("one.md was deleted here"), "\(group.logs)")
    print(
      "issue 30, folder replaced (gap: \(gap)): A's log: "
        + "\(a.logLines(containing: "withdrawn") + a.logLines(containing: "is there again;"))")
  }

  /// Issue 30: the folder replaced while its agent is stopped (another
  /// inode at the next start) deletes nothing either: the notes missing
  /// from the new folder stay with the peer, the one it holds is the same.
  @Test func aFolderReplacedWhileTheAgentIsStoppedDeletesNothing() async throws {
    let group = try AgentGroup(count: 2)
    let (a, b) = (group.agents[0], group.agents[1])
    try group.startAll()
    let notes = ["one.md": "One\n", "two.md": "Two\n", "sub/three.md": "Three\n"]
    for (path, text) in notes { try a.save(path, text) }
    let inB = { notes.allSatisfy { b.read($0.key) == Array($0.value.utf8) } }
    #expect(await eventually(60, "every note in B") { inB() }, "\(group.logs)")
    #expect(a.stop() == 0)
    #expect(rename(a.notes.path, a.notes.path + "-old") == 0)
    #expect(mkdir(a.notes.path, 0o755) == 0)
    try a.save("one.md", "One\n")
    try a.start()
    #expect(
      await eventually(30, "A's withdrawal at start") {
        a.log.contains("2 notes missing from it are withdrawn here")
      }, "\(group.logs)")
    try a.save("new.md", "New\n")
    #expect(
      await eventually(60, "the new note in B") { b.read("new.md") == Array("New\n".utf8) },
      "\(group.logs)")
    #expect(inB(), "\(group.logs)")
    #expect(counter(b, "trashed") == 0, "\(group.logs)")
    #expect(a.files() == ["new.md", "one.md"], "\(group.logs)")
  }

  /// Issue 30: `rm` of most of a folder with real agents and the real
  /// command: held on A (not sent: B, which holds nothing, keeps every
  /// note), shown by `baton status` and `baton deletions`, and `baton
  /// deletions reject` brings the notes back to A from B.
  @Test func rmOfMostOfAFolderIsHeldUntilBatonDeletionsReject() async throws {
    let group = try AgentGroup(count: 2)
    let (a, b) = (group.agents[0], group.agents[1])
    let config = b.notes.deletingLastPathComponent().appendingPathComponent("config/baton")
    try FileManager.default.createDirectory(at: config, withIntermediateDirectories: true)
    try Data("[agent]\nhold-deletions = 0\n".utf8).write(
      to: config.appendingPathComponent("baton.conf"))
    try group.startAll()
    var notes: [String: String] = [:]
    for i in 0..<20 { notes[String(format: "n%02d.md", i)] = "N\(i)\n" }
    for (path, text) in notes { try a.save(path, text) }
    let inB = { notes.allSatisfy { b.read($0.key) == Array($0.value.utf8) } }
    #expect(await eventually(60, "every note in B") { inB() }, "\(group.logs)")

    let gone = notes.keys.sorted().prefix(15).map { a.notes.appendingPathComponent($0).path }
    #expect(try tool(a, ["/bin/rm"] + gone))
    #expect(
      await eventually(30, "A holding the deletions") {
        ((try? a.status())?["heldDeletions"] as? Int) == 15
      }, "\(group.logs)")
    #expect(a.log.contains("15 notes deleted here at once, more than hold-deletions allows"))
    let (code, listing) = try a.run(["deletions"])
    #expect(code == 0 && listing.contains("15 deletions held:"), "\(listing)")
    #expect(listing.contains("n00.md  deleted here"), "\(listing)")
    let (_, shown) = try a.run(["status"])
    #expect(shown.contains("deletions held: 15"), "\(shown)")
    print(
      "issue 30, rm of 15 of 20: A's log: \(a.logLines(containing: "hold-deletions"))\n"
        + "baton status:\n\(shown)baton deletions:\n\(listing)")

    let (rejected, said) = try a.run(["deletions", "reject"])
    #expect(rejected == 0 && said.contains("15 deleted here come back"), "\(said)")
    print("issue 30, baton deletions reject: \(said)")
    #expect(
      await eventually(60, "the notes back in A") {
        notes.allSatisfy { a.read($0.key) == Array($0.value.utf8) }
      }, "\(group.logs)")
    // They came back from B, which applies any deletion it gets: none came.
    #expect(inB(), "\(group.logs)")
    #expect(counter(b, "trashed") == 0, "\(group.logs)")
    #expect(!a.log.contains("n00.md was deleted here"), "\(group.logs)")
    #expect(((try? a.status())?["heldDeletions"] as? Int) == nil)
    let (_, none) = try a.run(["deletions"])
    #expect(none.contains("no deletions held"), "\(none)")
    let (bad, usage) = try a.run(["deletions", "now"])
    #expect(bad == 2 && usage.contains("expected apply or reject"), "\(usage)")
  }
}
