import FoundationEssentials
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// A note as the store remembers it: its index entry, and whether the file was
/// deleted locally (deletions are not propagated; the entry stays so that an
/// old copy from a peer is not fetched back).
public struct StoredNote: Sendable, Equatable {
  public var entry: HandoffIndexEntry
  public var deleted: Bool

  public init(entry: HandoffIndexEntry, deleted: Bool = false) {
    self.entry = entry
    self.deleted = deleted
  }
}

/// A peer seen in a successful session.
public struct PeerRecord: Sendable, Equatable {
  public var device: DeviceID
  public var name: String
  public var lastSeen: Date
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

/// The handoff state in SQLite (WAL): this device's id, the index with version
/// vectors, peers, counters, recent failures and the current activity.
///
/// Opening a damaged file moves it aside (`handoff.db.damaged-<time>`, with its
/// `-wal`/`-shm`), starts a new database with a new device id, and says so in
/// `recovery`; the engine then rebuilds the index from the folders.
public final class HandoffStore: Sendable {
  public static let fileName = "handoff.db"
  private let db: Mutex<SQLiteDatabase>
  /// This agent's device id (new whenever the database is new).
  public let deviceID: DeviceID
  /// Set when a damaged database was moved aside: what happened, for the log.
  public let recovery: String?
  public let path: String

  /// Opens (or creates) `directory/handoff.db`.
  public convenience init(directory: String) throws(SQLiteError) {
    try self.init(path: directory + "/" + HandoffStore.fileName)
  }

  public init(path: String) throws(SQLiteError) {
    self.path = path
    var recovery: String?
    var opened: (SQLiteDatabase, DeviceID)
    do {
      opened = try HandoffStore.openChecked(path)
    } catch let error where error.isDamage {
      let aside = path + ".damaged-\(Int(Date().timeIntervalSince1970))"
      for suffix in ["", "-wal", "-shm"] {
        _ = rename(path + suffix, aside + suffix)
      }
      recovery =
        "state database \(path) is damaged (\(error.message)); moved it to \(aside) and"
        + " started a new one, rebuilt from the notes folders"
      opened = try HandoffStore.openChecked(path)
    }
    self.recovery = recovery
    deviceID = opened.1
    db = Mutex(opened.0)
  }

  private static func openChecked(_ path: String) throws(SQLiteError) -> (SQLiteDatabase, DeviceID)
  {
    let db = try SQLiteDatabase(path: path)
    try db.execute("PRAGMA journal_mode=WAL")
    try db.execute("PRAGMA synchronous=NORMAL")
    let check = try db.query("PRAGMA quick_check")
    guard check.first?.first?.text == "ok" else {
      throw SQLiteError(
        code: 11, message: check.first?.first?.text ?? "quick_check failed",
        context: "checking \(path)")
    }
    try db.execute(
      """
      CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value BLOB);
      CREATE TABLE IF NOT EXISTS notes (
        activity_type TEXT NOT NULL, path TEXT NOT NULL, hash BLOB NOT NULL, size INTEGER NOT NULL,
        version BLOB NOT NULL, origin INTEGER NOT NULL, deleted INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (activity_type, path));
      CREATE TABLE IF NOT EXISTS peers (
        device INTEGER PRIMARY KEY, name TEXT NOT NULL, last_seen REAL NOT NULL);
      CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
      CREATE TABLE IF NOT EXISTS failures (
        id INTEGER PRIMARY KEY AUTOINCREMENT, time REAL NOT NULL, activity_type TEXT NOT NULL,
        peer TEXT NOT NULL, reason TEXT NOT NULL);
      """)
    let rows = try db.query("SELECT value FROM meta WHERE key = 'device'")
    if let value = rows.first?.first?.integer, value != 0 {
      return (db, DeviceID(rawValue: UInt64(bitPattern: value)))
    }
    let device = DeviceID.random()
    try db.query(
      "INSERT OR REPLACE INTO meta (key, value) VALUES ('device', ?)",
      [.integer(Int64(bitPattern: device.rawValue))])
    try db.query("INSERT OR REPLACE INTO meta (key, value) VALUES ('schema', 1)")
    return (db, device)
  }

  @discardableResult
  private func with<T: Sendable>(_ body: (SQLiteDatabase) throws(SQLiteError) -> T)
    throws(SQLiteError) -> T
  {
    try db.withLock { (db: inout SQLiteDatabase) throws(SQLiteError) -> T in try body(db) }
  }

  // MARK: Index

  /// Every stored note, deleted ones included.
  public func notes() throws(SQLiteError) -> [StoredNote] {
    try with { db throws(SQLiteError) in
      try db.query("SELECT activity_type, path, hash, size, version, origin, deleted FROM notes")
        .compactMap(HandoffStore.note(from:))
    }
  }

  public func note(activityType: String, path: String) throws(SQLiteError) -> StoredNote? {
    try with { db throws(SQLiteError) in
      try db.query(
        """
        SELECT activity_type, path, hash, size, version, origin, deleted FROM notes
        WHERE activity_type = ? AND path = ?
        """, [.text(activityType), .text(path)]
      ).compactMap(HandoffStore.note(from:)).first
    }
  }

