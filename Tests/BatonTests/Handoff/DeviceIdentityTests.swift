import BatonTestSupport
import Testing

@testable import BatonHandoff
@testable import BatonSystem

/// Protocol 7 (PROTOCOL.md section 4): each side of a handshake shows its
/// device key and signs the transcript with it, so a holder of the group key
/// can no longer claim another device's id.
@Suite struct DeviceIdentityTests {
  let key = GroupKey.generate()
  var keys: HandoffKeys { HandoffKeys(groupKey: key) }

  /// M2 with bob's public key and name, signed by mallory's key (she holds
  /// the group key, so the seal opens): the signature does not verify.
  @Test func anIdentitySignedByAnotherKeyIsRefused() throws {
    let bob = DeviceKey.generate()
    let mallory = DeviceKey.generate()
    let (initiator, responder) = (EphemeralKey(), EphemeralKey())
    let shared = try #require(initiator.shared(with: responder.publicKey))
    let m1 = SecureChannel.makeHello(ephemeral: initiator.publicKey)
    let nonce = HandoffCrypto.random(24)
    let head =
      [SecureChannel.challengeResponse, SecureChannel.handshakeVersion] + responder.publicKey
      + nonce
    let sealKey = SecureChannel.identityKey(
      .responder, hello: m1, challengeResponse: head, shared: shared, keys: keys)
    let claimed = SecureChannel.identityBytes(PeerIdentity(key: bob.publicKey, name: "bob"))
    let forged =
      claimed + mallory.sign(SecureChannel.signatureResponder + m1 + head + claimed)
    let m2 =
      head
      + HandoffCrypto.seal(
        forged, ad: SecureChannel.labelResponder + m1 + head, nonce: nonce, key: sealKey)
    #expect(
      SecureChannel.openChallengeResponse(m2, hello: m1, shared: shared, keys: keys)
        == .signatureBroken)
    // Signed by bob's own key, the same bytes open as bob.
    let honest = claimed + bob.sign(SecureChannel.signatureResponder + m1 + head + claimed)
    let m2Honest =
      head
      + HandoffCrypto.seal(
        honest, ad: SecureChannel.labelResponder + m1 + head, nonce: nonce, key: sealKey)
    #expect(
      SecureChannel.openChallengeResponse(m2Honest, hello: m1, shared: shared, keys: keys)
        == .identity(PeerIdentity(key: bob.publicKey, name: "bob")))
  }

  /// A recorded M2 of bob's does not serve in another handshake: its seal and
  /// signature are bound to the initiator's fresh ephemeral key.
  @Test func aRecordedIdentityDoesNotServeAnotherHandshake() throws {
    let bob = LocalIdentity(key: DeviceKey.generate(), name: "bob")
    let (initiator, responder) = (EphemeralKey(), EphemeralKey())
    let shared = try #require(initiator.shared(with: responder.publicKey))
    let m1 = SecureChannel.makeHello(ephemeral: initiator.publicKey)
    let m2 = SecureChannel.makeChallengeResponse(
      hello: m1, ephemeral: responder.publicKey, nonce: HandoffCrypto.random(24), shared: shared,
      me: bob, keys: keys)
    #expect(
      SecureChannel.openChallengeResponse(m2, hello: m1, shared: shared, keys: keys).peer
        == bob.peer)
    let another = EphemeralKey()
    let other = SecureChannel.makeHello(ephemeral: another.publicKey)
    let otherShared = try #require(another.shared(with: responder.publicKey))
    #expect(
      SecureChannel.openChallengeResponse(m2, hello: other, shared: otherShared, keys: keys)
        == .sealBroken)
  }

  /// An initiator that holds the group key and claims alice's device id in
  /// M3 (alice's public key, its own signature) is refused by a real engine,
  /// with a message that says what happened, and nothing is exchanged.
  @Test func anEngineRefusesAKeyHolderClaimingAnotherDevice() async throws {
    let bob = try HandoffTestAgent("bob", key: key)
    let alice = DeviceKey.generate()
    let mallory = DeviceKey.generate()
    let (hostile, theirs) = InMemoryMessageChannel.pair()
    async let served = Result(catching: {
      try await bob.engine.runSession(over: theirs, initiator: false, peerAddress: "m")
    })
    let mine = EphemeralKey()
    let m1 = SecureChannel.makeHello(ephemeral: mine.publicKey)
    try await hostile.send(m1)
    let m2 = try #require(try await hostile.receive())
    let shared = try #require(mine.shared(with: Array(m2[SecureChannel.responderEphemeralRange])))
    let sealKey = SecureChannel.identityKey(
      .initiator, hello: m1, challengeResponse: m2, shared: shared, keys: keys)
    let nonce = HandoffCrypto.random(24)
    let head = [SecureChannel.response] + nonce
    let claimed = SecureChannel.identityBytes(PeerIdentity(key: alice.publicKey, name: "alice"))
    let forged =
      claimed + mallory.sign(SecureChannel.signatureInitiator + m1 + m2 + head + claimed)
    try await hostile.send(
      head
        + HandoffCrypto.seal(
          forged, ad: SecureChannel.labelInitiator + m1 + m2 + head, nonce: nonce,
          key: sealKey))
    guard case .failure(let error) = await served else {
      Issue.record("a key holder claiming another device's id was admitted")
      return
    }
    #expect("\(error)".contains("device key's signature does not verify"), "\(error)")
    #expect(try await hostile.receive() == nil)
    let failure = try #require(await bob.engine.status().failures.first)
    #expect(failure.reason.contains("signature does not verify"))
  }

  /// Two honest engines see each other's device ids as derived from their
  /// keys.
  @Test func aSessionProvesEachSidesDeviceKey() async throws {
    let a = try HandoffTestAgent("alice", key: key)
    let b = try HandoffTestAgent("bob", key: key)
    await a.save("x.md", "from alice")
    let (ra, rb) = await runSession(a, b)
    let summaryA = try ra.get()
    let summaryB = try rb.get()
    #expect(summaryA.peerDevice == b.engine.deviceID)
    #expect(summaryB.peerDevice == a.engine.deviceID)
    #expect(await a.engine.me.key.publicKey.deviceID == a.engine.deviceID)
  }
}
