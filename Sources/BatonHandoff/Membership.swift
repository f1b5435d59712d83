import BatonSystem

/// A group's membership as one device sees it: the set of signed records it
/// knows (PROTOCOL.md section 13), and what follows from them: the current
/// epoch, its members, who was removed, this device's secret for each epoch
/// it can open, and whether someone should re-key.
///
/// The state is a function of the *set* of records only: inserting them in
/// any order, or twice, gives the same state and the same `digest` (except
/// for the two records refused on arrival, below). Every
/// rule decides by epochs and digests, never by the records' wall times.
public struct Membership: Sendable {
  public static let maxRecords = 1024
  public static let maxBytes = 4 * 1024 * 1024

  /// One device as the records describe it.
  public struct Member: Equatable, Sendable {
    public let id: DeviceID
    public let publicKey: DevicePublicKey
    /// The name in the record that made it a member (or, failing that, any
    /// record carrying its key).
    public let name: String
    /// Who signed that record (the device itself for a founding).
    public let addedBy: DeviceID
    /// The epoch that record names (0 for a founding).
    public let epoch: UInt32
    /// That record's wall time (informational only).
    public let wallTime: UInt64
    /// A member of the current epoch.
    public let isMember: Bool
    public let removedBy: DeviceID?
    public let removedInEpoch: UInt32?
  }

  /// Where one stored record stands.
  public enum RecordStatus: Equatable, Sendable {
    case effective
    /// Kept; may take effect when the records it depends on arrive.
    case waiting(MembershipRefusal)
    /// Kept, so that every device ends with the same set, but never in
    /// effect (unless an earlier removal turns out not to be valid).
    case ignored(MembershipRefusal)
  }

  public enum InsertOutcome: Equatable, Sendable {
    case accepted
    case alreadyKnown
    case waiting(MembershipRefusal)
    case refused(MembershipRefusal)
  }

  /// What an `insert` did.
  public struct Update: Equatable, Sendable {
    /// One per record given, in order.
    public var outcomes: [InsertOutcome]
    /// Devices that are members of the current epoch now and were not before.
    public var joined: [DeviceID]
    /// Devices that were members and are not now.
    public var left: [DeviceID]
    public var epochBefore: UInt32
    public var epochAfter: UInt32
    public var changed: Bool { !joined.isEmpty || !left.isEmpty || epochBefore != epochAfter }
  }

  struct Removal: Equatable, Sendable {
    let by: DeviceID
    let epoch: UInt32
    let digest: [UInt8]
  }

  /// What the records add up to (`evaluate`).
  struct State: Sendable {
    var epoch: UInt32 = 0
    var members: Set<DeviceID> = []
    /// Devices that may hold the current epoch's secret, removed or not.
    var holders: Set<DeviceID> = []
    /// The current epoch's founders (epoch 0) or the devices its rekey lists.
    var listed: Set<DeviceID> = []
    var removed: [DeviceID: Removal] = [:]
    var winners: [UInt32: MembershipRecord] = [:]
    var status: [[UInt8]: RecordStatus] = [:]
    /// The record that made each device a member first (lowest epoch, then digest).
    var joinedBy: [DeviceID: MembershipRecord] = [:]
  }

  public let device: DeviceKey
  public let groupKey: GroupKey?
  private(set) var records: [[UInt8]: MembershipRecord] = [:]
  private var storedBytes = 0
  /// Public keys by device id, from every record that carried one (the id is
  /// derived from the key, so any record is a sound source).
  var keys: [DeviceID: DevicePublicKey] = [:]
  var verifiedCache: [[UInt8]: Bool] = [:]
  var secretCache: [[UInt8]: [UInt8]] = [:]
  var state = State()

  /// An empty membership for `device`; `groupKey` is the key file's key (the
  /// secret of epoch 0), nil for a device that joined by pairing.
  public init(device: DeviceKey, groupKey: GroupKey? = nil) {
    self.device = device
    self.groupKey = groupKey
    keys[device.deviceID] = device.publicKey
  }

  // MARK: - Reading the state

  public var epoch: UInt32 { state.epoch }
  public var allRecords: [MembershipRecord] {
    records.sorted { $0.key.lexicographicallyPrecedes($1.key) }.map(\.value)
  }
  public var recordCount: Int { records.count }

  /// The secret of the current epoch as this device can open it: the group
  /// key in epoch 0, else this device's entry of the epoch's rekey; nil when
  /// this device has none (it was not listed, or it was removed).
  public var epochSecret: [UInt8]? { secret(ofEpoch: state.epoch) }

