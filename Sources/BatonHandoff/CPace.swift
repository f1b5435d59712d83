import BatonSystem
import CSodium

/// One side of a CPace exchange on ristretto255 with SHA-512
/// (draft-irtf-cfrg-cpace, suite CPACE-RISTR255-SHA512), in
/// initiator-responder mode: the primitive that pairing by a short code uses
/// (PROTOCOL.md, "Pairing primitive: CPace").
///
/// Both sides derive a generator `g` from the password (the code's bytes),
/// the channel identifier `CI` and the session id `sid`; each sends
/// `Y = y*g` for a fresh secret scalar `y` with its associated data; each
/// computes `K = y*Y'` from the other's share and the intermediate session
/// key `ISK = SHA-512(lv_cat("CPaceRistretto255_ISK", sid, K) ||
/// transcript_ir(Ya, ADa, Yb, ADb))`. Equal passwords give equal ISKs; an
/// observer learns nothing that allows an offline guess of the password.
///
/// Built from libsodium's `crypto_core_ristretto255_*`,
/// `crypto_scalarmult_ristretto255` and `crypto_hash_sha512`. The scalar is
/// wiped (`sodium_memzero`) once the key is computed, or when the value goes.
/// A value computes one key: a second `finish` is refused.
public final class CPace {
  public enum Role: Sendable { case initiator, responder }

  /// What went wrong, said for the pairing layer above to report.
  public enum Failure: Error, CustomStringConvertible, Equatable, Sendable {
    /// The other side's share is not 32 bytes.
    case shareLength(Int)
    /// The other side's share is not the encoding of a ristretto255 element.
    case shareNotAnElement
    /// The other side's share is the identity element (abort, per the draft).
    case shareIsIdentity
    /// The product of the scalar and a share is the identity element.
    case identityResult
    /// The hash of the password and session made no usable generator.
    case noGenerator
    /// `finish` was already called: one exchange per value.
    case alreadyFinished

    public var description: String {
      switch self {
      case .shareLength(let count):
        "the peer's CPace share is \(count) bytes, not \(CPace.elementBytes); the pairing is aborted, start it again"
      case .shareNotAnElement:
        "the peer's CPace share is not a ristretto255 element; the pairing is aborted, start it again"
      case .shareIsIdentity:
        "the peer's CPace share is the identity element (a hostile or broken peer); the pairing is aborted"
      case .identityResult:
        "the CPace shared point is the identity element; the pairing is aborted, start it again"
      case .noGenerator:
        "the CPace generator for this code and session is unusable; start the pairing again"
      case .alreadyFinished:
        "this CPace exchange already produced its key; start a new one"
      }
    }
  }

  public static let elementBytes = 32
  public static let scalarBytes = 32
  public static let iskBytes = 64
  /// SHA-512's input block: the generator string is padded to fill it.
  static let hashBlockBytes = 128
  static let dsi = Array("CPaceRistretto255".utf8)
  static let dsiISK = Array("CPaceRistretto255_ISK".utf8)

  public let role: Role
  /// This side's share, `Ya` (initiator) or `Yb` (responder), to send.
  public let share: [UInt8]
  /// This side's associated data, sent with the share.
  public let associatedData: [UInt8]
  let sid: [UInt8]
  private var scalar: [UInt8]
  private var finished = false

  /// Starts an exchange with a scalar from libsodium's random
  /// (`crypto_core_ristretto255_scalar_random`).
  public convenience init(
    role: Role, password: [UInt8], sid: [UInt8], channel: [UInt8], associatedData: [UInt8]
  ) throws(Failure) {
    Sodium.ensureInitialized()
    var y = [UInt8](repeating: 0, count: CPace.scalarBytes)
    crypto_core_ristretto255_scalar_random(&y)
    defer { HandoffCrypto.wipe(&y) }
    try self.init(
      role: role, password: password, sid: sid, channel: channel, associatedData: associatedData,
      scalar: y)
  }

  /// Starts an exchange with a given scalar (32 bytes, little-endian): for
  /// test vectors only.
  init(
    role: Role, password: [UInt8], sid: [UInt8], channel: [UInt8], associatedData: [UInt8],
    scalar: [UInt8]
  ) throws(Failure) {
    Sodium.ensureInitialized()
    precondition(scalar.count == CPace.scalarBytes, "a CPace scalar is 32 bytes")
    self.role = role
    self.sid = sid
    self.associatedData = associatedData
    self.scalar = scalar
    var g = try CPace.generator(password: password, channel: channel, sid: sid)
    defer { HandoffCrypto.wipe(&g) }
    share = try CPace.multiply(scalar, g)
  }

  deinit { HandoffCrypto.wipe(&scalar) }

