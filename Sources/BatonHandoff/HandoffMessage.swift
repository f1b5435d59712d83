import BatonSystem
import BatonNotes

/// One note as the index lists it (PROTOCOL.md, "Index entry").
public struct HandoffIndexEntry: Hashable, Sendable {
  /// The reverse-DNS activity type of the folder holding the note.
  public var activityType: String
  /// Path below the folder, `/`-separated.
  public var path: String
  public var hash: ContentHash
  public var size: Int
  public var version: VersionVector
  /// The devices' signatures for their counters in `version` (PROTOCOL.md
  /// section 7.5).
  public var vouchers: Vouchers
  /// The device whose change made this version.
  public var origin: DeviceID
  /// A tombstone (PROTOCOL.md section 7.2): the note was deleted at this
  /// version; `hash` and `size` are those of the bytes it deleted.
  public var deleted: Bool

  public init(
    activityType: String, path: String, hash: ContentHash, size: Int, version: VersionVector,
    vouchers: Vouchers = Vouchers(), origin: DeviceID, deleted: Bool = false
  ) {
    self.activityType = activityType
    self.path = path
    self.hash = hash
    self.size = size
    self.version = version
    self.vouchers = vouchers
    self.origin = origin
    self.deleted = deleted
  }

  /// Takes a peer's `version` into this entry's: merge(this, `version`),
  /// each counter with the voucher of the side that has it larger.
  mutating func absorb(_ version: VersionVector, vouchers: Vouchers) {
    self.vouchers = Vouchers.merged(self.vouchers, of: self.version, vouchers, of: version)
    self.version = self.version.merged(with: version)
  }

  /// What two entries of the same note must share to be the same: the
  /// bytes, and whether they are deleted.
  struct ContentState: Hashable, Sendable {
    var hash: ContentHash
    var deleted: Bool
  }

  var contentState: ContentState { ContentState(hash: hash, deleted: deleted) }

  func encode(into w: inout ByteWriter) {
    w.string(activityType, max: HandoffLimits.maxActivityTypeBytes)
    w.string(path, max: HandoffLimits.maxPathBytes)
    w.raw(hash.bytes)
    w.u64(UInt64(size))
    version.encode(into: &w)
    vouchers.encode(into: &w)
    w.u64(origin.rawValue)
    w.u8(deleted ? Self.tombstoneFlag : 0)
  }

  /// The `flags` bit of a tombstone; the other bits are zero.
  static let tombstoneFlag: UInt8 = 0x01

  static func decode(from r: inout WireReader) throws(WireError) -> HandoffIndexEntry {
    let type = try r.string(max: HandoffLimits.maxActivityTypeBytes)
    let path = try r.string(max: HandoffLimits.maxPathBytes)
    guard let hash = ContentHash(bytes: try r.raw(32)) else { throw WireError("hash") }
    // Any size is well-formed: one over the receiver's limit is declined
    // (PROTOCOL.md section 9), not a malformed message. Sizes past
    // `Int.max` (2^63 - 1) read as `Int.max`, over every limit just the same.
    let size = Int(clamping: try r.u64())
    let version = try VersionVector.decode(from: &r)
    let vouchers = try Vouchers.decode(from: &r, for: version)
    let origin = DeviceID(rawValue: try r.u64())
    let flags = try r.u8()
    guard flags & ~tombstoneFlag == 0 else { throw WireError("index entry flags \(flags)") }
    return HandoffIndexEntry(
      activityType: type, path: path, hash: hash, size: size, version: version,
      vouchers: vouchers, origin: origin, deleted: flags == tombstoneFlag)
  }

  /// Why this entry cannot be offered to peers (a field over its wire limit,
  /// which a peer's decoder would reject with the whole message), or nil.
  var unencodableReason: String? {
    if activityType.utf8.count > HandoffLimits.maxActivityTypeBytes {
      return "its activity type is over \(HandoffLimits.maxActivityTypeBytes) bytes"
    }
    if path.utf8.count > HandoffLimits.maxPathBytes {
      return "its path is over \(HandoffLimits.maxPathBytes) bytes"
    }
    if version.deviceCount > HandoffLimits.maxMergedDevices {
      return "its version vector has over \(HandoffLimits.maxMergedDevices) devices"
    }
    return nil
  }

