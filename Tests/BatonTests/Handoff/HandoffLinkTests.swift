import BatonTestSupport
import Foundation
import Synchronization
import Testing

@testable import BatonHandoff
@testable import BatonSystem

/// Links (PROTOCOL.md 6.2) between two engines over an in-memory channel:
/// catch-up, pushes both ways, one conflict resolution, keep-alive. Waits are
/// on the folders' contents (or `runLink` returning), with generous bounds.
@Suite struct HandoffLinkTests {
  let key = GroupKey.generate()

  /// Opens a link between `a` (initiator) and `b`, runs both until they end.
  /// `over`: the two ends to use (an in-memory pair by default).
  private func link(
    _ a: HandoffTestAgent, _ b: HandoffTestAgent,
    over ends: (any MessageChannel, any MessageChannel)? = nil
  ) async throws -> (HandoffLink, HandoffLink, Task<String, Never>, Task<String, Never>) {
    let (la, lb) = try await openLink(a, b, over: ends)
    let ra = Task { await a.engine.runLink(la) }
    let rb = Task { await b.engine.runLink(lb) }
    return (la, lb, ra, rb)
  }

  @Test func aLinkCatchesUpThenCarriesSavesBothWays() async throws {
    let a = try HandoffTestAgent("alice", key: key)
    let b = try HandoffTestAgent("bob", key: key)
    await a.save("old-a.md", "Old A\n")
    await b.save("old-b.md", "Old B\n")
    let (la, lb, ra, rb) = try await link(a, b)
    #expect(la.peerName == "bob" && lb.peerName == "alice")
    #expect(la.initiator && !lb.initiator)
    #expect(
      await eventually(30) {
        a.folder.text("old-b.md") == "Old B\n" && b.folder.text("old-a.md") == "Old A\n"
      })
    // Saves after the catch-up travel over the same link, both ways.
    for i in 1...10 {
      await a.save("a\(i).md", "A\(i)\n")
      await b.save("b\(i).md", "B\(i)\n")
    }
    #expect(
      await eventually(30) {
        (1...10).allSatisfy {
          a.folder.text("b\($0).md") == "B\($0)\n" && b.folder.text("a\($0).md") == "A\($0)\n"
        }
      })
    #expect(a.folder.paths == b.folder.paths)
    await la.close()
    _ = await ra.value
    _ = await rb.value
    #expect(await a.counter(HandoffCounter.sent) == 11)
    #expect(await b.counter(HandoffCounter.received) == 11)
  }

  /// Issue 14 on links: a peer that missed a few changes among 2,000 notes
  /// catches up with what differs (a few KB), not the index (its INDEX alone
  /// would be about 100 KB each way).
  @Test func aLinkCatchUpMovesWhatDiffersNotTheIndex() async throws {
    let a = try HandoffTestAgent("alice", key: key)
    let b = try HandoffTestAgent("bob", key: key)
    for i in 0..<2000 { a.folder.put("n\(i).md", "Note \(i)\n") }
    await a.engine.rescan()
    // In sync once: bob holds alice's 2,000 notes, versions and all.
    let (first, _, r1, r2) = try await link(a, b)
    #expect(await eventually(60) { b.folder.paths.count == 2000 })
    await first.close()
    _ = await (r1.value, r2.value)
    #expect(await a.engine.beaconContent().indexDigest == b.engine.beaconContent().indexDigest)

    // Out of range, each side changes a little.
    await a.save("n7.md", "Note 7, edited by alice\n")
    await a.save("new-a.md", "New A\n")
    await b.save("new-b.md", "New B\n")
    let (ca, cb) = InMemoryMessageChannel.pair(maximumMessageSize: 512)
    let (countA, countB) = (CountingChannel(ca), CountingChannel(cb))
    let (la, _, ra, rb) = try await link(a, b, over: (countA, countB))
    #expect(
      await eventually(30) {
        b.folder.text("n7.md") == "Note 7, edited by alice\n" && b.folder.text("new-a.md") == "New A\n"
          && a.folder.text("new-b.md") == "New B\n"
      })
    let moved = countA.sent + countB.sent
    #expect(moved < 30_000, "\(moved) bytes moved for a catch-up of 3 notes among 2,000")
    #expect(a.folder.paths == b.folder.paths)
    #expect(await a.counter(HandoffCounter.conflicts) == 0)
    await la.close()
    _ = await (ra.value, rb.value)
  }

  /// Notes pushed while the receiver is still writing wait in its inbox,
  /// then are written in batches (one flush each, at most
  /// `linkApplyBatch`), every one of them. The receiver's first write is
  /// held until all the other notes are waiting, so the batching does not
  /// depend on timing.
  @Test func notesPushedWhileTheReceiverWritesAreWrittenInBatches() async throws {
    let a = try HandoffTestAgent("alice", key: key)
    let b = try HandoffTestAgent("bob", key: key)
    let (la, lb, ra, rb) = try await link(a, b)
    let held = Mutex(false)
    b.folder.beforeBatch.withLock {
      $0 = { first in
        let again = held.withLock { h in
          defer { h = true }
          return h
        }
        guard !again else { return }
        let deadline = ContinuousClock.now + .seconds(20)
        while lb.waitingCount < 100 - first && ContinuousClock.now < deadline { usleep(1000) }
      }
    }
    for i in 0..<100 { await a.save("n\(i).md", "Note \(i)\n") }
    #expect(await eventually(30) { b.folder.paths.count == 100 })
    #expect((0..<100).allSatisfy { b.folder.text("n\($0).md") == "Note \($0)\n" })
    let sizes = b.folder.batchSizes.withLock { $0 }
    #expect(sizes.reduce(0, +) == 100, "\(sizes)")
    // The held batch, then the 100 - k waiting notes in at most two.
    #expect(sizes.count <= 3, "\(sizes)")
    #expect(sizes.allSatisfy { $0 <= HandoffEngine.linkApplyBatch }, "\(sizes)")
    #expect(await b.counter(HandoffCounter.received) == 100)
    await la.close()
    _ = await (ra.value, rb.value)
  }

  /// A catch-up can queue thousands of notes in a link's inbox. They are
  /// applied a batch per turn of the engine's thread, so a status request
  /// waits for one batch, not for the whole inbox (under ThreadSanitizer the
  /// whole inbox of a 10,000-note catch-up kept `baton status` waiting over
  /// its 15 s). Ten batches wait before the first is written; the request is
  /// made as that one is.
  @Test func aStatusRequestIsAnsweredBetweenBatchesOfALinksInbox() async throws {
    let a = try HandoffTestAgent("alice", key: key)
    let b = try HandoffTestAgent("bob", key: key)
    let (la, lb) = try await openLink(a, b)
    let batches = 10
    let total = batches * HandoffEngine.linkApplyBatch
    for i in 0..<total {
      let text = Array("Note \(i)\n".utf8)
      _ = lb.queueReceived(
        .note(
          ActivityPayload(
            activityType: HandoffTestAgent.notesType, title: "Note \(i)", path: "n\(i).md",
            version: VersionVector([a.engine.deviceID: 1]), origin: a.engine.deviceID,
            originName: "alice", hash: ContentHash(of: text), content: text)))
    }
    /// How many batches were written when the status came back.
    final class Answer: Sendable {
      let asked = Mutex(false)
      let after = Mutex<Int?>(nil)
    }
    let answer = Answer()
    b.folder.beforeBatch.withLock {
      $0 = { [folder = b.folder, engine = b.engine] _ in
        guard !answer.asked.withLock({ $0 }) else { return }
        answer.asked.withLock { $0 = true }
        Task { @Sendable in
          _ = await engine.status()
          let written = folder.batchSizes.withLock { $0.count }
          answer.after.withLock { $0 = written }
        }
      }
    }
    let ra = Task { await a.engine.runLink(la) }
    let rb = Task { await b.engine.runLink(lb) }
    #expect(await eventually(30, "every queued note written") { b.folder.paths.count == total })
    #expect(await eventually(30, "the status answered") { answer.after.withLock { $0 } != nil })
    let after = try #require(answer.after.withLock { $0 })
    #expect(after < batches, "answered after \(after) of \(batches) batches")
    #expect(b.folder.batchSizes.withLock { $0 }.allSatisfy { $0 <= HandoffEngine.linkApplyBatch })
    await la.close()
    _ = await (ra.value, rb.value)
  }

  @Test func aConflictOnALinkIsResolvedOnceWithOneCopyOnEachSide() async throws {
    let a = try HandoffTestAgent("alice", key: key)
    let b = try HandoffTestAgent("bob", key: key)
    await a.save("x.md", "X by alice\n")
    await b.save("x.md", "X by bob\n")
    let (la, _, ra, rb) = try await link(a, b)
    #expect(
      await eventually(30) {
        a.folder.paths.count == 2 && a.folder.contents == b.folder.contents
      }, "\(a.folder.contents) vs \(b.folder.contents)")
    // The initiator resolved it: its text stays the note, bob's is the copy.
    #expect(a.folder.text("x.md") == "X by alice\n")
    #expect(Set(a.folder.contents.values) == ["X by alice\n", "X by bob\n"])
    #expect(await a.counter(HandoffCounter.conflicts) == 1)
    #expect(await b.counter(HandoffCounter.conflicts) == 0)
    await la.close()
    _ = await ra.value
    _ = await rb.value
  }

  @Test func aNoteReachesAPeerLinkedOnlyThroughAnother() async throws {
    let a = try HandoffTestAgent("alice", key: key)
    let b = try HandoffTestAgent("bob", key: key)
    let c = try HandoffTestAgent("carol", key: key)
    // alice - bob - carol: carol hears only bob.
    let (ab, _, rab, rba) = try await link(a, b)
    let (bc, _, rbc, rcb) = try await link(b, c)
    await a.save("chain.md", "Chain\n")
    // bob relays it once its relay hold has passed (carol never said HAVE).
    #expect(await eventually(60) { c.folder.text("chain.md") == "Chain\n" })
    // And back the other way.
    await c.save("back.md", "Back\n")
    #expect(await eventually(60) { a.folder.text("back.md") == "Back\n" })
    await ab.close()
    await bc.close()
    for task in [rab, rba, rbc, rcb] { _ = await task.value }
  }

  /// A note saved is pushed, and a note received is relayed, with the bytes
  /// the save or the arrival carried: nobody reads the file again.
  @Test func savedAndRelayedNotesAreNotReadAgain() async throws {
    let a = try HandoffTestAgent("alice", key: key)
    let b = try HandoffTestAgent("bob", key: key)
    let c = try HandoffTestAgent("carol", key: key)
    let (ab, _, rab, rba) = try await link(a, b)
    let (bc, _, rbc, rcb) = try await link(b, c)
    for i in 1...5 { await a.save("n\(i).md", "Note \(i)\n") }
    #expect(
      await eventually(60) { (1...5).allSatisfy { c.folder.text("n\($0).md") == "Note \($0)\n" } })
    #expect(a.folder.reads.withLock { $0 } == 0)
    #expect(b.folder.reads.withLock { $0 } == 0)
    await ab.close()
    await bc.close()
    for task in [rab, rba, rbc, rcb] { _ = await task.value }
  }

  /// A note the engine holds no bytes for (one a scan found) is read from
  /// the folder, once for its push.
  @Test func aNoteNotCarriedIsReadOncePerPush() async throws {
    let a = try HandoffTestAgent("alice", key: key)
    let b = try HandoffTestAgent("bob", key: key)
    a.folder.put("n.md", "N\n")
    await a.engine.rescan()
    let (ab, _, rab, rba) = try await link(a, b)
    #expect(await eventually(30) { b.folder.text("n.md") == "N\n" })
    #expect(a.folder.reads.withLock { $0 } == 1)
    await ab.close()
    for task in [rab, rba] { _ = await task.value }
  }

  @Test func aResponderStillServesAOneShotSession() async throws {
    let a = try HandoffTestAgent("alice", key: key)
    let b = try HandoffTestAgent("bob", key: key)
    await b.save("n.md", "N\n")
    let (ca, cb) = InMemoryMessageChannel.pair(maximumMessageSize: 512)
    async let session = a.engine.runSession(over: ca, initiator: true, peerAddress: "addr-bob")
    let outcome = try await b.engine.respond(over: cb, peerAddress: "addr-alice")
    let summary = try await session
    guard case .session = outcome else {
      Issue.record("a one-shot session was taken for a link")
      return
    }
    #expect(summary.received == ["\(HandoffTestAgent.notesType):n.md"])
    #expect(a.folder.text("n.md") == "N\n")
  }

  /// A note whose sending takes longer than the keep-alive and the silence
  /// limit together (about 20 s here): the PING waits behind it, the link
  /// stays up because the note's frames keep going out, and the note is
  /// sent once.
  @Test func aLongTransferOutlivesTheKeepAlive() async throws {
    let a = try HandoffTestAgent("alice", key: key, policy: Self.quickKeepAlive)
    let b = try HandoffTestAgent("bob", key: key, policy: Self.quickKeepAlive)
    let (ca, cb) = InMemoryMessageChannel.pair(maximumMessageSize: 512)
    let (la, lb, ra, rb) = try await link(a, b, over: (SlowChannel(ca, delay: .milliseconds(70)), cb))
    #expect(await eventually(30) { la.endReason == nil && lb.endReason == nil && a.folder.paths.isEmpty })
    let text = String(repeating: "A long note line of about fifty bytes, again.\n", count: 3_000)
    await a.save("long.md", text)
    #expect(await eventually(90) { b.folder.text("long.md") == text })
    #expect(la.endReason == nil, "\(la.endReason ?? "")")
    #expect(await a.counter(HandoffCounter.sent) == 1)
    await la.close()
    _ = await ra.value
    _ = await rb.value
  }

  /// The keep-alive of links before it became 120 s: short enough for a
  /// test to outlive it.
  static var quickKeepAlive: HandoffPolicy {
    var policy = HandoffPolicy()
    policy.keepAlive = .seconds(3)
    return policy
  }

  @Test func aLinkWhosePeerStopsAnsweringIsClosed() async throws {
    let a = try HandoffTestAgent("alice", key: key, policy: Self.quickKeepAlive)
    let b = try HandoffTestAgent("bob", key: key)
    let (la, cb) = try await linkToSilentPeer(a, b)
    // Bob's side never runs: nothing answers alice's keep-alive, as with a
    // peer that died and left its controller holding the connection.
    let reason = await a.engine.runLink(la)
    #expect(la.isDead, "\(reason)")
    #expect(reason.contains("PING"), "\(reason)")
    await cb.close()
  }
}