  /// From the other side's share and associated data, the 64-byte ISK.
  /// Refuses a share that is not a valid, non-identity element; the scalar is
  /// wiped whether or not it succeeds.
  public func finish(peerShare: [UInt8], peerAssociatedData: [UInt8]) throws(Failure) -> [UInt8] {
    guard !finished else { throw .alreadyFinished }
    finished = true
    defer { HandoffCrypto.wipe(&scalar) }
    try CPace.check(share: peerShare)
    var k = try CPace.multiply(scalar, peerShare)
    defer { HandoffCrypto.wipe(&k) }
    let transcript =
      switch role {
      case .initiator:
        CPace.transcriptIR(ya: share, adA: associatedData, yb: peerShare, adB: peerAssociatedData)
      case .responder:
        CPace.transcriptIR(ya: peerShare, adA: peerAssociatedData, yb: share, adB: associatedData)
      }
    var input = CPace.lvCat([CPace.dsiISK, sid, k]) + transcript
    defer { HandoffCrypto.wipe(&input) }
    return CPace.sha512(input)
  }

  // MARK: The draft's functions

  /// `prepend_len`: the LEB128 encoding of the length, then the bytes.
  static func prependLength(_ data: [UInt8]) -> [UInt8] {
    var out: [UInt8] = []
    var length = UInt(data.count)
    repeat {
      var byte = UInt8(length & 0x7f)
      length >>= 7
      if length != 0 { byte |= 0x80 }
      out.append(byte)
    } while length != 0
    return out + data
  }

  /// `lv_cat`: each argument with its length prepended, concatenated.
  static func lvCat(_ parts: [[UInt8]]) -> [UInt8] {
    parts.flatMap(prependLength)
  }

  /// `generator_string(DSI, PRS, CI, sid, 128)`: the DSI and the password,
  /// zero-padded to fill SHA-512's first input block, then CI and sid.
  static func generatorString(password: [UInt8], channel: [UInt8], sid: [UInt8]) -> [UInt8] {
    let used = 1 &+ prependLength(password).count &+ prependLength(dsi).count
    let padding = used < hashBlockBytes ? hashBlockBytes &- used : 0
    return lvCat([dsi, password, [UInt8](repeating: 0, count: padding), channel, sid])
  }

  /// `calculate_generator`: the element of `crypto_core_ristretto255_from_hash`
  /// (RFC 9496's one-way map) on SHA-512 of the generator string.
  static func generator(password: [UInt8], channel: [UInt8], sid: [UInt8]) throws(Failure)
    -> [UInt8]
  {
    Sodium.ensureInitialized()
    var string = generatorString(password: password, channel: channel, sid: sid)
    var hash = sha512(string)
    defer {
      HandoffCrypto.wipe(&string)
      HandoffCrypto.wipe(&hash)
    }
    var g = [UInt8](repeating: 0, count: elementBytes)
    guard crypto_core_ristretto255_from_hash(&g, hash) == 0,
      sodium_is_zero(g, elementBytes) == 0
    else { throw .noGenerator }
    return g
  }

  /// `transcript_ir(Ya, ADa, Yb, ADb)`: `lv_cat(Ya, ADa) || lv_cat(Yb, ADb)`.
  static func transcriptIR(ya: [UInt8], adA: [UInt8], yb: [UInt8], adB: [UInt8]) -> [UInt8] {
    lvCat([ya, adA]) + lvCat([yb, adB])
  }

  /// A share from outside must be 32 bytes, a canonical ristretto255
  /// encoding and not the identity element.
  static func check(share: [UInt8]) throws(Failure) {
    guard share.count == elementBytes else { throw .shareLength(share.count) }
    guard sodium_is_zero(share, elementBytes) == 0 else { throw .shareIsIdentity }
    guard crypto_core_ristretto255_is_valid_point(share) == 1 else { throw .shareNotAnElement }
  }

  /// `scalar_mult_vfy`: `crypto_scalarmult_ristretto255`, which decodes the
  /// element and refuses an identity result.
  static func multiply(_ scalar: [UInt8], _ element: [UInt8]) throws(Failure) -> [UInt8] {
    guard element.count == elementBytes else { throw .shareLength(element.count) }
    var out = [UInt8](repeating: 0, count: elementBytes)
    guard crypto_scalarmult_ristretto255(&out, scalar, element) == 0 else {
      throw crypto_core_ristretto255_is_valid_point(element) == 1
        ? .identityResult : .shareNotAnElement
    }
    return out
  }

  /// `crypto_hash_sha512`.
  static func sha512(_ input: [UInt8]) -> [UInt8] {
    var out = [UInt8](repeating: 0, count: Int(crypto_hash_sha512_BYTES))
    _ = crypto_hash_sha512(&out, input, UInt64(input.count))
    return out
  }
}