  /// Inserts or replaces one note.
  public func save(_ note: StoredNote) throws(SQLiteError) {
    let e = note.entry
    try with { db throws(SQLiteError) in
      try db.query(
        """
        INSERT OR REPLACE INTO notes (activity_type, path, hash, size, version, origin, deleted)
        VALUES (?, ?, ?, ?, ?, ?, ?)
        """,
        [
          .text(e.activityType), .text(e.path), .blob(e.hash.bytes), .integer(Int64(e.size)),
          .blob(e.version.encoded), .integer(Int64(bitPattern: e.origin.rawValue)),
          .integer(note.deleted ? 1 : 0),
        ])
    }
  }

  private static func note(from row: [SQLiteDatabase.Value]) -> StoredNote? {
    guard row.count == 7, let type = row[0].text, let path = row[1].text,
      let hash = row[2].blob.flatMap(ContentHash.init(bytes:)), let size = row[3].integer,
      let versionBytes = row[4].blob, let version = try? VersionVector.decode(versionBytes),
      let origin = row[5].integer, let deleted = row[6].integer
    else { return nil }
    return StoredNote(
      entry: HandoffIndexEntry(
        activityType: type, path: path, hash: hash, size: Int(size), version: version,
        origin: DeviceID(rawValue: UInt64(bitPattern: origin))),
      deleted: deleted != 0)
  }

  // MARK: Meta

  /// The current activity (type and path), remembered across restarts.
  public func currentActivity() throws(SQLiteError) -> (activityType: String, path: String)? {
    try with { db throws(SQLiteError) in
      let rows = try db.query(
        "SELECT key, value FROM meta WHERE key IN ('current_type', 'current_path')")
      var values: [String: String] = [:]
      for row in rows {
        if let key = row[0].text, let value = row[1].text { values[key] = value }
      }
      guard let type = values["current_type"], let path = values["current_path"] else { return nil }
      return (type, path)
    }
  }

  public func setCurrentActivity(activityType: String, path: String) throws(SQLiteError) {
    try with { db throws(SQLiteError) in
      try db.transaction { () throws(SQLiteError) in
        try db.query(
          "INSERT OR REPLACE INTO meta VALUES ('current_type', ?)", [.text(activityType)])
        try db.query("INSERT OR REPLACE INTO meta VALUES ('current_path', ?)", [.text(path)])
      }
    }
  }

  // MARK: Peers

  public func recordPeer(_ peer: PeerRecord) throws(SQLiteError) {
    try with { db throws(SQLiteError) in
      try db.query(
        "INSERT OR REPLACE INTO peers (device, name, last_seen) VALUES (?, ?, ?)",
        [
          .integer(Int64(bitPattern: peer.device.rawValue)), .text(peer.name),
          .real(peer.lastSeen.timeIntervalSince1970),
        ])
    }
  }

  public func peers() throws(SQLiteError) -> [PeerRecord] {
    try with { db throws(SQLiteError) in
      try db.query("SELECT device, name, last_seen FROM peers ORDER BY last_seen DESC").compactMap {
        guard let device = $0[0].integer, let name = $0[1].text, let seen = $0[2].real else {
          return nil
        }
        return PeerRecord(
          device: DeviceID(rawValue: UInt64(bitPattern: device)), name: name,
          lastSeen: Date(timeIntervalSince1970: seen))
      }
    }
  }

  // MARK: Counters and failures

  public func increment(_ counter: String, by amount: Int = 1) throws(SQLiteError) {
    try with { db throws(SQLiteError) in
      try db.query(
        """
        INSERT INTO counters (name, value) VALUES (?, ?)
        ON CONFLICT(name) DO UPDATE SET value = value + excluded.value
        """, [.text(counter), .integer(Int64(amount))])
    }
  }

  public func counters() throws(SQLiteError) -> [String: Int] {
    try with { db throws(SQLiteError) in
      var out: [String: Int] = [:]
      for row in try db.query("SELECT name, value FROM counters") {
        if let name = row[0].text, let value = row[1].integer { out[name] = Int(value) }
      }
      return out
    }
  }

  /// Records a failure, keeping only the newest `keep`.
  public func recordFailure(_ failure: FailureRecord, keep: Int) throws(SQLiteError) {
    try with { db throws(SQLiteError) in
      try db.query(
        "INSERT INTO failures (time, activity_type, peer, reason) VALUES (?, ?, ?, ?)",
        [
          .real(failure.time.timeIntervalSince1970), .text(failure.activityType),
          .text(failure.peer), .text(failure.reason),
        ])
      try db.query(
        "DELETE FROM failures WHERE id NOT IN (SELECT id FROM failures ORDER BY id DESC LIMIT ?)",
        [.integer(Int64(keep))])
    }
  }

  /// The newest failures first.
  public func failures() throws(SQLiteError) -> [FailureRecord] {
    try with { db throws(SQLiteError) in
      try db.query("SELECT time, activity_type, peer, reason FROM failures ORDER BY id DESC")
        .compactMap {
          guard let time = $0[0].real, let type = $0[1].text, let peer = $0[2].text,
            let reason = $0[3].text
          else { return nil }
          return FailureRecord(
            time: Date(timeIntervalSince1970: time), activityType: type, peer: peer,
            reason: reason)
        }
    }
  }
}
