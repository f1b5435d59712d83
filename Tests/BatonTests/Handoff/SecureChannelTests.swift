import BatonTestSupport
import Synchronization
import Testing

@testable import BatonHandoff
@testable import BatonSystem

/// Wraps a channel and records every message sent through it.
final class RecordingChannel: MessageChannel {
  let inner: any MessageChannel
  let sent = Mutex<[[UInt8]]>([])
  init(_ inner: any MessageChannel) { self.inner = inner }
  var maximumMessageSize: Int { inner.maximumMessageSize }
  func send(_ message: [UInt8]) async throws {
    sent.withLock { $0.append(message) }
    try await inner.send(message)
  }
  func receive() async throws -> [UInt8]? { try await inner.receive() }
  func close() async { await inner.close() }
}

@Suite struct SecureChannelTests {
  let key = GroupKey.generate()

  @Test func recordedSessionReplayedToTheResponderFailsAuthentication() async throws {
    let a = try HandoffTestAgent("alice", key: key)
    let b = try HandoffTestAgent("bob", key: key)
    await a.save("x.md", "x")
    let (i, r) = InMemoryMessageChannel.pair()
    let recorder = RecordingChannel(i)
    async let one = b.engine.runSession(over: recorder, initiator: true, peerAddress: "a")
    async let two = a.engine.runSession(over: r, initiator: false, peerAddress: "b")
    _ = try await (one, two)
    let recorded = recorder.sent.withLock { $0 }
    #expect(recorded.count >= 4)

    // Replay bob's side of the session to alice: she sends a fresh challenge, so
    // bob's old M3 does not verify and she serves nothing.
    let (attacker, victim) = InMemoryMessageChannel.pair()
    async let session = Result(catching: {
      try await a.engine.runSession(over: victim, initiator: false, peerAddress: "replayer")
    })
    // The hello, then bob's old M3 after each M2: alice takes a response that
    // does not verify for damage and asks again with M2, as many times as
    // repeats are allowed (section 4, "Repeats"), then fails.
    try await attacker.send(recorded[0])
    var answered: [[UInt8]] = []
    while let reply = try await attacker.receive() {
      answered.append(reply)
      try? await attacker.send(recorded[1])
    }
    let result = await session
    guard case .failure(let error) = result else {
      Issue.record("replayed session succeeded")
      return
    }
    #expect("\(error)".contains("authentication"))
    // Only M2, the same bytes each time, which are useless without the key.
    #expect(answered.count == 1 + HandshakeRepeater.limit)
    #expect(Set(answered).count == 1 && answered.first?.first == 0x02)
  }

  @Test func garbageInsteadOfAHandshakeIsRejected() async throws {
    let a = try HandoffTestAgent("alice", key: key)
    let validHello = SecureChannel.makeHello(ephemeral: EphemeralKey().publicKey)
    for garbage in [
      [UInt8](), [1, 1], HandoffCrypto.random(34), [0x01, 0x02] + HandoffCrypto.random(32),
      validHello,
    ] {
      let (attacker, victim) = InMemoryMessageChannel.pair()
      async let session = Result(catching: {
        try await a.engine.runSession(over: victim, initiator: false, peerAddress: "x")
      })
      // As often as repeats could bring it (a damaged hello is dropped, since
      // the initiator repeats it), then a response that does not verify as
      // often: more than that is no baton agent.
      for _ in 0...HandshakeRepeater.limit { try? await attacker.send(garbage) }
      for _ in 0...HandshakeRepeater.limit {
        try? await attacker.send([0x03] + HandoffCrypto.random(119))
      }
      let result = await session
      #expect(throws: HandoffError.self) { try result.get() }
    }
  }

  @Test func tamperedFrameIsSentAgain() async throws {
    let a = try HandoffTestAgent("alice", key: key)
    let b = try HandoffTestAgent("bob", key: key)
    await a.save("x.md", "x")
    // A channel that flips a bit in the 4th message bob sends (the first sealed frame).
    final class Flipper: MessageChannel {
      let inner: any MessageChannel
      let count = Mutex(0)
      init(_ inner: any MessageChannel) { self.inner = inner }
      var maximumMessageSize: Int { inner.maximumMessageSize }
      func send(_ message: [UInt8]) async throws {
        var m = message
        if count.withLock({
          $0 += 1
          return $0
        }) == 3 {
          m[m.count - 1] ^= 0x80
        }
        try await inner.send(m)
      }
      func receive() async throws -> [UInt8]? { try await inner.receive() }
      func close() async { await inner.close() }
    }
    let (i, r) = InMemoryMessageChannel.pair()
    async let one = Result(catching: {
      try await b.engine.runSession(over: Flipper(i), initiator: true, peerAddress: "a")
    })
    async let two = Result(catching: {
      try await a.engine.runSession(over: r, initiator: false, peerAddress: "b")
    })
    let (x, y) = await (one, two)
    // The damaged frame was dropped and sent again (protocol 6): the
    // session goes on, and the note arrives once.
    #expect(x.succeeded && y.succeeded, "\(x) \(y)")
    #expect(b.folder.paths == ["x.md"])
    #expect(await a.engine.status().failures.isEmpty)
  }

