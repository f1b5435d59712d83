import BatonTestSupport
import Foundation
import Testing

@testable import BatonHandoff
@testable import BatonNotes

/// Issue 30: deletions held for a person when they are many (PROTOCOL.md
/// section 7.4). A burst of local deletions over the limits is not sent; a
/// burst of a peer's tombstones over them is not applied; `apply` makes
/// them, `reject` brings the notes back everywhere. Single deletions travel.
@Suite struct DeletionHoldTests {
  let key = GroupKey.generate()
  static let notes = HandoffTestAgent.notesType

  /// `count` notes `n00.md`...; their texts by path.
  private func texts(_ count: Int) -> [String: String] {
    var out: [String: String] = [:]
    for i in 0..<count { out[String(format: "n%02d.md", i)] = "# N\(i)\nbody \(i)\n" }
    return out
  }

  /// Alice holding `notes`, and bob in sync with her.
  private func twoInSync(
    _ notes: [String: String], alice: HandoffPolicy = .init(), bob: HandoffPolicy = .init()
  ) async throws -> (HandoffTestAgent, HandoffTestAgent) {
    let a = try HandoffTestAgent("alice", key: key, policy: alice)
    let b = try HandoffTestAgent("bob", key: key, policy: bob)
    for (path, text) in notes.sorted(by: { $0.key < $1.key }) { await a.save(path, text) }
    #expect(await synced(b, a))
    #expect(b.folder.paths.count == notes.count)
    return (a, b)
  }

  private func synced(_ a: HandoffTestAgent, _ b: HandoffTestAgent) async -> Bool {
    let (r1, r2) = await runSession(a, b)
    return r1.succeeded && r2.succeeded
  }

  /// `rm` of `paths` at once: the files go, and the watcher reports one removal event.
  private func rm(_ agent: HandoffTestAgent, _ paths: [String]) async {
    for path in paths { agent.folder.remove(path) }
    await agent.engine.localRemove(relativePaths: paths, activityType: Self.notes)
  }

  private func held(_ agent: HandoffTestAgent) async -> [String] {
    await agent.engine.heldDeletions().map(\.path)
  }

  @Test func limitsHoldABurstOverTheCountOrTheShare() {
    var hold = DeletionHold(limits: DeletionLimits(count: 10, sharePercent: 50))
    let t0 = ContinuousClock.now
    func holds(_ n: Int, _ type: String, _ side: String = "", at s: Int = 0, of notes: Int) -> Bool {
      hold.holds(n, type: type, side: side, now: t0 + .seconds(s), notes: { notes }) != nil
    }
    // Honest deletions: one at a time, or a few of a big folder.
    #expect(!holds(1, "t", of: 100))
    #expect(!holds(9, "t", of: 100))
    // The burst goes over 10: held, and so is what follows within the window.
    #expect(holds(1, "t", at: 30, of: 100))
    #expect(holds(1, "t", at: 80, of: 100))
    // A minute later a new burst begins; other sides and folders count apart.
    #expect(!holds(1, "t", at: 141, of: 100))
    #expect(!holds(10, "t", "peers", of: 100))
    #expect(!holds(10, "u", of: 100))
    // More than half of a folder of more than 10 notes; a small folder never.
    #expect(holds(9, "v", of: 16))
    #expect(!holds(8, "w", of: 16))
    #expect(!holds(10, "x", of: 10))
    var off = DeletionHold(limits: .none)
    let none = off.holds(1000, type: "t", side: "", now: t0, notes: { 1000 })
    #expect(none == nil)
  }