  /// The 24-bit activity hash of this version, as carried in the beacon.
  var activityHash: UInt32 {
    var w = ByteWriter()
    w.string(activityType)
    w.string(path)
    version.encode(into: &w)
    let h = HandoffCrypto.hash(w.bytes)
    let v = UInt32(h[0]) | UInt32(h[1]) << 8 | UInt32(h[2]) << 16
    return v == 0 ? 1 : v  // 0 means "no current activity"
  }

  /// The bytes `encode(into:)` writes.
  var encodedSize: Int {
    2 + activityType.utf8.count + 2 + path.utf8.count + 32 + 8 + 2 + 16 * version.deviceCount
      + vouchers.encodedSize + 8 + 1
  }
}

/// An activity with its note, in the spirit of NSUserActivity: the type, a title,
/// `userInfo` {title, content}, plus the note's path, version and origin device.
public struct ActivityPayload: Sendable, Equatable {
  public var activityType: String
  public var title: String
  public var path: String
  public var version: VersionVector
  /// The devices' signatures for their counters in `version` (PROTOCOL.md
  /// section 7.5).
  public var vouchers: Vouchers
  public var origin: DeviceID
  public var originName: String
  public var hash: ContentHash
  public var content: [UInt8]

  package init(
    activityType: String, title: String, path: String, version: VersionVector,
    vouchers: Vouchers = Vouchers(), origin: DeviceID, originName: String, hash: ContentHash,
    content: [UInt8]
  ) {
    self.activityType = activityType
    self.title = title
    self.path = path
    self.version = version
    self.vouchers = vouchers
    self.origin = origin
    self.originName = originName
    self.hash = hash
    self.content = content
  }

  /// NSUserActivity-style user info: the title and the note's text.
  public var userInfo: [String: String] {
    ["title": title, "content": String(decoding: content, as: UTF8.self)]
  }

  /// The note's title by the one title rule (`Note.title(fileName:)`): at most
  /// `Note.maximumTitleBytes` bytes, so every peer's decoder accepts it.
  public static func title(of content: [UInt8], path: String) -> String {
    Note(bytes: content).title(fileName: path)
  }

  func encode(into w: inout ByteWriter) {
    w.string(activityType, max: HandoffLimits.maxActivityTypeBytes)
    w.string(title, max: HandoffLimits.maxTitleBytes)
    w.string(path, max: HandoffLimits.maxPathBytes)
    version.encode(into: &w)
    vouchers.encode(into: &w)
    w.u64(origin.rawValue)
    w.string(originName, max: HandoffLimits.maxNameBytes)
    w.raw(hash.bytes)
    w.blob(content)
  }

  static func decode(from r: inout WireReader, maxContent: Int) throws(WireError) -> ActivityPayload
  {
    let type = try r.string(max: HandoffLimits.maxActivityTypeBytes)
    let title = try r.string(max: HandoffLimits.maxTitleBytes)
    let path = try r.string(max: HandoffLimits.maxPathBytes)
    let version = try VersionVector.decode(from: &r)
    let vouchers = try Vouchers.decode(from: &r, for: version)
    let origin = DeviceID(rawValue: try r.u64())
    let originName = try r.string(max: HandoffLimits.maxNameBytes)
    guard let hash = ContentHash(bytes: try r.raw(32)) else { throw WireError("hash") }
    let content = try r.blob(max: maxContent)
    return ActivityPayload(
      activityType: type, title: title, path: path, version: version, vouchers: vouchers,
      origin: origin, originName: originName, hash: hash, content: content)
  }
}

/// Sizes the protocol enforces (PROTOCOL.md, "Limits").
public enum HandoffLimits {
  public static let maxNameBytes = 64
  public static let maxActivityTypeBytes = 255
  public static let maxPathBytes = 1024
  /// An activity title on the wire (what a decoder accepts; titles are cut to
  /// `Note.maximumTitleBytes`).
  public static let maxTitleBytes = 1024
  /// An ERROR message's text.
  public static let maxErrorTextBytes = 512
  /// The most devices an agent lets a note's version vector grow to by
  /// merging a peer's (decoders accept 4096): with at most this many, every
  /// message carrying the vector stays under its kind's limit.
  public static let maxMergedDevices = 1024
  /// The largest index a peer accepts (reassembled), 32 MiB: an INDEX of
  /// 100,000 notes, each with a voucher, is about 17 MB.
  public static let maxIndexBytes = 32 << 20
  /// Slack above the note size for a NOTE message's metadata.
  public static let noteMetadataSlack = 64 << 10
  /// Any other message.
  public static let maxControlBytes = 64 << 10
  /// The smallest `maximumMessageSize` a channel must offer: M2 of the
  /// handshake with a 64-byte name is 236 bytes (268 before protocol 10;
  /// the bound stays, PROTOCOL.md section 4).
  public static let minimumMessageSize = 272