  @Test func tooSmallChannelIsRefused() async throws {
    let a = try HandoffTestAgent("alice", key: key)
    let (i, _) = InMemoryMessageChannel.pair(maximumMessageSize: 100)
    await #expect(throws: HandoffError.channelTooSmall(size: 100)) {
      try await a.engine.runSession(over: i, initiator: true, peerAddress: "x")
    }
  }
}

extension Result where Failure == any Error {
  init(catching body: () async throws -> Success) async {
    do { self = .success(try await body()) } catch { self = .failure(error) }
  }
}

/// Flips one bit of byte `offset` in the `index`th message (from 1) sent through it,
/// and in every repeat of that message (section 4, "Repeats").
final class TamperingChannel: MessageChannel {
  let inner: any MessageChannel
  let index: Int
  let offset: Int
  let count = Mutex(0)
  let original: Mutex<[UInt8]?> = Mutex(nil)
  init(_ inner: any MessageChannel, message index: Int, offset: Int) {
    self.inner = inner
    self.index = index
    self.offset = offset
  }
  var maximumMessageSize: Int { inner.maximumMessageSize }
  func send(_ message: [UInt8]) async throws {
    var m = message
    let n = count.withLock {
      $0 += 1
      return $0
    }
    // The chosen message, and every repeat of it (the same bytes).
    let chosen = original.withLock { o -> Bool in
      if n == index { o = message }
      return o == message
    }
    if chosen { m[offset] ^= 0x01 }
    try await inner.send(m)
  }
  func receive() async throws -> [UInt8]? { try await inner.receive() }
  func close() async { await inner.close() }
}

/// The ephemeral X25519 agreement (handshake version 2), the identities
/// sealed under it (since version 10), and the version rules (PROTOCOL.md section 4).
@Suite struct ForwardSecrecyTests {
  let key = GroupKey.generate()
  var keys: HandoffKeys { HandoffKeys(groupKey: key) }
  let bob = LocalIdentity(key: DeviceKey(seed: [UInt8](repeating: 0xb0, count: 32))!, name: "bob")

  @Test func sessionBetweenTwoEnginesWorksInBothDirections() async throws {
    let a = try HandoffTestAgent("alice", key: key)
    let b = try HandoffTestAgent("bob", key: key)
    await a.save("x.md", "from alice")
    await b.save("y.md", "from bob")
    let (i, r) = InMemoryMessageChannel.pair(maximumMessageSize: HandoffLimits.minimumMessageSize)
    async let one = b.engine.runSession(over: i, initiator: true, peerAddress: "a")
    async let two = a.engine.runSession(over: r, initiator: false, peerAddress: "b")
    let (sb, sa) = try await (one, two)
    #expect(sb.peerName == "alice" && sa.peerName == "bob")
    #expect(b.folder.text("x.md") == "from alice")
    #expect(a.folder.text("y.md") == "from bob")
  }

