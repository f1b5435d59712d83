import BatonTestSupport
import Foundation
import Testing

@testable import BatonHandoff
@testable import BatonNotes

/// Issue 12: deletions and renames travel (PROTOCOL.md sections 7.2, 7.3).
/// The version rules between two or three engines over sessions and links:
/// a deletion wins over what it saw, loses to an edit it did not see, and
/// never unlinks anything on a peer (it trashes, and only the bytes it saw).
@Suite struct DeletionTests {
  let key = GroupKey.generate()
  static let notes = HandoffTestAgent.notesType

  /// The user deletes `path` (the watcher's removal, after the file is gone).
  private func delete(_ agent: HandoffTestAgent, _ path: String) async {
    agent.folder.remove(path)
    await agent.engine.localRemove(relativePath: path, activityType: Self.notes)
  }

  /// The user renames `from` to `to` (mv: the watcher's `.renamed`).
  private func rename(_ agent: HandoffTestAgent, _ from: String, _ to: String) async {
    let text = agent.folder.text(from)!
    agent.folder.remove(from)
    agent.folder.put(to, text)
    await agent.engine.localRename(
      from: from, to: NoteSave(relativePath: to, bytes: Array(text.utf8)),
      activityType: Self.notes)
  }

  private func sameIndex(_ agents: HandoffTestAgent...) async -> Bool {
    var digests: Set<UInt32> = []
    for a in agents { digests.insert(await a.engine.beaconContent().indexDigest) }
    return digests.count == 1
  }

  /// Alice with `notes`, and bob in sync with her (one session).
  private func twoInSync(_ notes: [String: String]) async throws -> (HandoffTestAgent, HandoffTestAgent) {
    let a = try HandoffTestAgent("alice", key: key)
    let b = try HandoffTestAgent("bob", key: key)
    for (path, text) in notes.sorted(by: { $0.key < $1.key }) { await a.save(path, text) }
    #expect(await synced(b, a))
    return (a, b)
  }

  private func synced(_ a: HandoffTestAgent, _ b: HandoffTestAgent) async -> Bool {
    let (r1, r2) = await runSession(a, b)
    return r1.succeeded && r2.succeeded
  }

  @Test func aDeletionTravelsAndThePeerTrashesItsCopy() async throws {
    let (a, b) = try await twoInSync(["n.md": "# N\nbody\n", "keep.md": "# Keep\n"])
    #expect(b.folder.text("n.md") == "# N\nbody\n")

    await delete(a, "n.md")
    #expect(await synced(b, a))
    #expect(b.folder.paths == ["keep.md"])
    #expect(b.folder.trashed.withLock { $0["n.md"] } == Array("# N\nbody\n".utf8))
    #expect(await b.counter(HandoffCounter.trashed) == 1)
    #expect(await sameIndex(a, b))
    // Settled: nothing more to do either way, and no failure anywhere.
    let (r1, r2) = await runSession(a, b)
    #expect(r1.value?.received == [] && r2.value?.received == [])
    #expect(await a.counter(HandoffCounter.failed) == 0)
    #expect(await b.counter(HandoffCounter.failed) == 0)
  }

  /// The deleting side had not seen bob's edit: the edit wins, and the note
  /// comes back on alice too.
  @Test func anEditTheDeletionDidNotSeeBringsTheNoteBack() async throws {
    let (a, b) = try await twoInSync(["n.md": "# N\n"])
    await delete(a, "n.md")
    await b.save("n.md", "# N\nedited by bob\n")
    #expect(await synced(b, a))
    #expect(a.folder.text("n.md") == "# N\nedited by bob\n")
    #expect(b.folder.text("n.md") == "# N\nedited by bob\n")
    #expect(b.folder.trashed.withLock { $0.isEmpty })
    #expect(await sameIndex(a, b))
  }

  /// The same, with the initiator the deleting side: the tombstone reaches
  /// bob in TURN, bob keeps its edit and alice takes it in the next session.
  @Test func anEditWinsWhicheverSideConnects() async throws {
    let (a, b) = try await twoInSync(["n.md": "# N\n"])
    await delete(a, "n.md")
    await b.save("n.md", "# N\nedited by bob\n")
    #expect(await synced(a, b))
    #expect(await synced(a, b))
    #expect(a.folder.text("n.md") == "# N\nedited by bob\n")
    #expect(b.folder.text("n.md") == "# N\nedited by bob\n")
    #expect(await sameIndex(a, b))
  }