  /// The secret of `epoch`, if this device was sent it (old epochs too:
  /// what was encrypted with them stays readable to whoever had them).
  public func secret(ofEpoch epoch: UInt32) -> [UInt8]? {
    if epoch == 0 { return groupKey?.bytes }
    guard let winner = state.winners[epoch] else { return nil }
    return secretCache[winner.digest]
  }

  public func isMember(_ key: DevicePublicKey) -> Bool {
    let id = key.deviceID
    guard state.members.contains(id) else { return false }
    return keys[id].map { $0 == key } ?? true
  }

  public var memberIDs: Set<DeviceID> { state.members }

  public func removal(of device: DeviceID) -> (by: DeviceID, epoch: UInt32)? {
    state.removed[device].map { ($0.by, $0.epoch) }
  }

  /// Every device a removal names: removed for good, whatever epoch it is on.
  public var removedIDs: Set<DeviceID> { Set(state.removed.keys) }

  /// Some member should re-key: a removed device may hold the current
  /// epoch's secret (a removal raced a rekey, or a device of epoch 0 was
  /// removed), or a member added in this epoch was not sent its secret
  /// (`awaitingSecret`).
  public var needsRekey: Bool {
    state.holders.contains { state.removed[$0] != nil } || !awaitingSecret.isEmpty
  }

  /// Members added in the current epoch: no rekey lists them yet, so their
  /// membership rests on their sponsor alone, and they have no secret.
  public var awaitingSecret: Set<DeviceID> { state.members.subtracting(state.listed) }

  /// Whether that member is this device: the member with the lowest device
  /// id among the current epoch's members this device knows of. Two devices
  /// that both re-key are harmless: the lower digest wins.
  public var shouldRekey: Bool {
    needsRekey && state.members.min() == device.deviceID
  }

  /// Every device a record names with its key, sorted by id.
  public var members: [Member] {
    keys.keys.sorted().compactMap { id -> Member? in
      guard let key = keys[id] else { return nil }
      let info =
        state.joinedBy[id]
        ?? records.filter { $0.value.carriedKey?.deviceID == id }
        .min { $0.key.lexicographicallyPrecedes($1.key) }?.value
      guard let info else { return nil }
      let removal = state.removed[id]
      switch info.body {
      case .found(_, let name, let time):
        return Member(
          id: id, publicKey: key, name: name, addedBy: id, epoch: 0, wallTime: time,
          isMember: state.members.contains(id), removedBy: removal?.by,
          removedInEpoch: removal?.epoch)
      case .add(_, let name, let sponsor, let epoch, let time):
        return Member(
          id: id, publicKey: key, name: name, addedBy: sponsor, epoch: epoch, wallTime: time,
          isMember: state.members.contains(id), removedBy: removal?.by,
          removedInEpoch: removal?.epoch)
      case .remove, .rekey:
        return nil
      }
    }
  }

  public func status(of record: MembershipRecord) -> RecordStatus? {
    state.status[record.digest]
  }

  /// BLAKE2b-256 over the sorted digests of every record: equal on two
  /// devices exactly when they hold the same records.
  public var digest: [UInt8] {
    HandoffCrypto.hash(records.keys.sorted { $0.lexicographicallyPrecedes($1) }.flatMap { $0 })
  }

  // MARK: - Storage and transfer

  /// `u32 count || count × blob record`, sorted by record digest.
  public var encodedRecords: [UInt8] {
    var w = ByteWriter()
    let sorted = allRecords
    w.u32(UInt32(clamping: sorted.count))
    for record in sorted { w.blob(record.encoded) }
    return w.bytes
  }

  /// The records of `encodedRecords`, refusing more than `maxRecords`.
  public static func decodeRecords(_ bytes: [UInt8]) throws(MembershipDecodeError)
    -> [MembershipRecord]
  {
    var r = ByteReader<MembershipDecodeError>(bytes, context: "membership set")
    let count = Int(try r.u32())
    guard count <= maxRecords else {
      throw MembershipDecodeError("set of \(count) records exceeds \(maxRecords)")
    }
    var out: [MembershipRecord] = []
    for _ in 0..<count {
      let length = Int(try r.u32())
      guard length <= MembershipRecord.maxEncodedBytes else {
        throw MembershipDecodeError(
          "record of \(length) bytes exceeds \(MembershipRecord.maxEncodedBytes)")
      }
      out.append(try MembershipRecord(decoding: try r.take(length)))
    }
    try r.expectEnd()
    return out
  }

