import Foundation
import Testing

@testable import BatonHandoff
@testable import BatonNotes
@testable import BatonStore
@testable import BatonSystem

/// A key holder turned hostile (issue 13): nothing it sends may stop an agent.
@Suite struct HostilePeerTests {
  let key = GroupKey.generate()
  static let type = HandoffTestAgent.notesType

  @Test func forgedCounterOfOurOwnDeviceIsRefusedAndLocalEditsKeepWorking() async throws {
    let victim = try HandoffTestAgent("victim", key: key)
    let mallory = try HandoffTestAgent("mallory", key: key)
    await victim.save("n.md", "hello")
    _ = await runSession(mallory, victim)
    // Mallory offers the same bytes as its current activity, under a version
    // claiming 2^64-1 changes by the victim: before the fix the victim adopted
    // it (same content, no transfer) and trapped on its next edit.
    let me = victim.engine.deviceID
    await mallory.engine.forgeForTest(
      Self.type, "n.md",
      version: VersionVector([me: .max, mallory.engine.deviceID: 1]), current: true)
    let (rv, rm) = await runSession(victim, mallory)
    #expect(rv.succeeded && rm.succeeded)
    #expect(rv.value?.failed == 1)
    #expect(await victim.engine.index[HandoffEngine.key(Self.type, "n.md")]?.entry.version[me] == 1)
    let failure = try #require(await victim.engine.status().failures.first)
    #expect(failure.peer == "mallory (addr-mallory)" && failure.activityType == Self.type)
    #expect(failure.reason.contains("forged version of n.md"))
    #expect(await victim.counter(HandoffCounter.failed) == 1)

    await victim.save("n.md", "hello, edited")
    #expect(await victim.engine.index[HandoffEngine.key(Self.type, "n.md")]?.entry.version[me] == 2)

    // A forged NOTE (other content) is refused when applied, and not written.
    var summary = SessionSummary(peerName: "mallory", peerDevice: mallory.engine.deviceID)
    let evil = Array("evil".utf8)
    await victim.engine.applyForTest(
      ActivityPayload(
        activityType: Self.type, title: "evil", path: "new.md",
        version: VersionVector([me: 5]), origin: me, originName: "victim",
        hash: ContentHash(of: evil), content: evil),
      summary: &summary)
    #expect(summary.failed == 1 && summary.received.isEmpty)
    #expect(victim.folder.text("new.md") == nil)
  }

  @Test func versionThatWouldOutgrowTheDeviceLimitIsRefused() async throws {
    let victim = try HandoffTestAgent("victim", key: key)
    await victim.save("n.md", "mine")
    var counters: [DeviceID: UInt64] = [:]
    for i in 1...UInt64(HandoffLimits.maxMergedDevices) { counters[DeviceID(rawValue: i)] = 1 }
    let bytes = Array("theirs".utf8)
    var summary = SessionSummary(peerName: "mallory", peerDevice: DeviceID(rawValue: 1))
    await victim.engine.applyForTest(
      ActivityPayload(
        activityType: Self.type, title: "x", path: "n.md", version: VersionVector(counters),
        origin: DeviceID(rawValue: 1), originName: "mallory", hash: ContentHash(of: bytes),
        content: bytes),
      summary: &summary)
    #expect(summary.failed == 1)
    #expect(victim.folder.contents == ["n.md": "mine"])
    let version = await victim.engine.index[HandoffEngine.key(Self.type, "n.md")]?.entry.version
    #expect(version?.counters.count == 1)
  }

  /// A key holder claiming our device id is not a key problem: no key-file
  /// hint (issue 13, bug 8); a wrong key still gets it.
  @Test func keyFileHintOnlyWhenTheKeyMayDiffer() async throws {
    let a = try HandoffTestAgent("alice", key: key)
    let clone = try HandoffTestAgent("clone", key: key, stateDirectory: a.stateDirectory)
    #expect(clone.engine.deviceID == a.engine.deviceID)
    let (ra, rc) = await runSession(a, clone)
    #expect(!ra.succeeded && !rc.succeeded)
    // The two share one store: the initiator's refusal (before M3) and the
    // responder's closed channel are both there.
    let claim = try #require(
      await a.engine.status().failures.first { $0.reason.contains("own device id") })
    #expect(claim.reason.contains("authentication"))
    #expect(!claim.reason.contains("key file"))

    let stranger = try HandoffTestAgent("stranger", key: GroupKey.generate())
    _ = await runSession(a, stranger)
    let wrongKey = try #require(await a.engine.status().failures.first)
    #expect(wrongKey.reason.contains("does not verify") && wrongKey.reason.contains("key file"))
    #expect(wrongKey.reason.contains("damaged in transit"))
    let malformed = HandoffError.authenticationFailed(
      peer: "x", reason: "malformed hello", keyMayDiffer: false)
    #expect(!malformed.description.contains("key file"))
  }

  /// A database written before the fix may already hold an exhausted counter:
  /// restarting, rescanning, saving and serving must not trap.
  @Test func exhaustedCounterInAnOldDatabaseDoesNotTrapOnRestart() async throws {
    let victim = try HandoffTestAgent("victim", key: key)
    await victim.save("n.md", "v1")
    let store = try HandoffStore(directory: victim.stateDirectory)
    var note = try #require(try store.note(activityType: Self.type, path: "n.md"))
    note.entry.version = VersionVector([victim.engine.deviceID: .max])
    try store.save(note)

    victim.folder.put("n.md", "v2")  // edited while the agent was stopped
    let restarted = try victim.restarted()
    await restarted.engine.rescan()
    let noteKey = HandoffEngine.key(Self.type, "n.md")
    #expect(await restarted.engine.index[noteKey]?.entry.hash == ContentHash(of: Array("v1".utf8)))
    await restarted.save("n.md", "v3")
    #expect(await restarted.engine.index[noteKey]?.entry.version[victim.engine.deviceID] == .max)

    // Its changed bytes are never sent under the old version.
    let peer = try HandoffTestAgent("peer", key: key)
    let (rp, rr) = await runSession(peer, restarted)
    #expect(rp.succeeded && rr.succeeded)
    #expect(peer.folder.text("n.md") == nil)
    // Other notes still move.
    await restarted.save("other.md", "fine")
    _ = await runSession(peer, restarted)
    #expect(peer.folder.text("other.md") == "fine")
  }
}

extension HandoffEngine {
  /// Replaces a note's version in the index, as a hostile agent would claim it.
  func forgeForTest(_ type: String, _ path: String, version: VersionVector, current: Bool) {
    ensureScanned()
    index[Self.key(type, path)]?.entry.version = version
    if current { self.current = (type, path) }
  }
}