  /// An edit on disk the engine has not been told of yet is not trashed.
  @Test func anUnreportedEditIsNotTrashed() async throws {
    let (a, b) = try await twoInSync(["n.md": "# N\n"])
    await delete(a, "n.md")
    b.folder.put("n.md", "# N\nunsaved edit\n")  // not reported
    #expect(await synced(b, a))
    #expect(b.folder.text("n.md") == "# N\nunsaved edit\n")
    #expect(b.folder.trashed.withLock { $0.isEmpty })
    #expect(await synced(b, a))
    #expect(a.folder.text("n.md") == "# N\nunsaved edit\n")
  }

  @Test func deletedOnBothSidesStaysDeleted() async throws {
    let (a, b) = try await twoInSync(["n.md": "# N\n", "keep.md": "# Keep\n"])
    await delete(a, "n.md")
    await delete(b, "n.md")
    #expect(await synced(b, a))
    #expect(a.folder.paths == ["keep.md"] && b.folder.paths == ["keep.md"])
    #expect(a.folder.trashed.withLock { $0.isEmpty } && b.folder.trashed.withLock { $0.isEmpty })
    #expect(await sameIndex(a, b))
  }

  /// Saved again after the deletion, even with the same bytes: a new note,
  /// which wins over the tombstone everywhere.
  @Test func aNoteSavedAgainAfterItsDeletionComesBack() async throws {
    let (a, b) = try await twoInSync(["n.md": "# N\n"])
    await delete(a, "n.md")
    #expect(await synced(b, a))
    #expect(b.folder.text("n.md") == nil)
    await a.save("n.md", "# N\n")
    #expect(await synced(b, a))
    #expect(b.folder.text("n.md") == "# N\n")
    #expect(await sameIndex(a, b))
  }

