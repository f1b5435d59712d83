import BatonHandoff
import BatonNotes
import BatonSystem
import FoundationEssentials
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// The handoff state in SQLite (WAL): this device's key pair (whose public
/// key gives the device id), the index with version vectors, peers, counters,
/// recent failures and the current activity.
///
/// Opening a damaged file moves it aside (`handoff.db.damaged-<time>`, with its
/// `-wal`/`-shm`), starts a new database with a new device key, and says so in
/// `recovery`; the engine then rebuilds the index from the folders.
///
/// The device key is bound to the machine: the database records a digest of
/// the machine id (`/etc/machine-id`) it was made on. Opened on another
/// machine (a state folder copied, restored from a backup elsewhere, or the
/// machine id changed), it takes a new device key, so a new device id, and
/// says so in `deviceChange`: two agents with one device id would resolve
/// concurrent edits by silently overwriting one. The index and its history
/// stay. A database of protocol 6 or before (a random device id, no key)
/// gets its first key the same way, and says so in `deviceChange`.
public final class HandoffStore: HandoffStateStore, Sendable {
  public static let fileName = "handoff.db"
  /// Where the machine id is read, first found first.
  static let machineIDFiles = ["/etc/machine-id", "/var/lib/dbus/machine-id"]
  private let db: Mutex<SQLiteDatabase>
  /// This agent's device key pair (new whenever the database is new, or
  /// opened on another machine); the device id is derived from it.
  public let deviceKey: DeviceKey
  /// Set when a damaged database was moved aside: what happened, for the log.
  public let recovery: String?
  /// Set when the device key was made anew for a database that had one (on
  /// another machine) or had none (protocol 6 and before): what happened,
  /// for the log.
  public let deviceChange: String?
  public let path: String

  /// Opens (or creates) `directory/handoff.db`.
  public convenience init(directory: String) throws(SQLiteError) {
    try self.init(path: directory + "/" + HandoffStore.fileName)
  }

  /// Opens (or creates) `directory/handoff.db` on a thread of its own:
  /// opening checks the whole file (`quick_check`), which blocks for as long
  /// as the file is big, so async code opens the store this way.
  public static func open(directory: String) async throws(SQLiteError) -> HandoffStore {
    try await ThreadExecutor.run(name: "baton-store") { () throws(SQLiteError) in
      try HandoffStore(directory: directory)
    }
  }

  /// - Parameter machineID: this machine's id; nil (no machine id to be
  ///   read) binds nothing and checks nothing.
  public init(path: String, machineID: String? = HandoffStore.currentMachineID())
    throws(SQLiteError)
  {
    self.path = path
    var recovery: String?
    var opened: (SQLiteDatabase, DeviceKey, String?)
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
    var device = opened.1
    let rebound = try HandoffStore.bindToMachine(
      opened.0, path: path, machineID: machineID, device: &device)
    deviceChange = rebound ?? opened.2
    deviceKey = device
    db = Mutex(opened.0)
  }

  /// This machine's id (the first line of `/etc/machine-id`), nil if none.
  public static func currentMachineID() -> String? {
    for file in machineIDFiles {
      guard let bytes = FileManager.default.contents(atPath: file) else { continue }
      let line = String(decoding: bytes, as: UTF8.self).split(separator: "\n").first ?? ""
      let id = String(line.filter { !$0.isWhitespace })
      if !id.isEmpty { return id }
    }
    return nil
  }

  /// Records the machine a database belongs to (a digest, not the id itself:
  /// machine-id(5) asks applications not to store or show it); on another
  /// machine, takes a new device key. Returns what happened when it did.
  private static func bindToMachine(
    _ db: SQLiteDatabase, path: String, machineID: String?, device: inout DeviceKey
  ) throws(SQLiteError) -> String? {
    guard let machineID else { return nil }
    let digest = ContentHash(of: Array("baton device binding\u{0}\(machineID)".utf8)).hex
    let rows = try db.query("SELECT value FROM meta WHERE key = 'machine'")
    let recorded = rows.first?.first?.text
    if recorded == digest { return nil }
    var change: String?
    if recorded != nil {
      let old = device.deviceID
      device = DeviceKey.generate()
      try store(device, in: db)
      change =
        "state database \(path) was made on another machine (its machine id differs:"
        + " a copied or restored state folder, or /etc/machine-id changed); this agent has a"
        + " new device key and is now device \(device.deviceID), no longer \(old), so that its"
        + " edits and those of the agent the folder came from are told apart"
    }
    try db.query("INSERT OR REPLACE INTO meta (key, value) VALUES ('machine', ?)", [.text(digest)])
    return change
  }