  /// `text` cut at a character boundary so that its UTF-8 fits in `toBytes` bytes.
  public static func truncated(_ text: String, toBytes max: Int) -> String {
    text.prefix(utf8Bytes: max)
  }

  /// Whether `type` is a reverse-DNS activity type: at least two dot-separated
  /// labels of ASCII letters, digits, `-` and `_`, at most 255 bytes.
  public static func isValidActivityType(_ type: String) -> Bool {
    guard type.utf8.count <= maxActivityTypeBytes else { return false }
    let labels = type.split(separator: ".", omittingEmptySubsequences: false)
    return labels.count >= 2
      && labels.allSatisfy { label in
        !label.isEmpty
          && label.utf8.allSatisfy {
            ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A)
              || $0 == 0x2D || $0 == 0x5F
          }
      }
  }
}

/// The messages of a session, each carried (fragmented if needed) in sealed frames.
package enum HandoffMessage: Equatable {
  case getActivity
  /// The current activity (if any) and the sender's full index digest.
  case activity(HandoffIndexEntry?, title: String, indexDigest: [UInt8])
  case getIndex
  case index([HandoffIndexEntry])
  case getNote(activityType: String, path: String)
  case note(ActivityPayload)
  case noteUnavailable(activityType: String, path: String, reason: UnavailableReason)
  /// The initiator's short index digest and its entries the responder may
  /// lack (section 6.1); the receiver now asks.
  case turn(indexDigest: UInt32, [HandoffIndexEntry])
  case done(activityHash: UInt32, indexDigest: UInt32)
  case error(code: UInt8, text: String)
  /// Summary nodes asked for (section 6.1).
  case getNodes([IndexReconciliation.Request])
  /// Their answers, in the order asked.
  case nodes([IndexReconciliation.Answer])
  /// Link mode (PROTOCOL.md section 6.2): sent by the initiator as its first
  /// message after the handshake, and by the responder in answer; carries the
  /// sender's note size limit, so that a peer never pushes a note it refuses,
  /// and its answer for the root of its index summary (section 6.1), so that
  /// the peer's walk starts without asking for it.
  case link(maxNoteSize: UInt32, root: IndexReconciliation.Answer)
  /// Link keep-alive: PING asks for a PONG.
  case ping
  case pong
  /// Links only: notes the sender now holds (received from another peer), so
  /// that the receiver does not relay them to it.
  case have([HandoffIndexEntry])
  /// Links only: tombstones the receiver lacks (section 7.2).
  case gone([HandoffIndexEntry])
  /// Links only: a rename (section 7.3): the old name's tombstone and the new
  /// name's entry, with the same bytes, which the receiver holds already.
  case moved(from: HandoffIndexEntry, to: HandoffIndexEntry)
  /// The sender's membership (PROTOCOL.md section 6.3): the digest of its
  /// records, and the records themselves (`Membership.encodedRecords`) when
  /// it has learnt that the receiver's digest differs.
  case members(digest: [UInt8], records: [UInt8]?)

  package enum UnavailableReason: UInt8 {
    case unknown = 1
    case tooLarge = 2
    case unreadable = 3
  }

  package enum Kind: UInt8 {
    case getActivity = 1
    case activity = 2
    case getIndex = 3
    case index = 4
    case getNote = 5
    case note = 6
    case noteUnavailable = 7
    case turn = 8
    case done = 9
    case error = 10
    case getNodes = 11
    case nodes = 12
    case link = 13
    case ping = 14
    case pong = 15
    case have = 16
    case gone = 17
    case moved = 18
    case members = 19
  }

  package var kind: Kind {
    switch self {
    case .getActivity: .getActivity
    case .activity: .activity
    case .getIndex: .getIndex
    case .index: .index
    case .getNote: .getNote
    case .note: .note
    case .noteUnavailable: .noteUnavailable
    case .turn: .turn
    case .done: .done
    case .error: .error
    case .getNodes: .getNodes
    case .nodes: .nodes
    case .link: .link
    case .ping: .ping
    case .pong: .pong
    case .have: .have
    case .gone: .gone
    case .moved: .moved
    case .members: .members
    }
  }

  /// The largest membership set a MEMBERS message carries: every record's
  /// bytes, with a length and the count.
  static let maxMembersBytes = Membership.maxBytes + 4 * Membership.maxRecords + 4

  /// The largest body a receiver accepts for `kind`.
  static func limit(for kind: Kind, maxNoteSize: Int) -> Int {
    switch kind {
    case .index, .turn, .nodes, .have, .gone, .link: HandoffLimits.maxIndexBytes
    case .note: maxNoteSize + HandoffLimits.noteMetadataSlack
    case .members: Self.maxMembersBytes + 64
    default: HandoffLimits.maxControlBytes
    }
  }

  package var body: [UInt8] {
    var w = ByteWriter()
    switch self {
    case .getActivity, .getIndex, .ping, .pong: break
    case .link(let maxNoteSize, let root):
      w.u32(maxNoteSize)
      Self.encode(root, into: &w)
    case .activity(let entry, let title, let digest):
      w.raw(digest.count == 32 ? digest : [UInt8](repeating: 0, count: 32))
      if let entry {
        w.u8(1)
        entry.encode(into: &w)
        w.string(title, max: HandoffLimits.maxTitleBytes)
      } else {
        w.u8(0)
      }
    case .index(let entries), .have(let entries), .gone(let entries):
      Self.encode(entries, into: &w)
    case .moved(let from, let to):
      from.encode(into: &w)
      to.encode(into: &w)
    case .turn(let digest, let entries):
      w.u32(digest)
      Self.encode(entries, into: &w)
    case .getNodes(let requests):
      w.u16(UInt16(clamping: requests.count))
      for r in requests.prefix(Int(UInt16.max)) {
        w.u8(UInt8(r.depth) | (r.wantsEntries ? 0x80 : 0))
        w.u32(r.prefix)
      }
    case .nodes(let answers):
      w.u16(UInt16(clamping: answers.count))
      for a in answers.prefix(Int(UInt16.max)) { Self.encode(a, into: &w) }
    case .getNote(let type, let path):
      w.string(type, max: HandoffLimits.maxActivityTypeBytes)
      w.string(path, max: HandoffLimits.maxPathBytes)
    case .note(let payload):
      payload.encode(into: &w)
    case .noteUnavailable(let type, let path, let reason):
      w.string(type, max: HandoffLimits.maxActivityTypeBytes)
      w.string(path, max: HandoffLimits.maxPathBytes)
      w.u8(reason.rawValue)
    case .done(let activityHash, let indexDigest):
      w.u32(activityHash)
      w.u32(indexDigest)
    case .error(let code, let text):
      w.u8(code)
      w.string(text, max: HandoffLimits.maxErrorTextBytes)
    case .members(let digest, let records):
      w.raw(digest.count == 32 ? digest : [UInt8](repeating: 0, count: 32))
      if let records {
        w.u8(1)
        w.blob(records)
      } else {
        w.u8(0)
      }
    }
    return w.bytes
  }

  package static func decode(kind rawKind: UInt8, body: [UInt8], maxNoteSize: Int) throws(WireError)
    -> HandoffMessage
  {
    guard let kind = Kind(rawValue: rawKind) else {
      throw WireError("unknown message kind \(rawKind)")
    }
    var r = WireReader(body)
    let message: HandoffMessage
    switch kind {
    case .getActivity: message = .getActivity
    case .getIndex: message = .getIndex
    case .link:
      let limit = try r.u32()
      message = .link(maxNoteSize: limit, root: try decodeAnswer(&r))
    case .ping: message = .ping
    case .pong: message = .pong
    case .activity:
      let digest = try r.raw(32)
      switch try r.u8() {
      case 0: message = .activity(nil, title: "", indexDigest: digest)
      case 1:
        let entry = try HandoffIndexEntry.decode(from: &r)
        message = .activity(
          entry, title: try r.string(max: HandoffLimits.maxTitleBytes), indexDigest: digest)
      default: throw WireError("activity presence flag")
      }
    case .index:
      message = .index(try decodeEntries(&r))
    case .have:
      message = .have(try decodeEntries(&r))
    case .gone:
      let entries = try decodeEntries(&r)
      guard entries.allSatisfy(\.deleted) else { throw WireError("GONE lists a note that is not deleted") }
      message = .gone(entries)
    case .moved:
      let from = try HandoffIndexEntry.decode(from: &r)
      let to = try HandoffIndexEntry.decode(from: &r)
      guard from.deleted, !to.deleted, from.hash == to.hash, from.activityType == to.activityType,
        from.path != to.path
      else { throw WireError("MOVED is not a tombstone and a note of the same bytes and type") }
      message = .moved(from: from, to: to)
    case .turn:
      let digest = try r.u32()
      message = .turn(indexDigest: digest, try decodeEntries(&r))
    case .getNodes:
      let count = Int(try r.u16())
      guard count <= r.remaining / 5 else { throw WireError("node count \(count)") }
      var requests: [IndexReconciliation.Request] = []
      for _ in 0..<count {
        let flags = try r.u8()
        let depth = Int(flags & 0x0F)
        let prefix = try r.u32()
        guard flags & 0x70 == 0, IndexSummary.isValid(depth: depth, prefix: prefix) else {
          throw WireError("node depth \(depth) prefix \(prefix) (flags \(flags))")
        }
        requests.append(.init(depth: depth, prefix: prefix, wantsEntries: flags & 0x80 != 0))
      }
      message = .getNodes(requests)
    case .nodes:
      let count = Int(try r.u16())
      guard count <= r.remaining / 5 else { throw WireError("answer count \(count)") }
      var answers: [IndexReconciliation.Answer] = []
      for _ in 0..<count { answers.append(try decodeAnswer(&r)) }
      message = .nodes(answers)
    case .getNote:
      let type = try r.string(max: HandoffLimits.maxActivityTypeBytes)
      message = .getNote(activityType: type, path: try r.string(max: HandoffLimits.maxPathBytes))
    case .note:
      message = .note(try ActivityPayload.decode(from: &r, maxContent: maxNoteSize))
    case .noteUnavailable:
      let type = try r.string(max: HandoffLimits.maxActivityTypeBytes)
      let path = try r.string(max: HandoffLimits.maxPathBytes)
      let reason = UnavailableReason(rawValue: try r.u8()) ?? .unknown
      message = .noteUnavailable(activityType: type, path: path, reason: reason)
    case .done:
      message = .done(activityHash: try r.u32(), indexDigest: try r.u32())
    case .error:
      message = .error(code: try r.u8(), text: try r.string(max: HandoffLimits.maxErrorTextBytes))
    case .members:
      let digest = try r.raw(32)
      switch try r.u8() {
      case 0: message = .members(digest: digest, records: nil)
      case 1: message = .members(digest: digest, records: try r.blob(max: Self.maxMembersBytes))
      default: throw WireError("MEMBERS records flag")
      }
    }
    try r.expectEnd()
    return message
  }

  /// A node's answer (section 6.1): `00 || 16 × (u32 count || u64
  /// fingerprint)` for its children, `01 || u32 n || n × entry` for its
  /// entries.
  private static func encode(_ answer: IndexReconciliation.Answer, into w: inout ByteWriter) {
    switch answer {
    case .children(let children):
      w.u8(0)
      for c in children {
        w.u32(c.count)
        w.u64(c.fingerprint)
      }
    case .entries(let entries):
      w.u8(1)
      Self.encode(entries, into: &w)
    }
  }

  private static func decodeAnswer(_ r: inout WireReader) throws(WireError)
    -> IndexReconciliation.Answer
  {
    switch try r.u8() {
    case 0:
      var children: [IndexReconciliation.Child] = []
      for _ in 0..<16 {
        let n = try r.u32()
        children.append(.init(count: n, fingerprint: try r.u64()))
      }
      return .children(children)
    case 1: return .entries(try decodeEntries(&r))
    default: throw WireError("node answer form")
    }
  }

  private static func encode(_ entries: [HandoffIndexEntry], into w: inout ByteWriter) {
    w.u32(UInt32(clamping: entries.count))
    for e in entries { e.encode(into: &w) }
  }

  /// `u32 n || n × entry`.
  private static func decodeEntries(_ r: inout WireReader) throws(WireError) -> [HandoffIndexEntry] {
    let count = Int(try r.u32())
    guard count <= r.remaining / 63 + 1 else { throw WireError("index count \(count)") }
    var entries: [HandoffIndexEntry] = []
    entries.reserveCapacity(count)
    for _ in 0..<count { entries.append(try HandoffIndexEntry.decode(from: &r)) }
    return entries
  }
}
