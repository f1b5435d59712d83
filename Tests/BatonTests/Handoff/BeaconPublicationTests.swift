import Testing

@testable import BatonHandoff

/// The engine publishes the beacon's content (PROTOCOL.md 3): its index
/// digest on every change, readable without its thread, and a change of
/// the content on `beaconChanges`, only when the content changed.
@Suite struct BeaconPublicationTests {
  let key = GroupKey(bytes: Array(repeating: 5, count: 32))!

  @Test func aChangeOfTheBeaconsContentIsPublishedOnce() async throws {
    let a = try HandoffTestAgent("alice", key: key)
    var changes = a.engine.beaconChanges.makeAsyncIterator()
    await a.save("s.md", "one")
    let first = await a.engine.beaconRevision
    #expect(first >= 1)
    #expect(await changes.next() != nil)
    #expect(a.engine.currentIndexDigest == (await a.engine.beaconContent()).indexDigest)
    // The same bytes again: no new version, no change of the beacon.
    await a.save("s.md", "one")
    #expect(await a.engine.beaconRevision == first)
    // New bytes: a new digest, published once.
    await a.save("s.md", "two")
    #expect(await a.engine.beaconRevision == first + 1)
    #expect(await changes.next() != nil)
    #expect(a.engine.currentIndexDigest == (await a.engine.beaconContent()).indexDigest)
  }

  @Test func anotherCurrentActivityIsAChangeToo() async throws {
    let a = try HandoffTestAgent("alice", key: key)
    await a.save("s.md", "one")
    await a.save("t.md", "two")
    let revision = await a.engine.beaconRevision
    let digest = a.engine.currentIndexDigest
    // `baton send`: the index is the same, the beacon names another note.
    let before = a.engine.openBeacon(a.engine.publishedBeacon())
    await a.engine.makeCurrent(activityType: HandoffTestAgent.notesType, path: "s.md")
    #expect(a.engine.currentIndexDigest == digest)
    #expect(await a.engine.beaconRevision == revision + 1)
    // The beacon sealed off the engine's thread names it, as the engine's own does.
    let after = a.engine.openBeacon(a.engine.publishedBeacon())
    #expect(after != nil && after?.activityHash != before?.activityHash)
    #expect(after == (await a.engine.beaconContent()))
    await a.engine.makeCurrent(activityType: HandoffTestAgent.notesType, path: "s.md")
    #expect(await a.engine.beaconRevision == revision + 1)
  }

  @Test func aNoteThatArrivesInASessionIsPublished() async throws {
    let a = try HandoffTestAgent("alice", key: key)
    let b = try HandoffTestAgent("bob", key: key)
    await a.save("s.md", "from alice")
    let before = b.engine.currentIndexDigest
    #expect(await runSession(b, a).0.succeeded)
    #expect(b.engine.currentIndexDigest != before)
    #expect(b.engine.currentIndexDigest == a.engine.currentIndexDigest)
  }
}
