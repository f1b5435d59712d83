import BatonSystem

/// One signed change to a group's membership (PROTOCOL.md section 13): a
/// device founding a key-file group, a member adding a device, a member
/// removing one, or a member moving the group to a new epoch secret.
///
/// Encoded as `u8 kind || body || signature[64]`; the signature is the
/// signer's device key (Ed25519) over `"baton-member-1" || u8 kind || body`.
public struct MembershipRecord: Hashable, Sendable, CustomStringConvertible {
  public enum Kind: UInt8, Sendable {
    case found = 1
    case add = 2
    case remove = 3
    case rekey = 4
  }

  /// The new epoch's secret sealed to one member (`DevicePublicKey.seal`).
  public struct SealedSecret: Hashable, Sendable {
    public let device: DeviceID
    public let sealed: [UInt8]
    public init(device: DeviceID, sealed: [UInt8]) {
      self.device = device
      self.sealed = sealed
    }
  }

  public enum Body: Hashable, Sendable {
    /// A key-file agent declares itself a member of epoch 0 (self-signed).
    case found(subject: DevicePublicKey, name: String, wallTime: UInt64)
    /// `sponsor`, a member of `epoch`, adds `subject` to that epoch.
    case add(
      subject: DevicePublicKey, name: String, sponsor: DeviceID, epoch: UInt32, wallTime: UInt64)
    /// `signer`, a member of `epoch`, removes `subject` for good.
    case remove(subject: DeviceID, signer: DeviceID, epoch: UInt32, wallTime: UInt64)
    /// `signer`, a member of `epoch - 1`, starts `epoch` with a new secret
    /// sealed to each of its members (sorted by device id).
    case rekey(epoch: UInt32, signer: DeviceID, secrets: [SealedSecret])
  }

  /// Limits (PROTOCOL.md section 13): a name is at most 64 bytes, a rekey
  /// lists at most 256 members, and a sealed secret is exactly 32 + 48 bytes.
  public static let maxNameBytes = 64
  public static let maxMembers = 256
  public static let secretBytes = 32
  public static let sealedBytes = secretBytes + DevicePublicKey.sealOverhead
  /// The largest encoding: a rekey listing 256 members.
  public static let maxEncodedBytes = 1 + 4 + 8 + 2 + maxMembers * (8 + 4 + sealedBytes) + 64
  static let domain = Array("baton-member-1".utf8)

  public let body: Body
  public let signature: [UInt8]

  /// A record as read from outside; `signature` is not checked here (see
  /// `verifies(with:)`).
  public init(body: Body, signature: [UInt8]) {
    self.body = body
    self.signature = signature
  }

  /// `body` signed by `key`. The caller makes sure that `key` is the
  /// record's signer (the subject for `found`).
  public static func signed(_ body: Body, by key: DeviceKey) -> MembershipRecord {
    let unsigned = MembershipRecord(body: body, signature: [])
    return MembershipRecord(body: body, signature: key.sign(unsigned.signedBytes))
  }

  public var kind: Kind {
    switch body {
    case .found: .found
    case .add: .add
    case .remove: .remove
    case .rekey: .rekey
    }
  }

  /// The device whose key signs this record.
  public var signer: DeviceID {
    switch body {
    case .found(let subject, _, _): subject.deviceID
    case .add(_, _, let sponsor, _, _): sponsor
    case .remove(_, let signer, _, _): signer
    case .rekey(_, let signer, _): signer
    }
  }

  /// The public key the record carries (the subject of `found` and `add`).
  public var carriedKey: DevicePublicKey? {
    switch body {
    case .found(let subject, _, _), .add(let subject, _, _, _, _): subject
    case .remove, .rekey: nil
    }
  }

  /// Whether this rekey lists `device` or was signed by it (false for other kinds).
  func names(_ device: DeviceID) -> Bool {
    guard case .rekey(_, let signer, let secrets) = body else { return false }
    return signer == device || secrets.contains { $0.device == device }
  }

  /// `u8 kind || body`.
  var kindAndBody: [UInt8] {
    var w = ByteWriter()
    w.u8(kind.rawValue)
    switch body {
    case .found(let subject, let name, let wallTime):
      w.raw(subject.bytes)
      w.string(name, max: Self.maxNameBytes)
      w.u64(wallTime)
    case .add(let subject, let name, let sponsor, let epoch, let wallTime):
      w.raw(subject.bytes)
      w.string(name, max: Self.maxNameBytes)
      w.u64(sponsor.rawValue)
      w.u32(epoch)
      w.u64(wallTime)
    case .remove(let subject, let signer, let epoch, let wallTime):
      w.u64(subject.rawValue)
      w.u64(signer.rawValue)
      w.u32(epoch)
      w.u64(wallTime)
    case .rekey(let epoch, let signer, let secrets):
      w.u32(epoch)
      w.u64(signer.rawValue)
      w.u16(UInt16(clamping: secrets.count))
      for entry in secrets.prefix(Int(UInt16.max)) {
        w.u64(entry.device.rawValue)
        w.blob(entry.sealed)
      }
    }
    return w.bytes
  }

  /// What the signature covers: `"baton-member-1" || u8 kind || body`.
  public var signedBytes: [UInt8] { Self.domain + kindAndBody }

