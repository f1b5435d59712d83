import BatonSystem

/// The bytes of the pairing exchange (PROTOCOL.md section 14): the five
/// messages, the abort, CPace's inputs and the keys derived from its ISK.
/// Only encoding and decoding here; `PairingMember` and `PairingNewcomer`
/// decide.
public enum PairingMessage {
  public static let version: UInt8 = 1
  static let hello: UInt8 = 0x21  // P1
  static let reply: UInt8 = 0x22  // P2
  static let confirm: UInt8 = 0x23  // P3
  static let enrolment: UInt8 = 0x24  // P4
  static let acknowledgement: UInt8 = 0x25  // P5
  static let abort: UInt8 = 0x2f

  static let sidBytes = 16
  static let tagBytes = 32
  static let maxNameBytes = 64
  /// The smallest channel message a pairing runs over (section 9's).
  public static let minimumMessageSize = 200
  /// The most enrolment bytes one pairing carries.
  public static let maxEnrolmentBytes = 256 << 10
  /// P4's header: kind, `u16` index, `u16` count.
  static let partHeaderBytes = 5

  /// CPace's channel identifier: `"baton-pair-1" || u8 slot`.
  static func channel(slot: UInt8) -> [UInt8] { Array("baton-pair-1".utf8) + [slot] }

  /// A side's CPace associated data: its device public key, then its name
  /// as a `string` (1 to 64 bytes of UTF-8).
  static func associatedData(_ identity: PairingIdentity) -> [UInt8] {
    var w = ByteWriter()
    w.raw(identity.key.bytes)
    w.string(identity.name, max: maxNameBytes)
    return w.bytes
  }

  static func readIdentity(_ r: inout WireReader) throws(WireError) -> PairingIdentity {
    guard let key = DevicePublicKey(bytes: try r.raw(DevicePublicKey.byteCount)) else {
      throw WireError("the device key is not a usable Ed25519 public key")
    }
    let name = try r.string(max: maxNameBytes)
    guard !name.isEmpty else { throw WireError("the device name is empty") }
    return PairingIdentity(name: name, key: key)
  }

  // MARK: Keys from the ISK

  /// `BLAKE2b-256(key ISK, label)`.
  static func key(_ isk: [UInt8], _ label: String) -> [UInt8] {
    HandoffCrypto.hash(Array(label.utf8), key: isk, length: 32)
  }

  struct Keys {
    let confirmMember: [UInt8]
    let confirmNewcomer: [UInt8]
    let enrol: [UInt8]
    let acknowledge: [UInt8]

    init(isk: [UInt8]) {
      confirmMember = PairingMessage.key(isk, "baton-pair-confirm-member")
      confirmNewcomer = PairingMessage.key(isk, "baton-pair-confirm-newcomer")
      enrol = PairingMessage.key(isk, "baton-pair-enrol")
      acknowledge = PairingMessage.key(isk, "baton-pair-ack")
    }
  }

  /// The member's tag: `BLAKE2b-256(key k_confirm_m, P1 || P2 before its tag)`.
  static func memberTag(_ keys: Keys, p1: [UInt8], p2Head: [UInt8]) -> [UInt8] {
    HandoffCrypto.hash(p1 + p2Head, key: keys.confirmMember, length: tagBytes)
  }

  /// The newcomer's tag: `BLAKE2b-256(key k_confirm_n, P1 || P2)`.
  static func newcomerTag(_ keys: Keys, p1: [UInt8], p2: [UInt8]) -> [UInt8] {
    HandoffCrypto.hash(p1 + p2, key: keys.confirmNewcomer, length: tagBytes)
  }

  // MARK: Messages

  /// P1: `0x21, u8 version, u8 slot, sid[16], Ya[32], ADa`.
  static func makeHello(slot: UInt8, sid: [UInt8], share: [UInt8], ad: [UInt8]) -> [UInt8] {
    [hello, version, slot] + sid + share + ad
  }

  struct Hello {
    let slot: UInt8
    let sid: [UInt8]
    let share: [UInt8]
    let identity: PairingIdentity
    let ad: [UInt8]
  }

  /// The version byte of a message that starts as P1 or P2 does, if any.
  static func versionOf(_ message: [UInt8], kind: UInt8) -> UInt8? {
    message.count >= 2 && message[0] == kind ? message[1] : nil
  }