  /// Three agents: carol was away while alice deleted a note that carol
  /// edited meanwhile. When carol is back, her edit wins on all three.
  @Test func anAgentAwayDuringADeletionKeepsItsEdit() async throws {
    let a = try HandoffTestAgent("alice", key: key)
    let b = try HandoffTestAgent("bob", key: key)
    let c = try HandoffTestAgent("carol", key: key)
    await a.save("n.md", "# N\n")
    #expect(await synced(b, a))
    #expect(await synced(c, b))
    await delete(a, "n.md")
    #expect(await synced(b, a))
    #expect(b.folder.text("n.md") == nil)
    await c.save("n.md", "# N\ncarol's edit\n")
    #expect(await synced(c, b))
    #expect(await synced(b, a))
    for agent in [a, b, c] { #expect(agent.folder.text("n.md") == "# N\ncarol's edit\n") }
    #expect(await sameIndex(a, b, c))
  }

  /// An agent that never held the note records the tombstone and passes it
  /// on; a third agent's older copy is then not fetched back.
  @Test func aTombstonePassesThroughAnAgentThatNeverHadTheNote() async throws {
    let a = try HandoffTestAgent("alice", key: key)
    let b = try HandoffTestAgent("bob", key: key)
    let c = try HandoffTestAgent("carol", key: key)
    await a.save("n.md", "# N\n")
    #expect(await synced(c, a))
    await delete(a, "n.md")
    #expect(await synced(b, a))  // bob never had it: keeps the tombstone
    #expect(await synced(c, b))  // carol learns the deletion from bob
    #expect(c.folder.text("n.md") == nil)
    #expect(c.folder.trashed.withLock { $0["n.md"] } == Array("# N\n".utf8))
    #expect(b.folder.paths.isEmpty)
    #expect(await sameIndex(a, b, c))
  }

  /// A rename in one exchange (alice's TURN lists the tombstone and the new
  /// note): bob renames his copy, and no bytes cross.
  @Test func aRenameInASessionRenamesThePeersCopy() async throws {
    let (a, b) = try await twoInSync(["Untitled.md": "# Plans\n"])
    await rename(a, "Untitled.md", "plans/Plans.md")
    let sentBefore = await a.counter(HandoffCounter.sent)
    #expect(await synced(a, b))
    #expect(b.folder.paths == ["plans/Plans.md"])
    #expect(b.folder.text("plans/Plans.md") == "# Plans\n")
    #expect(b.folder.trashed.withLock { $0.isEmpty })
    #expect(await b.counter(HandoffCounter.renamed) == 1)
    #expect(await a.counter(HandoffCounter.sent) == sentBefore)
    #expect(await sameIndex(a, b))
  }

  /// Renamed on alice while bob edited the old name: bob's edit is kept
  /// under the old name, alice's bytes under the new one; nothing is lost.
  @Test func aRenameMeetsAnEditOnTheOtherSide() async throws {
    let (a, b) = try await twoInSync(["old.md": "# Old\n"])
    await rename(a, "old.md", "new.md")
    await b.save("old.md", "# Old\nbob's edit\n")
    #expect(await synced(b, a))
    for agent in [a, b] {
      #expect(agent.folder.text("old.md") == "# Old\nbob's edit\n")
      #expect(agent.folder.text("new.md") == "# Old\n")
    }
    #expect(await sameIndex(a, b))
  }

  /// Renamed to a name bob already uses for other bytes: bob's file stays,
  /// alice's bytes arrive as a conflict copy, the old name is trashed.
  @Test func aRenameToANameTakenOnThePeerLosesNothing() async throws {
    let (a, b) = try await twoInSync(["draft.md": "# Draft\n"])
    await b.save("final.md", "# Bob's final\n")
    await rename(a, "draft.md", "final.md")
    #expect(await synced(b, a))
    let texts = Set(b.folder.contents.values)
    #expect(texts.isSuperset(of: ["# Draft\n", "# Bob's final\n"]))
    #expect(b.folder.text("draft.md") == nil)
    #expect(b.folder.trashed.withLock { $0["draft.md"] } == Array("# Draft\n".utf8))
  }

  /// On a link a rename goes as MOVED: bob renames his copy and the note's
  /// bytes do not cross again; a deletion goes as GONE.
  @Test func onALinkARenameIsMovedAndADeletionIsGone() async throws {
    let a = try HandoffTestAgent("alice", key: key)
    let b = try HandoffTestAgent("bob", key: key)
    await a.save("a.md", "# A\n")
    await a.save("b.md", "# B\n")
    let (la, lb) = try await openLink(a, b)
    let ra = Task { await a.engine.runLink(la) }
    let rb = Task { await b.engine.runLink(lb) }
    #expect(await eventually(30, "both notes at bob") { b.folder.paths == ["a.md", "b.md"] })
    let sentBefore = await a.counter(HandoffCounter.sent)
    await rename(a, "a.md", "sub/renamed.md")
    await delete(a, "b.md")
    #expect(
      await eventually(30, "the rename and the deletion at bob") {
        b.folder.paths == ["sub/renamed.md"] && b.folder.trashed.withLock { $0["b.md"] } != nil
      })
    #expect(b.folder.text("sub/renamed.md") == "# A\n")
    #expect(b.folder.trashed.withLock { $0["a.md"] } == nil)
    #expect(await a.counter(HandoffCounter.sent) == sentBefore)
    #expect(await b.counter(HandoffCounter.renamed) == 1)
    #expect(await eventually(30, "the same index") { await sameIndex(a, b) })
    await la.close()
    _ = await ra.value
    _ = await rb.value
  }

  /// A note that grew over the size limit is withdrawn, not deleted: peers
  /// keep their copy.
  @Test func aNoteOverTheLimitIsWithdrawnNotDeleted() async throws {
    let a = try HandoffTestAgent("alice", key: key, policy: HandoffPolicy(maxNoteSize: 64))
    let b = try HandoffTestAgent("bob", key: key)
    await a.save("n.md", "# N\n")
    #expect(await synced(b, a))
    a.folder.put("n.md", "# N\n" + String(repeating: "x", count: 100))
    await a.engine.localRemove(relativePath: "n.md", activityType: Self.notes)
    #expect(await synced(b, a))
    #expect(b.folder.text("n.md") == "# N\n")
    #expect(b.folder.trashed.withLock { $0.isEmpty })
  }
}