  /// `u8 kind || body || signature`.
  public var encoded: [UInt8] { kindAndBody + signature }

  /// BLAKE2b-256 of `encoded`: the record's identity in a set, and what
  /// breaks a tie between two rekeys to the same epoch (the lowest wins).
  public var digest: [UInt8] { HandoffCrypto.hash(encoded, length: 32) }

  /// Whether the signature is `key`'s over `signedBytes`.
  public func verifies(with key: DevicePublicKey) -> Bool {
    key.verifies(signature, of: signedBytes)
  }

  /// Decodes one record, refusing unknown kinds, bad lengths, keys that are
  /// not device keys, zero ids, names over 64 bytes, unsorted or oversized
  /// rekey lists and trailing bytes.
  public init(decoding bytes: [UInt8]) throws(MembershipDecodeError) {
    guard bytes.count <= Self.maxEncodedBytes else {
      throw MembershipDecodeError(
        "record of \(bytes.count) bytes exceeds the limit of \(Self.maxEncodedBytes)")
    }
    var r = ByteReader<MembershipDecodeError>(bytes, context: "membership record")
    let rawKind = try r.u8()
    guard let kind = Kind(rawValue: rawKind) else {
      throw MembershipDecodeError("unknown record kind \(rawKind) (known: 1 to 4)")
    }
    func key() throws(MembershipDecodeError) -> DevicePublicKey {
      guard let key = DevicePublicKey(bytes: try r.take(DevicePublicKey.byteCount)) else {
        throw MembershipDecodeError("subject key is not a device key (its device id is 0)")
      }
      return key
    }
    func id(_ what: String) throws(MembershipDecodeError) -> DeviceID {
      let value = try r.u64()
      guard value != 0 else { throw MembershipDecodeError("\(what) device id is 0") }
      return DeviceID(rawValue: value)
    }
    func name() throws(MembershipDecodeError) -> String {
      let count = Int(try r.u16())
      guard count <= Self.maxNameBytes else {
        throw MembershipDecodeError(
          "device name of \(count) bytes exceeds \(Self.maxNameBytes)")
      }
      guard let s = String(validating: try r.take(count), as: UTF8.self) else {
        throw MembershipDecodeError("device name is not UTF-8")
      }
      return s
    }
    let body: Body
    switch kind {
    case .found:
      let subject = try key()
      body = .found(subject: subject, name: try name(), wallTime: try r.u64())
    case .add:
      let subject = try key()
      let subjectName = try name()
      let sponsor = try id("sponsor")
      body = .add(
        subject: subject, name: subjectName, sponsor: sponsor, epoch: try r.u32(),
        wallTime: try r.u64())
    case .remove:
      let subject = try id("subject")
      let signer = try id("signer")
      body = .remove(subject: subject, signer: signer, epoch: try r.u32(), wallTime: try r.u64())
    case .rekey:
      let epoch = try r.u32()
      guard epoch >= 1 else { throw MembershipDecodeError("rekey to epoch 0 (epochs start at 1)") }
      let signer = try id("signer")
      let count = Int(try r.u16())
      guard (1...Self.maxMembers).contains(count) else {
        throw MembershipDecodeError(
          "rekey lists \(count) members (1 to \(Self.maxMembers) allowed)")
      }
      var secrets: [SealedSecret] = []
      for _ in 0..<count {
        let device = try id("member")
        if let last = secrets.last, last.device >= device {
          throw MembershipDecodeError("rekey members are not sorted by device id")
        }
        let length = Int(try r.u32())
        guard length == Self.sealedBytes else {
          throw MembershipDecodeError(
            "sealed secret of \(length) bytes (it is \(Self.sealedBytes))")
        }
        secrets.append(SealedSecret(device: device, sealed: try r.take(length)))
      }
      body = .rekey(epoch: epoch, signer: signer, secrets: secrets)
    }
    let signature = try r.take(DevicePublicKey.signatureBytes)
    try r.expectEnd()
    self.init(body: body, signature: signature)
  }

  public var description: String {
    switch body {
    case .found(let subject, let name, _):
      "found \(subject.deviceID) \"\(name)\""
    case .add(let subject, let name, let sponsor, let epoch, _):
      "add \(subject.deviceID) \"\(name)\" by \(sponsor) in epoch \(epoch)"
    case .remove(let subject, let signer, let epoch, _):
      "remove \(subject) by \(signer) in epoch \(epoch)"
    case .rekey(let epoch, let signer, let secrets):
      "rekey to epoch \(epoch) by \(signer) for \(secrets.count) members"
    }
  }
}

/// Why bytes are not a membership record (or a set of them).
public struct MembershipDecodeError: Error, CustomStringConvertible, Equatable, ByteDecodingError {
  public let reason: String
  public init(_ reason: String) { self.reason = reason }
  public var description: String { "malformed membership record: \(reason)" }

  package static func truncated(_ context: String, wanted: Int, at offset: Int, of count: Int)
    -> MembershipDecodeError
  {
    MembershipDecodeError("\(context) ends early: needed \(wanted) bytes at offset \(offset)")
  }

  package static func trailing(_ context: String, at offset: Int, of count: Int)
    -> MembershipDecodeError
  {
    MembershipDecodeError("\(count - offset) unexpected bytes after the \(context)")
  }
}
