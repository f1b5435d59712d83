import BatonSystem
import CSodium

/// A device's long-term public key: Ed25519 (libsodium `crypto_sign`), 32
/// bytes. The device id is derived from it (`deviceID`), so no other device
/// can claim that id without the secret key (PROTOCOL.md section 2, "Device
/// keys").
public struct DevicePublicKey: Hashable, Sendable, CustomStringConvertible {
  public static let byteCount = 32  // crypto_sign_PUBLICKEYBYTES
  public static let signatureBytes = 64  // crypto_sign_BYTES
  public let bytes: [UInt8]
  /// `u64` little-endian of the first 8 bytes of BLAKE2b-128 keyed with
  /// nothing over `"baton-device-id" || public key`; computed once, since
  /// every version this device makes and every entry it checks asks for it.
  public let deviceID: DeviceID

  /// nil unless `bytes` is 32 bytes whose device id is not zero.
  public init?(bytes: [UInt8]) {
    guard bytes.count == DevicePublicKey.byteCount else { return nil }
    let digest = HandoffCrypto.hash(Array("baton-device-id".utf8) + bytes, length: 16)
    var value: UInt64 = 0
    for byte in digest[0..<8].reversed() { value = value << 8 | UInt64(byte) }
    guard value != 0 else { return nil }
    self.bytes = bytes
    deviceID = DeviceID(rawValue: value)
  }

  /// What a user compares to see who joined: the first 8 bytes of
  /// BLAKE2b-256 over `"baton-fingerprint" || public key` as four groups of
  /// four hex digits (`3f2a-91c0-0b7e-d4a5`).
  public var fingerprint: String {
    let digest = HandoffCrypto.hash(Array("baton-fingerprint".utf8) + bytes, length: 32)
    let hex = Array(digest[0..<8]).hexString
    var groups: [Substring] = []
    var rest = Substring(hex)
    while !rest.isEmpty {
      groups.append(rest.prefix(4))
      rest = rest.dropFirst(4)
    }
    return groups.joined(separator: "-")
  }

  /// `crypto_sign_verify_detached`: whether `signature` is this key's over `message`.
  public func verifies(_ signature: [UInt8], of message: [UInt8]) -> Bool {
    Sodium.ensureInitialized()
    guard signature.count == DevicePublicKey.signatureBytes else { return false }
    return crypto_sign_verify_detached(signature, message, UInt64(message.count), bytes) == 0
  }

  /// The X25519 form of this key (`crypto_sign_ed25519_pk_to_curve25519`),
  /// for sealing secrets to the device; nil for a key that has none.
  public var sealingKey: [UInt8]? {
    Sodium.ensureInitialized()
    var out = [UInt8](repeating: 0, count: 32)
    guard crypto_sign_ed25519_pk_to_curve25519(&out, bytes) == 0 else { return nil }
    return out
  }

  /// `crypto_box_seal` to this device: only the holder of the secret key
  /// opens it (`DeviceKey.openSealed`). nil when the key has no X25519 form.
  public func seal(_ plaintext: [UInt8]) -> [UInt8]? {
    guard let recipient = sealingKey else { return nil }
    var out = [UInt8](repeating: 0, count: plaintext.count + DevicePublicKey.sealOverhead)
    guard crypto_box_seal(&out, plaintext, UInt64(plaintext.count), recipient) == 0 else {
      return nil
    }
    return out
  }

  /// `crypto_box_SEALBYTES`: an ephemeral public key and a tag.
  public static let sealOverhead = 48

  public var description: String { "device key \(fingerprint)" }
}

/// This device's long-term key pair (Ed25519), kept in the state directory
/// (`DeviceKeyFile`). The secret key never leaves the machine; it signs the
/// handshake transcripts, membership records and versions this device makes.
public struct DeviceKey: Sendable {
  public static let seedBytes = 32  // crypto_sign_SEEDBYTES
  /// The 32-byte seed the key pair is made from (what the key file stores).
  public let seed: [UInt8]
  public let publicKey: DevicePublicKey
  /// libsodium's 64-byte secret key (seed || public key).
  private let secret: [UInt8]

  /// The key pair of a 32-byte seed (`crypto_sign_seed_keypair`); nil for a
  /// seed of another size, or one whose device id would be zero.
  public init?(seed: [UInt8]) {
    Sodium.ensureInitialized()
    guard seed.count == DeviceKey.seedBytes else { return nil }
    var pk = [UInt8](repeating: 0, count: DevicePublicKey.byteCount)
    var sk = [UInt8](repeating: 0, count: 64)
    guard crypto_sign_seed_keypair(&pk, &sk, seed) == 0, let key = DevicePublicKey(bytes: pk)
    else { return nil }
    self.seed = seed
    self.secret = sk
    self.publicKey = key
  }

  /// A new key pair from a random seed.
  public static func generate() -> DeviceKey {
    while true {
      if let key = DeviceKey(seed: HandoffCrypto.random(seedBytes)) { return key }
    }
  }

  public var deviceID: DeviceID { publicKey.deviceID }

  /// `crypto_sign_detached`: a 64-byte Ed25519 signature of `message`.
  public func sign(_ message: [UInt8]) -> [UInt8] {
    Sodium.ensureInitialized()
    var signature = [UInt8](repeating: 0, count: DevicePublicKey.signatureBytes)
    var length: UInt64 = 0
    _ = crypto_sign_detached(&signature, &length, message, UInt64(message.count), secret)
    return signature
  }

  /// Opens what `DevicePublicKey.seal` sealed to this device
  /// (`crypto_box_seal_open`); nil when it was sealed to another device or
  /// changed on the way.
  public func openSealed(_ sealed: [UInt8]) -> [UInt8]? {
    Sodium.ensureInitialized()
    guard sealed.count >= DevicePublicKey.sealOverhead, let recipient = publicKey.sealingKey
    else { return nil }
    var x25519Secret = [UInt8](repeating: 0, count: 32)
    defer { HandoffCrypto.wipe(&x25519Secret) }
    guard crypto_sign_ed25519_sk_to_curve25519(&x25519Secret, secret) == 0 else { return nil }
    var out = [UInt8](repeating: 0, count: sealed.count - DevicePublicKey.sealOverhead)
    guard
      crypto_box_seal_open(&out, sealed, UInt64(sealed.count), recipient, x25519Secret) == 0
    else { return nil }
    return out
  }
}