  /// A patient deleter: 10 of 100 notes a minute apart, each burst within
  /// the count. The day adds them up: the sixth burst (60 %) is held, and
  /// so is what follows, until a person decides or the day is over.
  @Test func aTrickleOfSmallBurstsIsHeldPastTheShareOfADay() {
    var hold = DeletionHold(limits: DeletionLimits(count: 10, sharePercent: 50))
    let t0 = ContinuousClock.now
    func holds(_ n: Int, at minute: Int, _ side: String = "peers") -> DeletionHoldReason? {
      hold.holds(n, type: "t", side: side, now: t0 + .seconds(61 * minute), notes: { 100 })
    }
    for minute in 0..<5 { #expect(holds(10, at: minute) == nil, "burst \(minute)") }
    #expect(holds(10, at: 5) == .day)
    #expect(holds(1, at: 6) == .day)
    // This side only: deletions made here count apart.
    #expect(holds(10, at: 6, "") == nil)
    // A person decided: the day counts again.
    hold.decided()
    #expect(holds(10, at: 7) == nil)
    // A day after the first, the count begins again too.
    var later = DeletionHold(limits: DeletionLimits(count: 10, sharePercent: 50))
    for hour in [0, 6, 12, 18, 25, 31] {
      let reason = later.holds(
        10, type: "t", side: "peers", now: t0 + .seconds(3600 * hour), notes: { 100 })
      #expect(reason == nil, "hour \(hour)")
    }
    // A burst over the count is a burst, whatever the day says.
    #expect(holds(11, at: 20) == .burst)
  }

  /// A key holder deleting a few notes at a time, in sessions far enough
  /// apart to be bursts of their own (the window shortened to nothing):
  /// bob applies the first 8 of 30 and holds the next 8, which would make
  /// more than half of his folder.
  @Test func aKeyHoldersTrickleOfDeletionsIsHeld() async throws {
    let notes = texts(30)
    var policy = HandoffPolicy()
    policy.deletionLimits = DeletionLimits(count: 10, sharePercent: 50, window: .zero)
    let (mallory, bob) = try await twoInSync(notes, alice: .holdingNothing, bob: policy)
    let paths = notes.keys.sorted()
    await rm(mallory, Array(paths[0..<8]))
    #expect(await synced(bob, mallory))
    #expect(await held(bob) == [])
    #expect(bob.folder.paths.count == 22)
    await rm(mallory, Array(paths[8..<16]))
    #expect(await synced(bob, mallory))
    #expect(await held(bob) == Array(paths[8..<16]))
    #expect(bob.folder.paths.count == 22)
    let message = await bob.engine.rejectHeldDeletions()
    #expect(message.contains("8 deleted on a peer are kept"))
  }

  /// Runs a link between `a` and `b` until `body` returns.
  private func linked(
    _ a: HandoffTestAgent, _ b: HandoffTestAgent, _ body: () async throws -> Void
  ) async throws {
    let (la, lb) = try await openLink(a, b)
    let ra = Task { await a.engine.runLink(la) }
    let rb = Task { await b.engine.runLink(lb) }
    try await body()
    await la.close()
    _ = await ra.value
    _ = await rb.value
  }

  /// `rm` of most of a folder: held, nothing sent; the peer (which would
  /// apply any deletion it gets) keeps every note.
  @Test func rmOfMostOfAFolderIsHeldNotSent() async throws {
    let notes = texts(20)
    let (a, b) = try await twoInSync(notes, bob: .holdingNothing)
    let gone = Array(notes.keys.sorted().prefix(15))
    await rm(a, gone)
    #expect(await held(a) == gone)
    #expect(await a.engine.status().heldDeletions.allSatisfy { $0.peer == nil })
    #expect(await synced(b, a))
    #expect(b.folder.paths.count == 20)
    #expect(b.folder.trashed.withLock { $0.isEmpty })
    #expect(await held(b) == [])
    // Found again at a restart (the files are still missing).
    let again = try a.restarted()
    #expect(await held(again) == gone)
  }

  /// A single deletion, and a few of a big folder, travel as before.
  @Test func fewDeletionsTravel() async throws {
    let notes = texts(20)
    let (a, b) = try await twoInSync(notes)
    await rm(a, ["n00.md"])
    await rm(a, ["n01.md", "n02.md", "n03.md"])
    #expect(await held(a) == [])
    #expect(await synced(b, a))
    #expect(b.folder.paths.count == 16)
    #expect(b.folder.trashed.withLock { $0.count } == 4)
  }

  /// Apply: the deletions are sent; the peer, as many, holds them too, until
  /// its person applies them there.
  @Test func applyingHeldLocalDeletionsSendsThem() async throws {
    let notes = texts(20)
    let (a, b) = try await twoInSync(notes)
    let gone = Array(notes.keys.sorted().prefix(15))
    await rm(a, gone)
    let message = await a.engine.applyHeldDeletions()
    #expect(message.contains("15 made here and sent"))
    #expect(await held(a) == [])
    #expect(await synced(b, a))
    #expect(await held(b) == gone)
    #expect(b.folder.paths.count == 20)
    _ = await b.engine.applyHeldDeletions()
    #expect(b.folder.paths == notes.keys.sorted().suffix(5))
    #expect(b.folder.trashed.withLock { $0.count } == 15)
    #expect(await b.counter(HandoffCounter.trashed) == 15)
    // Settled: nothing comes back either way.
    #expect(await synced(b, a))
    #expect(a.folder.paths == b.folder.paths)
  }

  /// Reject: the notes deleted here come back from the peer, same bytes,
  /// in a session or on a link.
  @Test(arguments: [false, true])
  func rejectingHeldLocalDeletionsBringsTheNotesBack(onALink: Bool) async throws {
    let notes = texts(20)
    let (a, b) = try await twoInSync(notes, bob: .holdingNothing)
    let gone = Array(notes.keys.sorted().prefix(15))
    await rm(a, gone)
    let back = { notes.allSatisfy { a.folder.text($0.key) == $0.value } }
    if onALink {
      try await linked(a, b) {
        let message = await a.engine.rejectHeldDeletions()
        #expect(message.contains("15 deleted here come back"))
        #expect(await eventually(30, "the notes back on alice") { back() })
      }
    } else {
      let message = await a.engine.rejectHeldDeletions()
      #expect(message.contains("15 deleted here come back"))
      #expect(await synced(b, a))
    }
    #expect(await held(a) == [])
    for (path, text) in notes { #expect(a.folder.text(path) == text, "\(path)") }
    #expect(b.folder.paths.count == 20 && b.folder.trashed.withLock { $0.isEmpty })
    // Back as the same versions: nothing more to do either way.
    let (r1, r2) = await runSession(a, b)
    #expect(r1.value?.received == [] && r2.value?.received == [])
  }

  /// A rejection is kept across a restart: the notes wanted back are still
  /// fetched in the next session.
  @Test func notesWantedBackAreFetchedAfterARestart() async throws {
    let notes = texts(20)
    let (a, b) = try await twoInSync(notes, bob: .holdingNothing)
    let gone = Array(notes.keys.sorted().prefix(15))
    await rm(a, gone)
    _ = await a.engine.rejectHeldDeletions()
    let again = try a.restarted()
    #expect(await held(again) == [])
    #expect(await synced(b, again))
    for (path, text) in notes { #expect(again.folder.text(path) == text, "\(path)") }
    #expect(b.folder.trashed.withLock { $0.isEmpty })
  }

  /// A key holder whose agent holds nothing (hostile, or confused) deletes
  /// most of the folder: one GONE on a link. Bob holds it: nothing goes to
  /// his trash, and rejecting brings every note back on the deleter too.
  @Test func aPeersMassDeletionOnALinkIsHeldAndRejected() async throws {
    let notes = texts(30)
    let (mallory, bob) = try await twoInSync(notes, alice: .holdingNothing)
    let gone = Array(notes.keys.sorted().prefix(28))
    try await linked(mallory, bob) {
      await rm(mallory, gone)
      #expect(await held(mallory) == [])
      #expect(await eventually(30, "bob holding the deletions") { await held(bob) == gone })
      #expect(bob.folder.paths.count == 30)
      #expect(bob.folder.trashed.withLock { $0.isEmpty })
      #expect(await bob.engine.status().heldDeletions.allSatisfy { $0.peer != nil })

      let message = await bob.engine.rejectHeldDeletions()
      #expect(message.contains("28 deleted on a peer are kept"))
      #expect(
        await eventually(30, "every note back on mallory") {
          notes.allSatisfy { mallory.folder.text($0.key) == $0.value }
        })
      #expect(await held(bob) == [] && bob.folder.trashed.withLock { $0.isEmpty })
    }
  }

  /// Three agents: both peers hold a key holder's mass deletion; one
  /// rejects it, and its new versions reach the deleter and, on a link, the
  /// other peer, whose hold then has nothing left to decide.
  @Test func aRejectionReachesEveryPeer() async throws {
    let notes = texts(30)
    let (mallory, bob) = try await twoInSync(notes, alice: .holdingNothing)
    let carol = try HandoffTestAgent("carol", key: key)
    #expect(await synced(carol, mallory))
    let gone = Array(notes.keys.sorted().prefix(28))
    await rm(mallory, gone)
    #expect(await synced(bob, mallory))
    #expect(await synced(carol, mallory))
    #expect(await held(bob) == gone)
    #expect(await held(carol) == gone)
    // On a link the new versions (of the same bytes) are pushed as they are
    // made, once the link's catch-up is over (a save that crosses it says
    // so). The catch-up compares content only: a link opened after the
    // rejection, like a session, leaves carol's hold listed until carol's
    // person decides (applying it then meets the newer version from bob).
    try await linked(bob, carol) {
      await bob.save("marker.md", "# Marker\n")
      #expect(await eventually(30, "the link caught up") { carol.folder.text("marker.md") != nil })
      _ = await bob.engine.rejectHeldDeletions()
      #expect(await eventually(30, "carol's hold settled") { await held(carol) == [] })
    }
    #expect(await synced(mallory, bob))
    for agent in [mallory, bob, carol] {
      for (path, text) in notes {
        #expect(agent.folder.text(path) == text, "\(agent.name) \(path)")
      }
      #expect(agent.folder.trashed.withLock { $0.isEmpty })
    }
  }

  /// Applying a peer's held deletions moves the notes to the trash here.
  @Test func applyingAPeersHeldDeletionsTrashesTheNotes() async throws {
    let notes = texts(30)
    let (mallory, bob) = try await twoInSync(notes, alice: .holdingNothing)
    let gone = Array(notes.keys.sorted().prefix(28))
    await rm(mallory, gone)
    #expect(await synced(bob, mallory))
    #expect(await held(bob) == gone)
    #expect(bob.folder.trashed.withLock { $0.isEmpty })
    // Offered again in the next session: still held, once each.
    #expect(await synced(bob, mallory))
    #expect(await held(bob) == gone)
    let message = await bob.engine.applyHeldDeletions()
    #expect(message.contains("28 of the peers' applied"))
    #expect(bob.folder.paths == notes.keys.sorted().suffix(2))
    #expect(bob.folder.trashed.withLock { $0.count } == 28)
  }
}

extension HandoffPolicy {
  /// An agent that holds no deletion (a peer from before holds, or a hostile one).
  static var holdingNothing: HandoffPolicy {
    var policy = HandoffPolicy()
    policy.deletionLimits = .none
    return policy
  }
}