extension HandoffLinkTests {
  /// With the default keep-alive (120 s) an idle link sends no PING for
  /// minutes; `probe()` (the peer's beacon heard under another address)
  /// sends one at once and wakes the watchdog, so a peer that does not
  /// answer is closed after the silence limit, not after the keep-alive.
  @Test func aProbeOfASilentPeerClosesTheLinkAfterTheSilenceLimit() async throws {
    var policy = HandoffPolicy()
    policy.silenceLimit = .milliseconds(500)
    let a = try HandoffTestAgent("alice", key: key, policy: policy)
    let b = try HandoffTestAgent("bob", key: key)
    let (la, cb) = try await linkToSilentPeer(a, b)
    // Bob's side never runs, as in the test above.
    let run = Task { await a.engine.runLink(la) }
    // Give the watchdog time to go to sleep (for 120 s): the probe must
    // wake it. (Were it not asleep yet, the test would pass all the same.)
    try await Task.sleep(for: .milliseconds(300))
    la.probe()
    #expect(await eventually(20) { la.endReason != nil }, "still up 20 s after the probe")
    let reason = await run.value
    #expect(reason.contains("PING"), "\(reason)")
    #expect(la.isDead)
    await cb.close()
  }
}

extension HandoffLinkTests {
  /// Both sides go quiet at the same moment, so both keep-alives fire
  /// together and each side's PING crosses the other's: each must still
  /// answer PONG, and the link stays up.
  @Test func crossedKeepAlivesKeepTheLinkUp() async throws {
    var policy = HandoffPolicy()
    policy.keepAlive = .milliseconds(300)
    policy.silenceLimit = .milliseconds(900)
    let a = try HandoffTestAgent("alice", key: key, policy: policy)
    let b = try HandoffTestAgent("bob", key: key, policy: policy)
    let (ca, cb) = InMemoryMessageChannel.pair(maximumMessageSize: 512)
    let (la, lb, ra, rb) = try await link(a, b, over: (ca, cb))
    // Ten keep-alive rounds or so.
    try await Task.sleep(for: .seconds(3))
    #expect(la.endReason == nil, "\(la.endReason ?? "")")
    #expect(lb.endReason == nil, "\(lb.endReason ?? "")")
    await la.close()
    _ = await ra.value
    _ = await rb.value
  }
}

