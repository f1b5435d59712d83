@testable import BatonHandoff

/// One side's ephemeral X25519 key pair, for handshakes a test drives by hand
/// (PROTOCOL.md section 4).
struct EphemeralKey {
  let secret: [UInt8]
  let publicKey: [UInt8]

  init(secret: [UInt8] = HandoffCrypto.random(HandoffCrypto.x25519Bytes)) {
    self.secret = secret
    publicKey = HandoffCrypto.x25519PublicKey(secret: secret)
  }

  /// The secret whose 32 bytes are all `byte` (the vectors' keys).
  init(filledWith byte: UInt8) {
    self.init(secret: [UInt8](repeating: byte, count: HandoffCrypto.x25519Bytes))
  }

  /// The X25519 secret with a peer's public key; nil for a low-order point.
  func shared(with peer: [UInt8]) -> [UInt8]? {
    HandoffCrypto.x25519(secret: secret, peerPublic: peer)
  }
}

extension SecureChannel {
  /// M2 as a responder driven by hand sends it for `hello`: sealed with a
  /// fresh ephemeral key (or `ephemeral`); nil if the hello's key is a
  /// low-order point.
  static func challengeResponse(
    to hello: [UInt8], me: LocalIdentity, keys: HandoffKeys,
    ephemeral: EphemeralKey = EphemeralKey()
  ) -> [UInt8]? {
    guard hello.count == helloBytes,
      let shared = ephemeral.shared(with: Array(hello[initiatorEphemeralRange]))
    else { return nil }
    return makeChallengeResponse(
      hello: hello, ephemeral: ephemeral.publicKey, nonce: HandoffCrypto.random(24),
      shared: shared, me: me, keys: keys)
  }
}
