import Foundation
import Testing

@testable import BatonHandoff
@testable import BatonNotes

/// Issue 12's local fixes: a deleted note stops being offered at once (the
/// watcher's removal reaches the engine), a note gone before the watcher said
/// so is no failure on either side, and the current activity survives a
/// restart (or is the newest note on a first start).
@Suite struct LocalRemovalTests {
  let key = GroupKey.generate()
  static let notes = HandoffTestAgent.notesType

  @Test func aRemovedNoteIsNoLongerOffered() async throws {
    let a = try HandoffTestAgent("alice", key: key)
    let b = try HandoffTestAgent("bob", key: key)
    await a.save("a.md", "# A\n")
    await a.save("b.md", "# B\n")
    let before = await a.engine.beaconContent().indexDigest
    a.folder.remove("a.md")
    await a.engine.localRemove(relativePath: "a.md", activityType: Self.notes)
    #expect(await a.engine.beaconContent().indexDigest != before)

    let (r1, r2) = await runSession(b, a)
    #expect(r1.succeeded && r2.succeeded)
    #expect(b.folder.paths == ["b.md"])
    #expect(await a.counter(HandoffCounter.failed) == 0)
    #expect(await b.counter(HandoffCounter.failed) == 0)
  }

  /// A peer asks for a note deleted since it was listed (the watcher has not
  /// reported it yet): the answer is "unavailable", not a disk error, and the
  /// note is no longer offered afterwards.
  @Test func aNoteGoneBeforeTheWatcherSaidSoIsNoFailure() async throws {
    let a = try HandoffTestAgent("alice", key: key)
    let b = try HandoffTestAgent("bob", key: key)
    await a.save("a.md", "# A\n")
    await a.save("b.md", "# B\n")
    a.folder.remove("a.md")  // not reported to the engine

    let (r1, r2) = await runSession(b, a)
    #expect(r1.succeeded && r2.succeeded)
    #expect(b.folder.paths == ["b.md"])
    #expect(await a.counter(HandoffCounter.failed) == 0)
    #expect(await b.counter(HandoffCounter.failed) == 0)
    #expect(await a.engine.status().failures.isEmpty)
    #expect(await b.engine.status().failures.isEmpty)

    // Settled: the next session has nothing to move and fails nothing.
    let (r3, r4) = await runSession(b, a)
    #expect(r3.value?.received == [] && r4.value?.sent == [])
    #expect(await a.counter(HandoffCounter.failed) == 0)
  }

  @Test func theNewestNoteIsCurrentOnAFirstStart() async throws {
    let folder = InMemoryNoteFolder(root: "/first")
    folder.put("old.md", "# Old\n")
    folder.put("new.md", "# New\n")
    folder.put("older.md", "# Older\n")
    folder.put("new.md", "# New\nedited last\n")
    let a = try HandoffTestAgent("alice", key: key, folders: [Self.notes: folder])
    #expect(await a.engine.status().currentActivity?.path == "new.md")
  }

  /// The note current when the agent stopped is current again, even when
  /// another file was touched later without a change of content.
  @Test func theCurrentActivitySurvivesARestart() async throws {
    let a = try HandoffTestAgent("alice", key: key)
    await a.save("x.md", "# X\n")
    await a.save("y.md", "# Y\n")
    #expect(await a.engine.status().currentActivity?.path == "y.md")
    a.folder.put("x.md", "# X\n")  // newer time, same bytes
    let restarted = try a.restarted()
    #expect(await restarted.engine.status().currentActivity?.path == "y.md")
  }

  /// A note saved while the agent was not running is what the user was
  /// doing last: it becomes current at start.
  @Test func aNoteSavedWhileStoppedBecomesCurrent() async throws {
    let a = try HandoffTestAgent("alice", key: key)
    await a.save("x.md", "# X\n")
    await a.save("y.md", "# Y\n")
    a.folder.put("x.md", "# X\nedited while the agent was stopped\n")
    let restarted = try a.restarted()
    #expect(await restarted.engine.status().currentActivity?.path == "x.md")
  }
}