  static func readHello(_ m: [UInt8]) throws(WireError) -> Hello {
    var r = WireReader(m)
    guard try r.u8() == hello else { throw WireError("it is not a P1 (kind \(m[0]))") }
    guard try r.u8() == version else { throw WireError("pairing version \(m[1])") }
    let slot = try r.u8()
    let sid = try r.raw(sidBytes)
    let share = try r.raw(CPace.elementBytes)
    let adStart = r.offset
    let identity = try readIdentity(&r)
    try r.expectEnd()
    return Hello(slot: slot, sid: sid, share: share, identity: identity, ad: Array(m[adStart...]))
  }

  /// P2: `0x22, u8 version, Yb[32], ADb, tag_m[32]`; `head` is all but the tag.
  static func makeReplyHead(share: [UInt8], ad: [UInt8]) -> [UInt8] {
    [reply, version] + share + ad
  }

  struct Reply {
    let share: [UInt8]
    let identity: PairingIdentity
    let ad: [UInt8]
    let head: [UInt8]
    let tag: [UInt8]
  }

  static func readReply(_ m: [UInt8]) throws(WireError) -> Reply {
    guard m.count > tagBytes else {
      throw WireError("\(m.count) bytes, shorter than its tag")
    }
    let head = Array(m[..<(m.count - tagBytes)])
    var r = WireReader(head)
    guard try r.u8() == reply else { throw WireError("it is not a P2 (kind \(m[0]))") }
    guard try r.u8() == version else { throw WireError("pairing version \(m[1])") }
    let share = try r.raw(CPace.elementBytes)
    let adStart = r.offset
    let identity = try readIdentity(&r)
    try r.expectEnd()
    return Reply(
      share: share, identity: identity, ad: Array(head[adStart...]), head: head,
      tag: Array(m[(m.count - tagBytes)...]))
  }

  /// P3: `0x23, tag_n[32]`.
  static func makeConfirm(tag: [UInt8]) -> [UInt8] { [confirm] + tag }

  static func readConfirm(_ m: [UInt8]) throws(WireError) -> [UInt8] {
    guard m.first == confirm else { throw WireError("it is not a P3 (kind \(m.first ?? 0))") }
    guard m.count == 1 + tagBytes else {
      throw WireError("\(m.count) bytes, not \(1 + tagBytes)")
    }
    return Array(m[1...])
  }

  /// P4 part `index` of `count`: `0x24, u16 index, u16 count, seal(k_enrol,
  /// nonce = u16 index || u16 count || 0^20, ad = the 5 header bytes, part)`.
  static func makeEnrolmentPart(_ part: [UInt8], index: UInt16, count: UInt16, key: [UInt8])
    -> [UInt8]
  {
    var w = ByteWriter()
    w.u8(enrolment)
    w.u16(index)
    w.u16(count)
    let head = w.bytes
    return head + HandoffCrypto.seal(part, ad: head, nonce: partNonce(head), key: key)
  }

  static func partNonce(_ head: [UInt8]) -> [UInt8] {
    Array(head[1...]) + [UInt8](repeating: 0, count: HandoffCrypto.aeadNonceBytes - 4)
  }

  /// The enrolment as P4 parts of at most `messageSize` bytes each.
  static func enrolmentParts(_ enrolment: [UInt8], key: [UInt8], messageSize: Int) -> [[UInt8]] {
    let room = max(1, messageSize - partHeaderBytes - HandoffCrypto.aeadTagBytes)
    var pieces: [[UInt8]] = []
    var start = 0
    repeat {
      let end = min(enrolment.count, start + room)
      pieces.append(Array(enrolment[start..<end]))
      start = end
    } while start < enrolment.count
    let count = UInt16(clamping: pieces.count)
    return pieces.enumerated().map {
      makeEnrolmentPart($0.element, index: UInt16(clamping: $0.offset), count: count, key: key)
    }
  }