  /// Protocol 10: a capture of a whole handshake between two engines, and the
  /// group key, do not open either identity. Only the X25519 secret of the
  /// two ephemeral keys does, and neither is in the capture.
  @Test func aCaptureAndTheGroupKeyDoNotOpenTheIdentities() async throws {
    let a = try HandoffTestAgent("alice", key: key)
    let b = try HandoffTestAgent("bob", key: key)
    let (i, r) = InMemoryMessageChannel.pair()
    let (initiator, responder) = (RecordingChannel(i), RecordingChannel(r))
    async let one = Result(catching: {
      try await a.engine.runSession(over: initiator, initiator: true, peerAddress: "b")
    })
    async let two = Result(catching: {
      try await b.engine.runSession(over: responder, initiator: false, peerAddress: "a")
    })
    let (x, y) = await (one, two)
    #expect(x.succeeded && y.succeeded)
    let fromI = initiator.sent.withLock { $0 }
    let fromR = responder.sent.withLock { $0 }
    try #require(fromI.count >= 2 && !fromR.isEmpty)
    let (m1, m2, m3) = (fromI[0], fromR[0], fromI[1])
    #expect(m1.count == SecureChannel.helloBytes && m2.first == 0x02 && m3.first == 0x03)
    // Protocol 9 sealed both under k_auth: that key alone no longer opens them.
    let head2 = Array(m2[0..<SecureChannel.challengeResponseHeaderBytes])
    let head3 = Array(m3[0..<SecureChannel.responseHeaderBytes])
    #expect(
      HandoffCrypto.open(
        Array(m2[head2.count...]), ad: SecureChannel.labelResponder + m1 + head2,
        nonce: Array(head2.suffix(24)), key: keys.auth) == nil)
    #expect(
      HandoffCrypto.open(
        Array(m3[head3.count...]), ad: SecureChannel.labelInitiator + m1 + m2 + head3,
        nonce: Array(head3.suffix(24)), key: keys.auth) == nil)
    // Nor do identity keys made from what the capture shows: the public keys
    // in place of the secret, or a guess.
    let eI = Array(m1[SecureChannel.initiatorEphemeralRange])
    let eR = Array(m2[SecureChannel.responderEphemeralRange])
    let guesses = [eI, eR, [UInt8](repeating: 0, count: 32), EphemeralKey().shared(with: eR)!]
    for guess in guesses {
      #expect(
        SecureChannel.openChallengeResponse(m2, hello: m1, shared: guess, keys: keys)
          == .sealBroken)
      #expect(
        SecureChannel.openResponse(m3, hello: m1, challengeResponse: m2, shared: guess, keys: keys)
          == .sealBroken)
    }
  }

  /// A hello whose ephemeral key is a low-order point gets no M2: every
  /// X25519 secret with it is zero, and no radio fault makes one.
  @Test func aLowOrderHelloIsRefusedBeforeM2() async throws {
    let a = try HandoffTestAgent("alice", key: key)
    let (hostile, victim) = InMemoryMessageChannel.pair()
    async let session = Result(catching: {
      try await a.engine.runSession(over: victim, initiator: false, peerAddress: "m")
    })
    try await hostile.send(SecureChannel.makeHello(ephemeral: [UInt8](repeating: 0, count: 32)))
    #expect(try await hostile.receive() == nil)  // no M2
    guard case .failure(let error) = await session else {
      Issue.record("a low-order hello was answered")
      return
    }
    #expect("\(error)".contains("not a usable X25519 key"))
  }

  @Test func oldInitiatorGetsTheUpgradeMessage() async throws {
    let a = try HandoffTestAgent("alice", key: key)
    let (old, victim) = InMemoryMessageChannel.pair()
    async let session = Result(catching: {
      try await a.engine.runSession(over: victim, initiator: false, peerAddress: "old")
    })
    try await old.send([0x01, 0x01] + HandoffCrypto.random(32))  // a protocol 1 hello
    // The answer a protocol 1 initiator reports as "it speaks handoff protocol version 5".
    #expect(try await old.receive() == [0x02, SecureChannel.handshakeVersion])
    #expect(try await old.receive() == nil)
    guard case .failure(let error) = await session else {
      Issue.record("a protocol 1 hello was accepted")
      return
    }
    #expect(error as? HandoffError == .peerProtocolVersion(peer: "old", version: 1))
    let failure = try #require(await a.engine.status().failures.first)
    #expect(failure.reason.contains("peer old speaks baton protocol 1; upgrade it to this version"))
    #expect(!failure.reason.contains("key file"))
  }

  @Test func initiatorDetectsAnOldResponderThatCloses() async throws {
    let b = try HandoffTestAgent("bob", key: key)
    let (i, old) = InMemoryMessageChannel.pair()
    async let session = Result(catching: {
      try await b.engine.runSession(over: i, initiator: true, peerAddress: "old")
    })
    // What a protocol 1 responder does: a 34-byte hello not of version 1 is refused, silently.
    let hello = try #require(try await old.receive())
    #expect(hello.count == 34 && hello[0] == 0x01 && hello[1] == SecureChannel.handshakeVersion)
    await old.close()
    guard case .failure(let error) = await session else {
      Issue.record("no failure")
      return
    }
    #expect(error as? HandoffError == .peerRefusedHello(peer: "old"))
    #expect("\(error)".contains("reached it damaged"))
    #expect("\(error)".contains("protocol 1; if this repeats, upgrade it to this version"))
    let failure = try #require(await b.engine.status().failures.first)
    #expect(failure.reason.contains("protocol 1; if this repeats, upgrade it"))
  }

  /// A channel that failed on our side before any M2 (data lost or damaged
  /// below it, a stall) is a radio fault, not an old peer's refusal: it is
  /// reported as a closed connection that the next session retries, and it
  /// does not hold back handshakes with that address.
  @Test func initiatorReportsAFaultBeforeM2AsAFault() async throws {
    final class FailingChannel: MessageChannel {
      let inner: any MessageChannel
      init(_ inner: any MessageChannel) { self.inner = inner }
      var maximumMessageSize: Int { inner.maximumMessageSize }
      func send(_ message: [UInt8]) async throws { try await inner.send(message) }
      func receive() async throws -> [UInt8]? { try await inner.receive() }
      func close() async { await inner.close() }
      var closedByPeer: Bool { false }
    }
    let b = try HandoffTestAgent("bob", key: key)
    let (i, peer) = InMemoryMessageChannel.pair()
    async let session = Result(catching: {
      try await b.engine.runSession(over: FailingChannel(i), initiator: true, peerAddress: "p")
    })
    _ = try #require(try await peer.receive())
    await peer.close()
    guard case .failure(let error) = await session else {
      Issue.record("no failure")
      return
    }
    #expect(error as? HandoffError == .channelClosed(peer: "p"))
    #expect(!"\(error)".contains("protocol 1"))
    #expect((error as? HandoffError)?.endsHandshakesWithThisAddress == false)
  }

  @Test func initiatorDetectsAnOldResponderThatAnswers() async throws {
    let b = try HandoffTestAgent("bob", key: key)
    let (i, old) = InMemoryMessageChannel.pair()
    async let session = Result(catching: {
      try await b.engine.runSession(over: i, initiator: true, peerAddress: "old")
    })
    let hello = try #require(try await old.receive())
    // A protocol 1 challenge response: 02 01 cR n2 seal(identity).
    let nonce = HandoffCrypto.random(24)
    let head = [0x02, 0x01] + HandoffCrypto.random(32) + nonce
    let sealed = HandoffCrypto.seal(
      SecureChannel.identityBytes(bob.peer), ad: SecureChannel.labelResponder + hello + head,
      nonce: nonce, key: keys.auth)
    try await old.send(head + sealed)
    // A protocol 1 responder takes the repeated hello for a broken M3 and closes.
    let repeated = try await old.receive()
    await old.close()
    guard case .failure(let error) = await session else {
      Issue.record("a protocol 1 challenge response was accepted")
      return
    }
    #expect(error as? HandoffError == .peerProtocolVersion(peer: "old", version: 1))
    #expect("\(error)".hasPrefix("peer old speaks baton protocol 1; upgrade it to this version"))
    // An M2 of another version might be one damaged in its version byte: the
    // hello went again, the same bytes, and never M3.
    #expect(repeated == hello)
  }

  @Test func newerPeerIsToldToUpgradeThisAgent() {
    let newer = SecureChannel.handshakeVersion + 1
    let error = HandoffError.peerProtocolVersion(peer: "p", version: newer)
    let text = "\(error)"
    #expect(text.contains("speaks baton protocol \(newer)") && text.contains("upgrade this agent"))
  }

  /// Protocol 11 refuses a protocol 3 to 10 hello with the version notice
  /// `02 0b` and the upgrade message: protocols 3 to 6 have no device keys,
  /// 7 sends a frame again only whole, with control frames 8 reads
  /// otherwise, 8 carries no vouchers in its entries, 9 seals the
  /// identities under the group key alone, and 10 sends LINK without its
  /// summary root and only after the responder's MEMBERS.
  @Test(arguments: [3, 4, 5, 6, 7, 8, 9, 10] as [UInt8])
  func olderInitiatorGetsTheUpgradeMessage(version: UInt8) async throws {
    #expect(SecureChannel.handshakeVersion == 11)
    let a = try HandoffTestAgent("alice", key: key)
    let (old, victim) = InMemoryMessageChannel.pair()
    async let session = Result(catching: {
      try await a.engine.runSession(over: victim, initiator: false, peerAddress: "old")
    })
    try await old.send([0x01, version] + HandoffCrypto.random(32))
    #expect(try await old.receive() == [0x02, 11])
    guard case .failure(let error) = await session else {
      Issue.record("a protocol \(version) hello was accepted")
      return
    }
    #expect(
      "\(error)".contains(
        "peer old speaks baton protocol \(version); upgrade it to this version (protocol 11)"))
  }

  /// A bit flipped in an ephemeral key: `eR` in M2 (the responder's first
  /// message, byte 10) or `eI` in M1 (the initiator's first message, byte 5).
  /// Each is in the identity keys and in its message's AD, so the initiator
  /// cannot open M2, records why, and neither side is served.
  @Test(arguments: [(false, 1, 10), (true, 1, 5)])
  func tamperedEphemeralKeyFailsTheHandshake(
    initiatorSide: Bool, message: Int, offset: Int
  ) async throws {
    let a = try HandoffTestAgent("alice", key: key)
    let b = try HandoffTestAgent("bob", key: key)
    await a.save("x.md", "x")
    let (i, r) = InMemoryMessageChannel.pair()
    let ic: any MessageChannel =
      initiatorSide ? TamperingChannel(i, message: message, offset: offset) : i
    let rc: any MessageChannel =
      initiatorSide ? r : TamperingChannel(r, message: message, offset: offset)
    async let one = Result(catching: {
      try await b.engine.runSession(over: ic, initiator: true, peerAddress: "a")
    })
    async let two = Result(catching: {
      try await a.engine.runSession(over: rc, initiator: false, peerAddress: "b")
    })
    let (x, y) = await (one, two)
    #expect(!x.succeeded && !y.succeeded)
    #expect(b.folder.paths.isEmpty)
    // b is the initiator: it opens M2, whichever key was changed.
    let failure = try #require(await b.engine.status().failures.first)
    #expect(failure.reason.contains("does not verify") && failure.reason.contains("authentication"))
  }

  @Test func lowOrderEphemeralKeyIsRefused() async throws {
    let b = try HandoffTestAgent("bob", key: key)
    let (i, hostile) = InMemoryMessageChannel.pair()
    async let session = Result(catching: {
      try await b.engine.runSession(over: i, initiator: true, peerAddress: "m")
    })
    let hello = try #require(try await hostile.receive())
    // A key holder sends the all-zero point: every shared secret would be
    // zero, so nothing can seal an identity it could open.
    try await hostile.send(
      SecureChannel.makeChallengeResponse(
        hello: hello, ephemeral: [UInt8](repeating: 0, count: 32),
        nonce: HandoffCrypto.random(24), shared: HandoffCrypto.random(32), me: bob, keys: keys))
    guard case .failure(let error) = await session else {
      Issue.record("a low-order ephemeral key was accepted")
      return
    }
    #expect("\(error)".contains("not a usable X25519 key"))
    #expect(try await hostile.receive() == nil)  // no M3
  }

  /// Same nonces, other ephemeral keys: other session keys. The
  /// shared secret itself is an input: with the same messages, another shared
  /// secret gives other keys, so a capture and the group key are not enough.
  @Test func sessionKeysDependOnTheEphemeralKeys() throws {
    let alice = LocalIdentity(key: DeviceKey(seed: [UInt8](repeating: 0xa1, count: 32))!, name: "alice")
    func session(_ ei: UInt8, _ er: UInt8) -> (
      m1: [UInt8], m2: [UInt8], m3: [UInt8], ir: [UInt8], ri: [UInt8]
    ) {
      let i = EphemeralKey(filledWith: ei)
      let r = EphemeralKey(filledWith: er)
      let shared = i.shared(with: r.publicKey)!
      #expect(shared == r.shared(with: i.publicKey))
      let m1 = SecureChannel.makeHello(ephemeral: i.publicKey)
      let m2 = SecureChannel.makeChallengeResponse(
        hello: m1, ephemeral: r.publicKey, nonce: [UInt8](repeating: 0x33, count: 24),
        shared: shared, me: bob, keys: keys)
      let m3 = SecureChannel.makeResponse(
        hello: m1, challengeResponse: m2, nonce: [UInt8](repeating: 0x44, count: 24),
        shared: shared, me: alice, keys: keys)
      let (ir, ri) = SecureChannel.sessionKeys(
        hello: m1, challengeResponse: m2, response: m3, initiator: alice.device,
        responder: bob.device, shared: shared, keys: keys)
      return (m1, m2, m3, ir, ri)
    }
    let s1 = session(0x55, 0x66)
    let s2 = session(0x57, 0x68)
    #expect(s1.ir != s2.ir && s1.ri != s2.ri && s1.ir != s1.ri)
    #expect(s1.ir == session(0x55, 0x66).ir)  // deterministic in its inputs
    let guessed = SecureChannel.sessionKeys(
      hello: s1.m1, challengeResponse: s1.m2, response: s1.m3, initiator: alice.device,
      responder: bob.device, shared: [UInt8](repeating: 0, count: 32), keys: keys)
    #expect(guessed.toResponder != s1.ir && guessed.toInitiator != s1.ri)
  }
}