extension HandoffLinkTests {
  /// A key holder sending INDEX after INDEX, each empty, would make the
  /// agent push its whole folder for every one (issue 30). One per
  /// `retryInterval` is applied; the newest of those that came sooner waits
  /// for it, and is applied then (so nothing a peer asks for is lost).
  @Test func aFloodOfEmptyIndexesCostsOnePushPerInterval() async throws {
    var policy = HandoffPolicy()
    policy.retryInterval = .seconds(5)
    let a = try HandoffTestAgent("alice", key: key, policy: policy)
    let b = try HandoffTestAgent("mallory", key: key)
    for i in 0..<3 { await a.save("n\(i).md", "# N\(i)\n") }
    let (la, lb) = try await openLink(a, b)
    let run = Task { await a.engine.runLink(la) }
    // Mallory's side is driven by hand: its engine never runs the link.
    var mallory = lb.secure
    /// The paths of the NOTEs that come until `count` distinct ones did (at
    /// most four times as many NOTEs): the catch-up walk's push and the
    /// first INDEX's may overlap, so a NOTE of the first push may still be
    /// queued when the second is read.
    func notes(_ count: Int) async throws -> Set<String> {
      var paths: Set<String> = []
      var seen = 0
      while paths.count < count && seen < 4 * count {
        switch try await mallory.receive() {
        case .note(let payload):
          paths.insert(payload.path)
          seen += 1
        case .getNodes(let requests):
          // Alice's catch-up walk: Mallory holds nothing.
          try await mallory.send(.nodes(IndexReconciliation.answer(requests, from: HandoffIndex(offeredTypes: [HandoffTestAgent.notesType], summaryKey: HandoffKeys(groupKey: key).summary))))
        default: break
        }
      }
      return paths
    }
    try await mallory.send(.index([]))
    let first = try await notes(3)
    #expect(first == ["n0.md", "n1.md", "n2.md"], "\(first)")
    for _ in 0..<5 { try await mallory.send(.index([])) }
    #expect(await eventually(20) { la.peerIndexWaits }, "the INDEXes within the interval were applied")
    // The newest is applied when the interval is over: one more push.
    let again = try await notes(3)
    #expect(again == ["n0.md", "n1.md", "n2.md"], "\(again)")
    #expect(await eventually(20) { !la.peerIndexWaits })
    await la.close()
    _ = await run.value
    await lb.close()
  }
}

/// A channel whose sends each take `delay` (a slow radio).
private final class SlowChannel: MessageChannel {
  let inner: any MessageChannel
  let delay: Duration
  init(_ inner: any MessageChannel, delay: Duration) {
    self.inner = inner
    self.delay = delay
  }
  var maximumMessageSize: Int { inner.maximumMessageSize }
  func send(_ message: [UInt8]) async throws {
    try await Task.sleep(for: delay)
    try await inner.send(message)
  }
  func receive() async throws -> [UInt8]? { try await inner.receive() }
  func close() async { await inner.close() }
}

/// A channel that counts the bytes sent through it.
private final class CountingChannel: MessageChannel {
  let inner: any MessageChannel
  private let count = Mutex(0)
  init(_ inner: any MessageChannel) { self.inner = inner }
  var sent: Int { count.withLock { $0 } }
  var maximumMessageSize: Int { inner.maximumMessageSize }
  func send(_ message: [UInt8]) async throws {
    count.withLock { $0 += message.count }
    try await inner.send(message)
  }
  func receive() async throws -> [UInt8]? { try await inner.receive() }
  func close() async { await inner.close() }
}