  // MARK: - Inserting

  /// Decodes and inserts one record from outside.
  public mutating func insert(encoded bytes: [UInt8]) -> Update {
    do throws(MembershipDecodeError) {
      return insert([try MembershipRecord(decoding: bytes)])
    } catch {
      return Update(
        outcomes: [.refused(.malformed(error.reason))], joined: [], left: [],
        epochBefore: state.epoch, epochAfter: state.epoch)
    }
  }

  public mutating func insert(_ record: MembershipRecord) -> Update { insert([record]) }

  /// Inserts records (idempotent, in any order), then says what changed.
  /// Malformed records, bad signatures, records past the bounds, additions
  /// past 256 members and foundings once this device has an epoch 1 that
  /// does not name them are refused and not kept; every other record is
  /// kept, in effect or not.
  public mutating func insert(_ incoming: [MembershipRecord]) -> Update {
    let before = state
    for record in incoming {
      if let key = record.carriedKey { keys[key.deviceID] = key }
    }
    var outcomes: [InsertOutcome?] = Array(repeating: nil, count: incoming.count)
    var fresh: [Int: [UInt8]] = [:]
    for (index, record) in incoming.enumerated() {
      let encoded = record.encoded
      guard (try? MembershipRecord(decoding: encoded)) == record else {
        let reason: String
        do throws(MembershipDecodeError) {
          _ = try MembershipRecord(decoding: encoded)
          reason = "a field is over its limit"
        } catch { reason = error.reason }
        outcomes[index] = .refused(.malformed(reason))
        continue
      }
      let digest = HandoffCrypto.hash(encoded, length: 32)
      if records[digest] != nil {
        outcomes[index] = .alreadyKnown
        continue
      }
      guard records.count < Self.maxRecords else {
        outcomes[index] = .refused(.full("\(Self.maxRecords) records"))
        continue
      }
      guard storedBytes + encoded.count <= Self.maxBytes else {
        outcomes[index] = .refused(.full("\(Self.maxBytes) bytes"))
        continue
      }
      if case .found(let subject, _, _) = record.body, let first = state.winners[1],
        !first.names(subject.deviceID)
      {
        // "Ignored by anyone who knows a rekey": refused, not kept, so that
        // a key-file copy cannot found a new identity and then race epoch 1
        // with a rekey of its own on this device.
        outcomes[index] = .refused(.foundedAfterRekey(subject.deviceID))
        continue
      }
      if case .add(let subject, _, _, let epoch, _) = record.body, epoch == state.epoch,
        state.members.count >= MembershipRecord.maxMembers,
        !state.members.contains(subject.deviceID)
      {
        // Refused, not kept: at the bound, a kept addition could push out
        // a member whose addition has a higher digest.
        outcomes[index] = .refused(.groupFull(epoch: epoch))
        continue
      }
      if verified(record, digest: digest) == false {
        outcomes[index] = .refused(.badSignature(signer: record.signer))
        continue
      }
      records[digest] = record
      storedBytes += encoded.count
      fresh[index] = digest
    }
    pruneBadSignatures()
    evaluate()
    for (index, digest) in fresh {
      switch state.status[digest] {
      case .effective: outcomes[index] = .accepted
      case .waiting(let why): outcomes[index] = .waiting(why)
      case .ignored(let why): outcomes[index] = .refused(why)
      case nil: outcomes[index] = .refused(.badSignature(signer: incoming[index].signer))
      }
    }
    let joined = state.members.subtracting(before.members).sorted()
    let left = before.members.subtracting(state.members).sorted()
    return Update(
      outcomes: outcomes.map { $0 ?? .alreadyKnown }, joined: joined, left: left,
      epochBefore: before.epoch, epochAfter: state.epoch)
  }

  /// nil when no record carries the signer's key yet.
  mutating func verified(_ record: MembershipRecord, digest: [UInt8]) -> Bool? {
    guard let key = keys[record.signer] else { return nil }
    if let known = verifiedCache[digest] { return known }
    let ok = record.verifies(with: key)
    verifiedCache[digest] = ok
    return ok
  }

  /// Drops kept records whose signer's key has since become known and does
  /// not verify them, so that every device keeps the same set.
  private mutating func pruneBadSignatures() {
    for (digest, record) in records where verified(record, digest: digest) == false {
      records[digest] = nil
      storedBytes -= record.encoded.count
    }
  }
}
