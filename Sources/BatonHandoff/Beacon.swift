import BatonSystem

/// What a beacon tells a peer holding the group key (PROTOCOL.md, "The beacon").
public struct BeaconContent: Hashable, Sendable, CustomStringConvertible {
  /// The beacon format version (1): the low four bits of the first byte.
  public var version: UInt8
  /// The advertisement is not connectable (PROTOCOL.md 3.3): to link, ask.
  public var closed: Bool
  /// The sender heard a closed keyed peer it has no link with, and asks it
  /// to open (advertise connectably for a while).
  public var asking: Bool
  /// 24 bits of BLAKE2b over the current activity (type, path, version); 0 for none.
  public var activityHash: UInt32
  /// 32 bits of BLAKE2b over the sender's whole index (types, paths, content hashes).
  public var indexDigest: UInt32

  public init(
    version: UInt8 = Beacon.protocolVersion, activityHash: UInt32, indexDigest: UInt32,
    closed: Bool = false, asking: Bool = false
  ) {
    self.version = version & 0x0F
    self.closed = closed
    self.asking = asking
    self.activityHash = activityHash & 0xFF_FFFF
    self.indexDigest = indexDigest
  }

  /// The 8 plaintext bytes: version and flags, activity hash (3 bytes LE),
  /// index digest (4 bytes LE).
  var plaintext: [UInt8] {
    var w = ByteWriter()
    w.u8(version | (closed ? Beacon.closedFlag : 0) | (asking ? Beacon.askingFlag : 0))
    w.raw([UInt8(activityHash & 0xFF), UInt8(activityHash >> 8 & 0xFF), UInt8(activityHash >> 16)])
    w.u32(indexDigest)
    return w.bytes
  }

  package init(plaintext p: [UInt8]) {
    version = p[0] & 0x0F
    closed = p[0] & Beacon.closedFlag != 0
    asking = p[0] & Beacon.askingFlag != 0
    activityHash = UInt32(p[1]) | UInt32(p[2]) << 8 | UInt32(p[3]) << 16
    indexDigest = UInt32(p[4]) | UInt32(p[5]) << 8 | UInt32(p[6]) << 16 | UInt32(p[7]) << 24
  }

  public var description: String {
    "v\(version) activity \(String(activityHash, radix: 16)) index \(String(indexDigest, radix: 16))"
      + (closed ? " closed" : "") + (asking ? " asking" : "")
  }
}

/// The sealed beacon: one legacy advertising payload of exactly 31 bytes.
///
///     02 01 06                      Flags AD: LE General Discoverable, no BR/EDR
///     1B FF FF FF                   Manufacturer Specific AD, length 27, company 0xFFFF
///     r[8]                          random per seal
///     c[8] = XChaCha20(kEnc, r || 0^16) XOR plaintext
///     t[8] = BLAKE2b-128(key kMAC, header[7] || r || c)[0..<8]
///
/// Encrypt-then-MAC from two libsodium primitives, because the smallest
/// libsodium AEAD tag (16 bytes) leaves no room in 24 bytes for a 64-bit nonce
/// and the content. PROTOCOL.md gives the reasoning and test vectors.
public enum Beacon {
  public static let protocolVersion: UInt8 = 1
  /// Flags in the high bits of the first plaintext byte (PROTOCOL.md 3.3).
  /// Agents before them read the whole byte as the version and take the
  /// beacon for another version's (no sessions), which is what a closed
  /// beacon wants of them anyway.
  static let closedFlag: UInt8 = 0x10
  static let askingFlag: UInt8 = 0x20
  public static let size = 31
  /// Flags AD and the Manufacturer Specific AD header with company 0xFFFF.
  public static let header: [UInt8] = [0x02, 0x01, 0x06, 0x1B, 0xFF, 0xFF, 0xFF]
  static let nonceBytes = 8
  static let plaintextBytes = 8
  static let tagBytes = 8

  /// Seals `content` with a fresh random nonce.
  public static func seal(_ content: BeaconContent, keys: HandoffKeys) -> [UInt8] {
    seal(content, keys: keys, nonce: HandoffCrypto.random(nonceBytes))
  }

