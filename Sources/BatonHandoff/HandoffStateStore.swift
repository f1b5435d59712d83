import FoundationEssentials

/// What the engine keeps across restarts, and where: this device's id, the
/// index with version vectors, peers, counters, recent failures and the
/// current activity. Handoff declares it; `BatonStore`'s `HandoffStore`
/// (SQLite) implements it, so the protocol layer never imports the store.
public protocol HandoffStateStore: Sendable {
  /// This agent's device key pair (new whenever the state is new); the
  /// device id is derived from it.
  var deviceKey: DeviceKey { get }
  /// Set when damaged state was moved aside: what happened, for the log.
  var recovery: String? { get }

  /// Every stored note, deleted ones included.
  func notes() throws -> [StoredNote]
  /// Inserts or replaces one note.
  func save(_ note: StoredNote) throws
  /// Records, before an incoming note's file is written, what the index will
  /// say once it is (a write-back intent).
  func savePending(_ note: StoredNote) throws
  /// Write-back intents left by a process that stopped between writing a
  /// file and recording it.
  func pendingWrites() throws -> [StoredNote]
  /// Forgets the intent for one note; with `note`, saves it in the same
  /// transaction (the write happened).
  func completeWrite(activityType: String, path: String, saving note: StoredNote?) throws
  /// The current activity (type and path), remembered across restarts.
  func currentActivity() throws -> (activityType: String, path: String)?
  func setCurrentActivity(activityType: String, path: String) throws
  /// The membership records this device knows (each `MembershipRecord.encoded`).
  func membershipRecords() throws -> [[UInt8]]
  /// Keeps more membership records (records already kept are ignored).
  func saveMembershipRecords(_ records: [[UInt8]]) throws
  func recordPeer(_ peer: PeerRecord) throws
  /// Known peers, the most recently seen first.
  func peers() throws -> [PeerRecord]
  func increment(_ counter: String, by amount: Int) throws
  func counters() throws -> [String: Int]
  /// Records a failure, keeping only the newest `keep`.
  func recordFailure(_ failure: FailureRecord, keep: Int) throws
  /// The newest failures first.
  func failures() throws -> [FailureRecord]
  /// Several updates in order, in one transaction (a catch-up of many notes
  /// or a rescan commits once per batch, not once per note).
  func commit(_ batch: HandoffStoreBatch) throws
  /// Write-back intents for several notes, in one transaction.
  func savePending(_ notes: [StoredNote]) throws
}

/// Store updates gathered to be committed together (`HandoffStateStore.commit`).
public struct HandoffStoreBatch: Sendable {
  public enum Operation: Sendable {
    case save(StoredNote)
    case completeWrite(activityType: String, path: String, saving: StoredNote?)
    case increment(String, by: Int)
  }
  public private(set) var operations: [Operation] = []
  public init() {}
  public var isEmpty: Bool { operations.isEmpty }
  public var count: Int { operations.count }
  public mutating func append(_ operation: Operation) { operations.append(operation) }
}

extension HandoffStateStore {
  /// This agent's device id, derived from its device key.
  public var deviceID: DeviceID { deviceKey.deviceID }

  /// One call per operation (a store without transactions of its own).
  public func commit(_ batch: HandoffStoreBatch) throws {
    for operation in batch.operations {
      switch operation {
      case .save(let note): try save(note)
      case .completeWrite(let type, let path, let note):
        try completeWrite(activityType: type, path: path, saving: note)
      case .increment(let name, let amount): try increment(name, by: amount)
      }
    }
  }

  public func savePending(_ notes: [StoredNote]) throws {
    for note in notes { try savePending(note) }
  }
}

/// A note as the store remembers it: its index entry, and whether it is not
/// in the folder now. A note not in the folder is either *deleted*, a
/// tombstone offered to peers (`entry.deleted`, PROTOCOL.md section 7.2), or
/// *withdrawn*: its file is there but not offered (over the size limit), or
/// it was deleted before this agent made tombstones; a withdrawn note is
/// never offered, and its entry stays so that the same bytes coming back
/// are not a new version. A withdrawn note may be *wanted back* (a held
/// deletion made here and rejected, PROTOCOL.md section 7.4): a peer's copy
/// of the same version is then fetched and written. The `deleted` column
/// holds 0, 1 (withdrawn), 2 (tombstone) or 3 (withdrawn, wanted back).
public struct StoredNote: Sendable, Equatable {
  public var entry: HandoffIndexEntry
  /// Not in the folder now (deleted or withdrawn); set to false (the note is
  /// back), it is no longer a tombstone, nor wanted back, either.
  public var deleted: Bool {
    didSet {
      if !deleted {
        entry.deleted = false
        wanted = false
      }
    }
  }
  /// Withdrawn, and wanted back from a peer (see above).
  public var wanted: Bool

  public init(entry: HandoffIndexEntry, deleted: Bool = false, wanted: Bool = false) {
    self.entry = entry
    self.deleted = deleted || entry.deleted || wanted
    self.wanted = wanted && !entry.deleted
  }

  /// A tombstone of `entry` at `version` (PROTOCOL.md section 7.2).
  public static func tombstone(of entry: HandoffIndexEntry, version: VersionVector, origin: DeviceID)
    -> StoredNote
  {
    var e = entry
    e.version = version
    e.origin = origin
    e.deleted = true
    return StoredNote(entry: e, deleted: true)
  }

  /// In the folder, or a tombstone: what peers are offered (if its folder
  /// is configured and it fits the wire); not a withdrawn note.
  var isOfferedState: Bool { !deleted || entry.deleted }
}

/// A peer seen in a successful session.
public struct PeerRecord: Sendable, Equatable {
  public var device: DeviceID
  public var name: String
  public var lastSeen: Date

  public init(device: DeviceID, name: String, lastSeen: Date) {
    self.device = device
    self.name = name
    self.lastSeen = lastSeen
  }
}

/// One failure to continue an activity (didFailToContinue), for `baton status`.
public struct FailureRecord: Sendable, Equatable {
  public var time: Date
  public var activityType: String
  public var peer: String
  public var reason: String

  public init(time: Date = Date(), activityType: String, peer: String, reason: String) {
    self.time = time
    self.activityType = activityType
    self.peer = peer
    self.reason = reason
  }
}
