import BatonTestSupport
import Foundation
import Testing

@testable import BatonHandoff
@testable import BatonSystem

/// Where an independent implementation of PROTOCOL.md found the agent
/// parting from the spec (issue 31).
@Suite struct SpecConformanceTests {
  let key = GroupKey.generate()

  /// Section 3, "Replays": link attempts for the same beacon content and
  /// address count as retries, as sessions do (2, 5, 10 s, then
  /// `retryInterval`), and a session after failed links goes on with the
  /// same count instead of starting afresh.
  @Test func linkAttemptsCountAsRetries() async throws {
    var policy = HandoffPolicy(retryInterval: .seconds(3600))
    policy.firstRetryDelays = [.zero, .zero]
    let a = try HandoffTestAgent("alice", key: key)
    let b = try HandoffTestAgent("bob", key: key, policy: policy)
    await a.save("s.md", "s")
    let beacon = await a.engine.currentBeacon()
    // The first two retries wait nothing here; after the third attempt
    // the next waits `retryInterval`, on either path.
    #expect(await b.bounds.shouldLink(beacon: beacon, from: "A"))
    #expect(await b.bounds.shouldLink(beacon: beacon, from: "A"))
    #expect(await b.bounds.shouldConnect(beacon: beacon, from: "A"))
    #expect(await !b.bounds.shouldLink(beacon: beacon, from: "A"))
    #expect(await !b.bounds.shouldConnect(beacon: beacon, from: "A"))
  }

  /// Section 3, "Replays": a link whose handshake failed holds the address
  /// back for `retryInterval` on the session path too, and the same beacon
  /// from fresh addresses gets no connection on either path meanwhile.
  @Test func failedLinkHandshakeHoldsBackBothPaths() async throws {
    let a = try HandoffTestAgent("alice", key: key)
    let b = try HandoffTestAgent("bob", key: key)
    let mallory = try HandoffTestAgent("mallory", key: GroupKey.generate())
    await a.save("s.md", "s")
    let captured = await a.engine.currentBeacon()
    #expect(await b.bounds.shouldLink(beacon: captured, from: "M1"))
    let (bobEnd, malloryEnd) = InMemoryMessageChannel.pair()
    async let refused = try? mallory.engine.respond(over: malloryEnd, peerAddress: "B")
    let link = await Result(catching: {
      try await b.engine.openLink(over: bobEnd, peerAddress: "M1")
    })
    _ = await refused
    b.bounds.ended(at: "M1", link.map { _ in nil })
    #expect(!link.succeeded)
    for address in ["M1", "M2", "M3"] {
      #expect(await !b.bounds.shouldLink(beacon: captured, from: address), "\(address)")
      #expect(await !b.bounds.shouldConnect(beacon: captured, from: address), "\(address)")
    }
  }