  /// Seals `content` with a nonce a key holder can resolve to `device`
  /// (PROTOCOL.md 3.3): 5 random bytes, then 3 bytes of keyed hash over the
  /// device id and them, as a resolvable address is made (section 3.1). A
  /// closed beacon goes out from a fresh address at every seal; this is how
  /// a linked peer still knows it is us.
  public static func seal(_ content: BeaconContent, keys: HandoffKeys, device: DeviceID) -> [UInt8] {
    let random = HandoffCrypto.random(5)
    return seal(content, keys: keys, nonce: random + nonceTag(random, device: device, keys: keys))
  }

  /// Whether a beacon's nonce was made by `device` (`seal(_:keys:device:)`);
  /// false for anything else, and for a random nonce but with odds 2^-24.
  public static func resolves(_ data: [UInt8], to device: DeviceID, keys: HandoffKeys) -> Bool {
    guard let body = body(of: data) else { return false }
    return HandoffCrypto.constantTimeEqual(
      nonceTag(Array(body[0..<5]), device: device, keys: keys), Array(body[5..<8]))
  }

  /// BLAKE2b-128(key k_address, u64 device || random[5] || 0xBE)[0..<3]:
  /// the resolvable address's hash (section 3.1) over a longer input with a
  /// closing byte of its own, so the two never hash the same bytes.
  static func nonceTag(_ random: [UInt8], device: DeviceID, keys: HandoffKeys) -> [UInt8] {
    ResolvableAddress.hash(device: device, prand: random + [0xBE], keys: keys)
  }

  /// The 24 bytes after the header of a beacon, exact or inside a list of
  /// AD structures; nil when there is none.
  static func body(of data: [UInt8]) -> [UInt8]? {
    if data.count == size, Array(data.prefix(header.count)) == header {
      return Array(data[header.count...])
    }
    var i = 0
    while i < data.count {
      let length = Int(data[i])
      guard length > 0, i + 1 + length <= data.count else { return nil }
      if length == 27, data[i + 1] == 0xFF, data[i + 2] == 0xFF, data[i + 3] == 0xFF {
        return Array(data[(i + 4)..<(i + 28)])
      }
      i += 1 + length
    }
    return nil
  }

  /// Seals with a given 8-byte nonce (test vectors only; never reuse a nonce).
  static func seal(_ content: BeaconContent, keys: HandoffKeys, nonce: [UInt8]) -> [UInt8] {
    precondition(nonce.count == nonceBytes)
    let cipher = HandoffCrypto.streamXOR(
      content.plaintext, nonce: streamNonce(nonce), key: keys.beaconCipher)
    let tag = mac(nonce + cipher, keys: keys)
    return header + nonce + cipher + tag
  }

  /// Opens an advertising payload: nil unless it is exactly a baton beacon whose
  /// tag verifies under `keys` (another group's beacon, noise, tampering).
  public static func open(_ data: [UInt8], keys: HandoffKeys) -> BeaconContent? {
    guard data.count == size, Array(data.prefix(header.count)) == header else { return nil }
    let body = Array(data[header.count...])
    let nonce = Array(body[0..<8])
    let cipher = Array(body[8..<16])
    let tag = Array(body[16..<24])
    guard HandoffCrypto.constantTimeEqual(tag, mac(nonce + cipher, keys: keys)) else { return nil }
    let plain = HandoffCrypto.streamXOR(cipher, nonce: streamNonce(nonce), key: keys.beaconCipher)
    return BeaconContent(plaintext: plain)
  }

  /// Finds a beacon inside a longer list of AD structures (as a scanner reports
  /// it) by looking for the manufacturer-specific AD with company 0xFFFF.
  public static func open(advertisingData data: [UInt8], keys: HandoffKeys) -> BeaconContent? {
    body(of: data).flatMap { open(header + $0, keys: keys) }
  }

  private static func streamNonce(_ nonce: [UInt8]) -> [UInt8] {
    nonce + [UInt8](repeating: 0, count: 16)
  }

  private static func mac(_ body: [UInt8], keys: HandoffKeys) -> [UInt8] {
    Array(HandoffCrypto.hash(header + body, key: keys.beaconMAC, length: 16).prefix(tagBytes))
  }
}