  /// One P4 part's index, count and plaintext; nil when it does not open.
  static func readEnrolmentPart(_ m: [UInt8], key: [UInt8]) throws(WireError)
    -> (index: UInt16, count: UInt16, part: [UInt8])
  {
    var r = WireReader(m)
    guard try r.u8() == enrolment else { throw WireError("it is not a P4 (kind \(m[0]))") }
    let index = try r.u16()
    let count = try r.u16()
    let head = Array(m[..<partHeaderBytes])
    guard count > 0, index < count else {
      throw WireError("part \(index) of \(count)")
    }
    guard
      let part = HandoffCrypto.open(
        Array(m[partHeaderBytes...]), ad: head, nonce: partNonce(head), key: key)
    else { throw WireError("part \(index) does not open under the pairing key") }
    return (index, count, part)
  }

  /// P5: `0x25, seal(k_ack, nonce 0^24, ad = 0x25, BLAKE2b-256(enrolment))`.
  static func makeAcknowledgement(enrolment: [UInt8], key: [UInt8]) -> [UInt8] {
    [acknowledgement]
      + HandoffCrypto.seal(
        HandoffCrypto.hash(enrolment, length: 32), ad: [acknowledgement],
        nonce: [UInt8](repeating: 0, count: HandoffCrypto.aeadNonceBytes), key: key)
  }

  static func readAcknowledgement(_ m: [UInt8], key: [UInt8]) throws(WireError) -> [UInt8] {
    guard m.first == acknowledgement else {
      throw WireError("it is not a P5 (kind \(m.first ?? 0))")
    }
    guard
      let digest = HandoffCrypto.open(
        Array(m[1...]), ad: [acknowledgement],
        nonce: [UInt8](repeating: 0, count: HandoffCrypto.aeadNonceBytes), key: key),
      digest.count == 32
    else { throw WireError("it does not open under the pairing key") }
    return digest
  }

  // MARK: Abort

  /// Why a side aborts, in `ABORT = 0x2f, u8 reason, u8 detail`. Not
  /// authenticated: it only explains a failure the receiver reports anyway.
  enum AbortReason: UInt8 {
    case wrongCode = 1
    case codeInUse = 2
    case codeSpent = 3
    case codeExpired = 4  // detail: the code's lifetime in minutes
    case wrongSlot = 5  // detail: the member's slot
    case unsupportedVersion = 6  // detail: the sender's version
    case malformed = 7
    case refused = 8
  }

  static func makeAbort(_ reason: AbortReason, detail: UInt8 = 0) -> [UInt8] {
    [abort, reason.rawValue, detail]
  }

  /// The abort `error` sends, if the other side should hear of it.
  static func abort(for error: PairingError) -> [UInt8]? {
    switch error {
    case .wrongCode: makeAbort(.wrongCode)
    case .codeInUse: makeAbort(.codeInUse)
    case .codeSpent: makeAbort(.codeSpent)
    case .codeExpired(let minutes, _): makeAbort(.codeExpired, detail: UInt8(clamping: minutes))
    case .wrongSlot(let code, _): makeAbort(.wrongSlot, detail: code)
    case .unsupportedVersion: makeAbort(.unsupportedVersion, detail: version)
    case .malformed, .share: makeAbort(.malformed)
    case .enrolmentRefused, .enrolmentTooLarge: makeAbort(.refused)
    case .peerAborted, .refusedByMember, .interrupted, .timeout, .channelTooSmall, .channel: nil
    }
  }

  /// What an abort from the peer means for `role`; nil if `m` is not one.
  /// Whether `m` is a pairing's first message (P1, of any version): what a
  /// member showing a code tells from a handoff's M1 on the same PSM.
  public static func isHello(_ m: [UInt8]) -> Bool { m.first == hello }

  static func readAbort(_ m: [UInt8], role: PairingRole) -> PairingError? {
    guard m.first == abort else { return nil }
    guard m.count == 3, let reason = AbortReason(rawValue: m[1]) else {
      return .peerAborted(reason: "for a reason this version does not know", role)
    }
    let detail = m[2]
    switch reason {
    case .wrongCode: return .wrongCode(role)
    case .codeInUse: return .codeInUse
    case .codeSpent: return .codeSpent
    case .codeExpired: return .codeExpired(minutes: max(1, Int(detail)), role)
    case .wrongSlot:
      return .peerAborted(
        reason: "its code has slot \(detail) (check the first two digits of the code)", role)
    case .unsupportedVersion: return .unsupportedVersion(detail, role)
    case .malformed: return .peerAborted(reason: "our message did not make sense to it", role)
    case .refused: return .refusedByMember
    }
  }
}