  /// Stores a device key: its seed, and the id derived from it for reference.
  private static func store(_ key: DeviceKey, in db: SQLiteDatabase) throws(SQLiteError) {
    try db.query(
      "INSERT OR REPLACE INTO meta (key, value) VALUES ('device_key', ?)", [.blob(key.seed)])
    try db.query(
      "INSERT OR REPLACE INTO meta (key, value) VALUES ('device', ?)",
      [.integer(Int64(bitPattern: key.deviceID.rawValue))])
  }

  /// The database, its device key, and what happened if the key is new in an
  /// existing database (one of protocol 6 or before).
  private static func openChecked(_ path: String) throws(SQLiteError) -> (
    SQLiteDatabase, DeviceKey, String?
  ) {
    restrictAccess(path)
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
        vouchers BLOB, PRIMARY KEY (activity_type, path));
      CREATE TABLE IF NOT EXISTS peers (
        device INTEGER PRIMARY KEY, name TEXT NOT NULL, last_seen REAL NOT NULL);
      CREATE INDEX IF NOT EXISTS peers_by_last_seen ON peers (last_seen);
      CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
      CREATE TABLE IF NOT EXISTS members (digest BLOB PRIMARY KEY, record BLOB NOT NULL);
      CREATE TABLE IF NOT EXISTS pending (
        activity_type TEXT NOT NULL, path TEXT NOT NULL, hash BLOB NOT NULL, size INTEGER NOT NULL,
        version BLOB NOT NULL, origin INTEGER NOT NULL, deleted INTEGER NOT NULL DEFAULT 0,
        vouchers BLOB, PRIMARY KEY (activity_type, path));
      CREATE TABLE IF NOT EXISTS stamps (
        activity_type TEXT NOT NULL, path TEXT NOT NULL, size INTEGER NOT NULL,
        mtime_sec INTEGER NOT NULL, mtime_nsec INTEGER NOT NULL, inode INTEGER NOT NULL,
        hash BLOB NOT NULL, PRIMARY KEY (activity_type, path));
      CREATE TABLE IF NOT EXISTS failures (
        id INTEGER PRIMARY KEY AUTOINCREMENT, time REAL NOT NULL, activity_type TEXT NOT NULL,
        peer TEXT NOT NULL, reason TEXT NOT NULL);
      """)
    // Protocol 9 keeps each note's vouchers (PROTOCOL.md section 7.5); a
    // database of protocol 8 or before gains the column, empty.
    for table in ["notes", "pending"] {
      let columns = try db.query("PRAGMA table_info(\(table))").compactMap { $0.count > 1 ? $0[1].text : nil }
      if !columns.contains("vouchers") {
        try db.execute("ALTER TABLE \(table) ADD COLUMN vouchers BLOB")
      }
    }
    let keys = try db.query("SELECT value FROM meta WHERE key = 'device_key'")
    if let seed = keys.first?.first?.blob, let key = DeviceKey(seed: seed) {
      return (db, key, nil)
    }
    let rows = try db.query("SELECT value FROM meta WHERE key = 'device'")
    let old = rows.first?.first?.integer.map { DeviceID(rawValue: UInt64(bitPattern: $0)) }
    let key = DeviceKey.generate()
    try store(key, in: db)
    try db.query("INSERT OR REPLACE INTO meta (key, value) VALUES ('schema', 1)")
    let change = old.map {
      "state database \(path) is of protocol 6 or before: this agent now has a device key,"
        + " and its device id, derived from the key, is \(key.deviceID), no longer \($0)"
    }
    return (db, key, change)
  }

  /// The database names peers and notes: only its owner may read it. A new
  /// file is created 0600 (SQLite gives its `-wal` and `-shm` the same mode);
  /// an older, more open one is narrowed to 0600. Only `chmod` touches an
  /// existing file: closing another descriptor of an open SQLite database
  /// would drop its locks.
  private static func restrictAccess(_ path: String) {
    let created = try? FileDescriptor.open(
      path, [.writeOnly, .create, .exclusiveCreate], permissions: 0o600)
    created?.closeIgnoringErrors()
    for suffix in ["", "-wal", "-shm"] { _ = chmod(path + suffix, 0o600) }
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
      // Every note of a folder shares one activity type: keep one copy of
      // each type's string, not one per note.
      var types: [String: String] = [:]
      var notes: [StoredNote] = []
      try db.forEachRow(
        "SELECT activity_type, path, hash, size, version, origin, deleted, vouchers FROM notes"
      ) { row in
        guard var note = HandoffStore.note(from: row) else { return }
        let type = note.entry.activityType
        if let shared = types[type] {
          note.entry.activityType = shared
        } else {
          types[type] = type
        }
        notes.append(note)
      }
      return notes
    }
  }

  public func note(activityType: String, path: String) throws(SQLiteError) -> StoredNote? {
    try with { db throws(SQLiteError) in
      try db.query(
        """
        SELECT activity_type, path, hash, size, version, origin, deleted, vouchers FROM notes
        WHERE activity_type = ? AND path = ?
        """, [.text(activityType), .text(path)]
      ).compactMap(HandoffStore.note(from:)).first
    }
  }

  /// Inserts or replaces one note.
  public func save(_ note: StoredNote) throws(SQLiteError) {
    try with { db throws(SQLiteError) in try Self.insert(note, into: "notes", db) }
  }

  private static func insert(_ note: StoredNote, into table: String, _ db: SQLiteDatabase)
    throws(SQLiteError)
  {
    let e = note.entry
    try db.query(
      """
      INSERT OR REPLACE INTO \(table)
        (activity_type, path, hash, size, version, origin, deleted, vouchers)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?)
      """,
      [
        .text(e.activityType), .text(e.path), .blob(e.hash.bytes), .integer(Int64(e.size)),
        .blob(e.version.encoded), .integer(Int64(bitPattern: e.origin.rawValue)),
        .integer(e.deleted ? 2 : note.wanted ? 3 : note.deleted ? 1 : 0),
        e.vouchers.storedBytes.map(SQLiteDatabase.Value.blob) ?? .null,
      ])
  }

  // MARK: Write-back intents

  /// Records, before an incoming note's file is written, what the index will
  /// say once it is: a kill between the write and `completeWrite` leaves this
  /// record, and the next start adopts the note instead of taking the new file
  /// for a local edit.
  public func savePending(_ note: StoredNote) throws(SQLiteError) {
    try with { db throws(SQLiteError) in try Self.insert(note, into: "pending", db) }
  }

  /// Write-back intents left by a process that stopped between writing a
  /// file and recording it.
  public func pendingWrites() throws(SQLiteError) -> [StoredNote] {
    try with { db throws(SQLiteError) in
      try db.query("SELECT activity_type, path, hash, size, version, origin, deleted, vouchers FROM pending")
        .compactMap(HandoffStore.note(from:))
    }
  }

  /// Forgets the intent for one note; with `note`, saves it in the same
  /// transaction (the write happened).
  public func completeWrite(activityType: String, path: String, saving note: StoredNote?)
    throws(SQLiteError)
  {
    try with { db throws(SQLiteError) in
      try db.transaction { () throws(SQLiteError) in
        try db.query(
          "DELETE FROM pending WHERE activity_type = ? AND path = ?",
          [.text(activityType), .text(path)])
        if let note { try Self.insert(note, into: "notes", db) }
      }
    }
  }

  /// Write-back intents for several notes, in one transaction.
  public func savePending(_ notes: [StoredNote]) throws(SQLiteError) {
    guard !notes.isEmpty else { return }
    try with { db throws(SQLiteError) in
      try db.transaction { () throws(SQLiteError) in
        for note in notes { try Self.insert(note, into: "pending", db) }
      }
    }
  }

  /// Several updates in order, in one transaction.
  public func commit(_ batch: HandoffStoreBatch) throws(SQLiteError) {
    guard !batch.isEmpty else { return }
    try with { db throws(SQLiteError) in
      try db.transaction { () throws(SQLiteError) in
        for operation in batch.operations {
          switch operation {
          case .save(let note):
            try Self.insert(note, into: "notes", db)
          case .completeWrite(let type, let path, let note):
            try db.query(
              "DELETE FROM pending WHERE activity_type = ? AND path = ?", [.text(type), .text(path)])
            if let note { try Self.insert(note, into: "notes", db) }
          case .increment(let name, let amount):
            try Self.increment(name, by: amount, db)
          }
        }
      }
    }
  }

  private static func note(from row: [SQLiteDatabase.Value]) -> StoredNote? {
    guard row.count == 8, let type = row[0].text, let path = row[1].text,
      let hash = row[2].blob.flatMap(ContentHash.init(bytes:)), let size = row[3].integer,
      let versionBytes = row[4].blob, let version = try? VersionVector.decode(versionBytes),
      let origin = row[5].integer, let deleted = row[6].integer
    else { return nil }
    // Vouchers that do not read back whole are dropped: the note's counters
    // then count as made before protocol 9 (PROTOCOL.md section 7.5).
    let vouchers = row[7].blob.flatMap(Vouchers.init(storedBytes:))?.restricted(to: version)
    return StoredNote(
      entry: HandoffIndexEntry(
        activityType: type, path: path, hash: hash, size: Int(size), version: version,
        vouchers: vouchers ?? Vouchers(), origin: DeviceID(rawValue: UInt64(bitPattern: origin)),
        deleted: deleted == 2),
      deleted: deleted != 0, wanted: deleted == 3)
  }

  // MARK: File stamps

  /// What each note file of a folder was when last hashed (size, time,
  /// inode, hash), so that a start need not read unchanged files again.
  public func fileStamps(activityType: String) throws(SQLiteError) -> [NoteFileStamp] {
    try with { db throws(SQLiteError) in
      var stamps: [NoteFileStamp] = []
      try db.forEachRow(
        """
        SELECT path, size, mtime_sec, mtime_nsec, inode, hash FROM stamps
        WHERE activity_type = ?
        """, [.text(activityType)]
      ) { row in
        guard row.count == 6, let path = row[0].text, let size = row[1].integer,
          let seconds = row[2].integer, let nanoseconds = row[3].integer,
          let inode = row[4].integer, let hash = row[5].blob.flatMap(ContentHash.init(bytes:))
        else { return }
        stamps.append(
          NoteFileStamp(
            relativePath: path, size: Int(size), modifiedSeconds: seconds,
            modifiedNanoseconds: nanoseconds, inode: UInt64(bitPattern: inode), hash: hash))
      }
      return stamps
    }
  }

  /// Records stamps of a folder's files (one transaction).
  public func saveFileStamps(_ stamps: [NoteFileStamp], activityType: String) throws(SQLiteError) {
    guard !stamps.isEmpty else { return }
    try with { db throws(SQLiteError) in
      try db.transaction { () throws(SQLiteError) in
        for s in stamps {
          try db.query(
            """
            INSERT OR REPLACE INTO stamps
              (activity_type, path, size, mtime_sec, mtime_nsec, inode, hash)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            """,
            [
              .text(activityType), .text(s.relativePath), .integer(Int64(s.size)),
              .integer(s.modifiedSeconds), .integer(s.modifiedNanoseconds),
              .integer(Int64(bitPattern: s.inode)), .blob(s.hash.bytes),
            ])
        }
      }
    }
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

  /// The identity (device and inode, `NotesFolder.identity`) of the folder
  /// of `activityType` at the last start; nil if never recorded.
  public func folderIdentity(activityType: String) throws(SQLiteError) -> String? {
    try with { db throws(SQLiteError) in
      try db.query("SELECT value FROM meta WHERE key = ?", [.text("folder:" + activityType)])
        .first?.first?.text
    }
  }

  public func setFolderIdentity(_ identity: String, activityType: String) throws(SQLiteError) {
    try with { db throws(SQLiteError) in
      try db.query(
        "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
        [.text("folder:" + activityType), .text(identity)])
    }
  }

  // MARK: Membership

  public func membershipRecords() throws(SQLiteError) -> [[UInt8]] {
    try with { db throws(SQLiteError) in
      try db.query("SELECT record FROM members ORDER BY digest").compactMap { $0[0].blob }
    }
  }

  public func saveMembershipRecords(_ records: [[UInt8]]) throws(SQLiteError) {
    guard !records.isEmpty else { return }
    try with { db throws(SQLiteError) in
      try db.transaction { () throws(SQLiteError) in
        for record in records {
          try db.query(
            "INSERT OR IGNORE INTO members (digest, record) VALUES (?, ?)",
            [.blob(ContentHash(of: record).bytes), .blob(record)])
        }
      }
    }
  }

  // MARK: Peers

  /// The most peers kept. Every device id a key holder claims is recorded,
  /// and every unknown address is checked against every peer, so past this
  /// the peers seen longest ago are forgotten (a forgotten peer is recorded
  /// again the next time it is met).
  public static let maximumPeers = 1024

  public func recordPeer(_ peer: PeerRecord) throws(SQLiteError) {
    try with { db throws(SQLiteError) in
      try db.transaction { () throws(SQLiteError) in
        try db.query(
          "INSERT OR REPLACE INTO peers (device, name, last_seen) VALUES (?, ?, ?)",
          [
            .integer(Int64(bitPattern: peer.device.rawValue)), .text(peer.name),
            .real(peer.lastSeen.timeIntervalSince1970),
          ])
        let count = try db.query("SELECT COUNT(*) FROM peers").first?.first?.integer ?? 0
        if count > Int64(Self.maximumPeers) {
          // The index on last_seen makes this a short walk from the oldest.
          try db.query(
            """
            DELETE FROM peers WHERE device IN
              (SELECT device FROM peers ORDER BY last_seen ASC LIMIT ?)
            """, [.integer(count &- Int64(Self.maximumPeers))])
        }
      }
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
    try with { db throws(SQLiteError) in try Self.increment(counter, by: amount, db) }
  }

  private static func increment(_ counter: String, by amount: Int, _ db: SQLiteDatabase)
    throws(SQLiteError)
  {
    try db.query(
      """
      INSERT INTO counters (name, value) VALUES (?, ?)
      ON CONFLICT(name) DO UPDATE SET value = value + excluded.value
      """, [.text(counter), .integer(Int64(amount))])
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