  /// Section 4: as initiator, a responder whose M2 claims this agent's own
  /// device id gets no M3; the channel closes and the failure says why.
  @Test(arguments: [false, true])
  func initiatorRefusesItsOwnIdBeforeM3(link: Bool) async throws {
    let a = try HandoffTestAgent("alice", key: key)
    let keys = HandoffKeys(groupKey: key)
    let (i, hostile) = InMemoryMessageChannel.pair()
    async let opened = Result(catching: {
      if link {
        _ = try await a.engine.openLink(over: i, peerAddress: "m")
      } else {
        _ = try await a.engine.runSession(over: i, initiator: true, peerAddress: "m")
      }
    })
    let hello = try #require(try await hostile.receive())
    // A copy of alice's state directory: her own device key.
    let reflected = await a.engine.me
    try await hostile.send(
      try #require(SecureChannel.challengeResponse(to: hello, me: reflected, keys: keys)))
    #expect(try await hostile.receive() == nil)  // no M3
    guard case .failure(let error) = await opened else {
      Issue.record("a responder claiming our own device id was admitted")
      return
    }
    #expect("\(error)".contains("own device id"))
    let failure = try #require(await a.engine.status().failures.first)
    #expect(failure.reason.contains("own device id") && failure.reason.contains("before answering"))
    #expect(await a.counter(HandoffCounter.failed) == 1)
  }

  /// Section 9: an index entry over the receiver's size limit is declined
  /// (not fetched), not a session error, however large: 2^31 bytes and
  /// more too. The rest of the session goes on.
  @Test(arguments: [Int(Int32.max) + 1, 1 << 40, Int.max])
  func hugeIndexEntryIsDeclined(size: Int) async throws {
    let a = try HandoffTestAgent("alice", key: key)
    let b = try HandoffTestAgent("bob", key: key)
    await a.save("big.md", "big")
    await a.save("ok.md", "ok")
    await a.engine.forgeSizeForTest(HandoffTestAgent.notesType, "big.md", size: size)
    let (rb, ra) = await runSession(b, a)
    #expect(rb.succeeded && ra.succeeded)
    #expect(b.folder.text("ok.md") == "ok")
    #expect(b.folder.text("big.md") == nil)
    #expect(rb.value?.declined == 1)
    #expect(await b.counter(HandoffCounter.declined) == 1)
    #expect(await b.counter(HandoffCounter.failed) == 0)
    // As the responder too: alice's entry comes in her TURN.
    let c = try HandoffTestAgent("carol", key: key)
    let (ra2, rc) = await runSession(a, c)
    #expect(ra2.succeeded && rc.succeeded)
    #expect(c.folder.text("ok.md") == "ok" && c.folder.text("big.md") == nil)
    #expect(await c.counter(HandoffCounter.declined) == 1)
    #expect(await c.counter(HandoffCounter.failed) == 0)
  }

  /// A size past 2^63 - 1 on the wire decodes (as `Int.max`) instead of
  /// failing the message.
  @Test func entrySizeAboveIntMaxDecodes() throws {
    let entry = HandoffIndexEntry(
      activityType: HandoffTestAgent.notesType, path: "n.md", hash: ContentHash(of: [1]), size: 0,
      version: VersionVector([DeviceID(rawValue: 1): 1]), origin: DeviceID(rawValue: 1))
    var w = ByteWriter()
    entry.encode(into: &w)
    var bytes = w.bytes
    let at = 2 + entry.activityType.utf8.count + 2 + entry.path.utf8.count + 32
    for i in at..<at + 8 { bytes[i] = 0xFF }
    var r = WireReader(bytes)
    let decoded = try HandoffIndexEntry.decode(from: &r)
    #expect(decoded.size == Int.max && decoded.path == "n.md")
  }

  /// Protocol violations and ERROR on a link are failures, as in a
  /// session: logged as a warning and counted (`failed`, the failure list).
  @Test(arguments: ["getActivity", "getNote", "garbage", "error"])
  func linkViolationIsCountedAsInASession(kind: String) async throws {
    let a = try HandoffTestAgent("alice", key: key)
    let b = try HandoffTestAgent("bob", key: key)
    let (ca, cb) = InMemoryMessageChannel.pair(maximumMessageSize: 512)
    async let opened = a.engine.openLink(over: ca, peerAddress: "addr-bob")
    let outcome = try await b.engine.respond(over: cb, peerAddress: "addr-alice")
    let la = try await opened
    guard case .link(let lb) = outcome else {
      Issue.record("no link")
      return
    }
    #expect(await a.counter(HandoffCounter.failed) == 0)
    // Bob's side never runs: the test speaks for it.
    var bob = lb.secure
    switch kind {
    case "getActivity": try await bob.send(.getActivity)
    case "getNote": try await bob.send(.getNote(activityType: HandoffTestAgent.notesType, path: "n.md"))
    case "error": try await bob.send(.error(code: 9, text: "out of memory"))
    default:
      // Frames that do not verify: one is dropped and asked for again
      // (protocol 6, a fault below); more in a row than any fault makes
      // end the link.
      for _ in 0...FrameRecovery.maxBadFrames {
        try await cb.send([FrameRecovery.dataMarker] + HandoffCrypto.random(60))
      }
    }
    let why = await a.engine.runLink(la)
    let expected = kind == "error" ? "ended the session: out of memory" : "broke the handoff protocol"
    #expect(why.contains(expected))
    #expect(await a.counter(HandoffCounter.failed) == 1)
    let failure = try #require(await a.engine.status().failures.first)
    #expect(failure.reason.contains("link:") && failure.reason.contains(expected))
    await lb.close()
  }

  /// Sections 3 and 4: a version notice (`02 v`, before anything is
  /// authenticated) holds the address back for that beacon content for
  /// `retryInterval`, as a failed handshake does, not for a day.
  @Test(arguments: [false, true])
  func versionNoticeHoldsBackForTheRetryInterval(instantRetry: Bool) async throws {
    let a = try HandoffTestAgent("alice", key: key)
    let b = try HandoffTestAgent(
      "bob", key: key,
      policy: HandoffPolicy(retryInterval: instantRetry ? .zero : .seconds(30)))
    await a.save("s.md", "s")
    let beacon = await a.engine.currentBeacon()
    #expect(await b.bounds.shouldConnect(beacon: beacon, from: "M"))
    let (i, hostile) = InMemoryMessageChannel.pair()
    async let session = Result(catching: {
      try await b.engine.runSession(over: i, initiator: true, peerAddress: "M")
    })
    _ = try #require(try await hostile.receive())
    try await hostile.send([0x02, 0x04])
    let outcome = await session
    b.bounds.ended(at: "M", outcome.map { $0 })
    guard case .failure(let error) = outcome else {
      Issue.record("a version notice made a session")
      return
    }
    #expect("\(error)".contains("speaks baton protocol 4"))
    let holds = b.bounds.heldBack
    #expect(holds.count == 1)
    let until = try #require(holds.values.first)
    #expect(until <= ContinuousClock.now + b.policy.retryInterval)
    // Held now with the default interval; with none, tried again at once.
    #expect(await b.bounds.shouldConnect(beacon: beacon, from: "M") == instantRetry)
  }

  /// Section 8, "Names": a received path with an invisible character or a
  /// look-alike slash is declined before the transfer, like the other names
  /// the folder refuses, and nothing of it reaches the disk.
  @Test func disguisedNamesAreDeclined() async throws {
    let alice = try HandoffTestAgent("alice", key: key)
    let bob = try DiskAgent("bob", key: key)
    let disguised = ["no\u{200B}tes.md", "work\u{2215}plan.md", "bom\u{FEFF}.md", "a\u{200D}b.md"]
    for name in disguised { await alice.save(name, "x") }
    await alice.save("ok.md", "fine")
    let (first, _) = await runEngines(bob.engine, alice.engine)
    let summary = try #require(first.value)
    #expect(summary.received == ["\(HandoffTestAgent.notesType):ok.md"])
    #expect(summary.declined == disguised.count && summary.failed == 0)
    #expect(await bob.counter(HandoffCounter.declined) == disguised.count)
    #expect(bob.tree() == ["notes", "notes/ok.md"])
  }

  /// Section 8, "Names": a peer's note whose name differs from a note here
  /// only in letter case or Unicode normalisation is not written; the
  /// failure names both files, and the note here is untouched.
  @Test func twinOfANoteHereIsNotWritten() async throws {
    let alice = try HandoffTestAgent("alice", key: key)
    let bob = try DiskAgent("bob", key: key)
    try Data("mine\n".utf8).write(to: bob.base.appendingPathComponent("notes/notes.md"))
    _ = try bob.folder.buildIndex()
    await bob.engine.rescan()
    await alice.save("Notes.md", "theirs")
    await alice.save("ok.md", "fine")
    let (first, _) = await runEngines(bob.engine, alice.engine)
    #expect(first.value?.received == ["\(HandoffTestAgent.notesType):ok.md"])
    #expect(bob.tree() == ["notes", "notes/notes.md", "notes/ok.md"])
    let text = try String(contentsOf: bob.base.appendingPathComponent("notes/notes.md"), encoding: .utf8)
    #expect(text == "mine\n")
    let failure = try #require(await bob.engine.status().failures.first)
    #expect(failure.reason.contains("Notes.md") && failure.reason.contains("\"notes.md\" is here"))
    #expect(await bob.counter(HandoffCounter.failed) == 1)
    // Not retried (section 8): the session settled, so alice's beacon
    // asks for no other.
    #expect(first.value?.unwritten == 0)
    let bounds = RadioBounds(bob.engine)
    bounds.ended(at: "A", first.map { $0 })
    #expect(await !bounds.shouldConnect(beacon: alice.engine.currentBeacon(), from: "A"))
  }
}


extension HandoffEngine {
  /// Sets the size an index entry claims, as a hostile or buggy peer would.
  func forgeSizeForTest(_ type: String, _ path: String, size: Int) {
    ensureScanned()
    index[Self.key(type, path)]?.entry.size = size
  }
}
