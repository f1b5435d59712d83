import BatonSystem
import CSodium

/// The keys a group key yields, each for one purpose (PROTOCOL.md, "Keys").
///
/// Every subkey comes from `crypto_kdf_derive_from_key` (BLAKE2b with the
/// subkey id as salt and an 8-byte context as personalisation), so learning
/// one subkey tells nothing about the group key or the others.
public struct HandoffKeys: Sendable {
  /// Encrypts the beacon (XChaCha20 stream): context `baton-bc`, id 1.
  let beaconCipher: [UInt8]
  /// Authenticates the beacon (keyed BLAKE2b): context `baton-bc`, id 2.
  let beaconMAC: [UInt8]
  /// Seals the handshake identities (XChaCha20-Poly1305): context `baton-au`, id 1.
  let auth: [UInt8]
  /// Keys the session-key derivation (keyed BLAKE2b): context `baton-pl`, id 1.
  let payload: [UInt8]
  /// Keys the hash of resolvable addresses (keyed BLAKE2b): context `baton-ad`, id 1.
  let address: [UInt8]
  /// Keys the index summary's entry fingerprints (keyed BLAKE2b-128):
  /// context `baton-fp`, id 1 (PROTOCOL.md section 6.1).
  let summary: [UInt8]

  public init(groupKey: GroupKey) {
    beaconCipher = HandoffCrypto.deriveSubkey(groupKey.bytes, id: 1, context: "baton-bc")
    beaconMAC = HandoffCrypto.deriveSubkey(groupKey.bytes, id: 2, context: "baton-bc")
    auth = HandoffCrypto.deriveSubkey(groupKey.bytes, id: 1, context: "baton-au")
    payload = HandoffCrypto.deriveSubkey(groupKey.bytes, id: 1, context: "baton-pl")
    address = HandoffCrypto.deriveSubkey(groupKey.bytes, id: 1, context: "baton-ad")
    summary = HandoffCrypto.deriveSubkey(groupKey.bytes, id: 1, context: "baton-fp")
  }
}

/// Thin wrappers over the libsodium primitives the handoff protocol uses.
/// Nothing here is home-made: only libsodium calls and byte shuffling.
package enum HandoffCrypto {
  static let aeadNonceBytes = 24  // crypto_aead_xchacha20poly1305_ietf_NPUBBYTES
  static let aeadTagBytes = 16  // crypto_aead_xchacha20poly1305_ietf_ABYTES

  /// `crypto_kdf_derive_from_key`: a 32-byte subkey for `id` in an 8-byte `context`.
  static func deriveSubkey(_ key: [UInt8], id: UInt64, context: String) -> [UInt8] {
    Sodium.ensureInitialized()
    precondition(key.count == 32 && context.utf8.count == 8, "KDF: 32-byte key, 8-byte context")
    var out = [UInt8](repeating: 0, count: 32)
    let ctx = Array(context.utf8).map { CChar(bitPattern: $0) }
    _ = crypto_kdf_derive_from_key(&out, 32, id, ctx, key)
    return out
  }

  /// `randombytes_buf`: `count` random bytes.
  static func random(_ count: Int) -> [UInt8] {
    Sodium.ensureInitialized()
    var out = [UInt8](repeating: 0, count: count)
    randombytes_buf(&out, count)
    return out
  }

  /// `crypto_generichash` (BLAKE2b), optionally keyed, `length` 16...64 bytes.
  static func hash(_ input: [UInt8], key: [UInt8]? = nil, length: Int = 32) -> [UInt8] {
    Sodium.ensureInitialized()
    var out = [UInt8](repeating: 0, count: length)
    if let key {
      _ = crypto_generichash(&out, length, input, UInt64(input.count), key, key.count)
    } else {
      _ = crypto_generichash(&out, length, input, UInt64(input.count), nil, 0)
    }
    return out
  }

  /// `crypto_stream_xchacha20_xor`: encrypts or decrypts (the same operation).
  static func streamXOR(_ input: [UInt8], nonce: [UInt8], key: [UInt8]) -> [UInt8] {
    Sodium.ensureInitialized()
    precondition(nonce.count == 24 && key.count == 32)
    var out = [UInt8](repeating: 0, count: input.count)
    _ = crypto_stream_xchacha20_xor(&out, input, UInt64(input.count), nonce, key)
    return out
  }

  /// `sodium_memcmp`: constant-time equality of two byte strings of equal length.
  static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    guard a.count == b.count else { return false }
    if a.isEmpty { return true }
    return sodium_memcmp(a, b, a.count) == 0
  }

  /// X25519 key sizes (`crypto_scalarmult_BYTES`, `crypto_scalarmult_SCALARBYTES`).
  static let x25519Bytes = 32

  /// `crypto_scalarmult_base`: the X25519 public key of a 32-byte secret key
  /// (clamped by libsodium, as RFC 7748 says).
  package static func x25519PublicKey(secret: [UInt8]) -> [UInt8] {
    Sodium.ensureInitialized()
    precondition(secret.count == x25519Bytes)
    var out = [UInt8](repeating: 0, count: x25519Bytes)
    _ = crypto_scalarmult_base(&out, secret)
    return out
  }

  /// `crypto_scalarmult`: the X25519 shared secret of our secret key and the
  /// peer's public key; nil when the peer's key is not 32 bytes or is a
  /// low-order point (libsodium refuses an all-zero result).
  package static func x25519(secret: [UInt8], peerPublic: [UInt8]) -> [UInt8]? {
    Sodium.ensureInitialized()
    guard secret.count == x25519Bytes, peerPublic.count == x25519Bytes else { return nil }
    var out = [UInt8](repeating: 0, count: x25519Bytes)
    guard crypto_scalarmult(&out, secret, peerPublic) == 0 else { return nil }
    return out
  }

  /// `sodium_memzero`: overwrites secret bytes that are no longer needed.
  static func wipe(_ bytes: inout [UInt8]) {
    bytes.withUnsafeMutableBytes { sodium_memzero($0.baseAddress, $0.count) }
  }

  /// Zeroes a key that may be absent, and leaves it absent.
  static func wipe(_ bytes: inout [UInt8]?) {
    guard var held = bytes else { return }
    bytes = nil  // `held` now owns the buffer alone, so it is zeroed in place
    wipe(&held)
  }

  /// `crypto_aead_xchacha20poly1305_ietf_encrypt`: ciphertext followed by the 16-byte tag.
  static func seal(_ plaintext: [UInt8], ad: [UInt8], nonce: [UInt8], key: [UInt8]) -> [UInt8] {
    Sodium.ensureInitialized()
    precondition(nonce.count == aeadNonceBytes && key.count == 32)
    var out = [UInt8](repeating: 0, count: plaintext.count + aeadTagBytes)
    var outLength: UInt64 = 0
    _ = crypto_aead_xchacha20poly1305_ietf_encrypt(
      &out, &outLength, plaintext, UInt64(plaintext.count), ad, UInt64(ad.count), nil, nonce, key)
    return out
  }

  /// `crypto_aead_xchacha20poly1305_ietf_decrypt`: the plaintext, or nil when the
  /// tag does not verify (wrong key, wrong associated data, tampered bytes).
  static func open(_ sealed: [UInt8], ad: [UInt8], nonce: [UInt8], key: [UInt8]) -> [UInt8]? {
    Sodium.ensureInitialized()
    guard sealed.count >= aeadTagBytes, nonce.count == aeadNonceBytes, key.count == 32 else {
      return nil
    }
    var out = [UInt8](repeating: 0, count: sealed.count - aeadTagBytes)
    var outLength: UInt64 = 0
    let status = crypto_aead_xchacha20poly1305_ietf_decrypt(
      &out, &outLength, nil, sealed, UInt64(sealed.count), ad, UInt64(ad.count), nonce, key)
    guard status == 0 else { return nil }
    return Array(out.prefix(Int(outLength)))
  }
}

extension Array where Element == UInt8 {
  /// Lower-case hex.
  var hexString: String {
    let digits = Array("0123456789abcdef".utf8)
    var out = [UInt8]()
    out.reserveCapacity(count * 2)
    for b in self {
      out.append(digits[Int(b >> 4)])
      out.append(digits[Int(b & 15)])
    }
    return String(decoding: out, as: UTF8.self)
  }

  /// Parses lower- or upper-case hex; nil on odd length or a non-hex digit.
  init?(hexString: String) {
    let chars = Array(hexString.utf8)
    guard chars.count % 2 == 0 else { return nil }
    func nibble(_ c: UInt8) -> UInt8? {
      switch c {
      case 48...57: c - 48
      case 97...102: c - 87
      case 65...70: c - 55
      default: nil
      }
    }
    var out = [UInt8]()
    out.reserveCapacity(chars.count / 2)
    var i = 0
    while i < chars.count {
      guard let hi = nibble(chars[i]), let lo = nibble(chars[i + 1]) else { return nil }
      out.append(hi << 4 | lo)
      i += 2
    }
    self = out
  }
}
