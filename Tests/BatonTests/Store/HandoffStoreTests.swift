import Foundation
import Testing

@testable import BatonHandoff
@testable import BatonStore
@testable import BatonSystem

@Suite struct HandoffStoreTests {
  func entry(_ path: String, _ text: String, _ device: DeviceID) -> HandoffIndexEntry {
    HandoffIndexEntry(
      activityType: "org.example.notes", path: path, hash: ContentHash(of: Array(text.utf8)),
      size: text.utf8.count, version: VersionVector([device: 3]), origin: device)
  }

  @Test func everythingSurvivesReopening() throws {
    let dir = try TestEnvironment.temporaryDirectory("store").path
    let device: DeviceID
    do {
      let store = try HandoffStore(directory: dir)
      device = store.deviceID
      try store.save(StoredNote(entry: entry("a.md", "A", device)))
      try store.save(StoredNote(entry: entry("b.md", "B", device), deleted: true))
      try store.setCurrentActivity(activityType: "org.example.notes", path: "a.md")
      try store.recordPeer(
        PeerRecord(
          device: DeviceID(rawValue: 42), name: "bob", lastSeen: Date(timeIntervalSince1970: 1000)))
      try store.increment("sent", by: 2)
      try store.increment("sent")
      for i in 0..<5 {
        try store.recordFailure(
          FailureRecord(activityType: "t", peer: "p", reason: "r\(i)"), keep: 3)
      }
      #expect(store.recovery == nil)
    }
    let store = try HandoffStore(directory: dir)
    #expect(store.deviceID == device)
    #expect(store.recovery == nil)
    let notes = try store.notes().sorted { $0.entry.path < $1.entry.path }
    #expect(
      notes == [
        StoredNote(entry: entry("a.md", "A", device)),
        StoredNote(entry: entry("b.md", "B", device), deleted: true),
      ])
    #expect(
      try store.note(activityType: "org.example.notes", path: "a.md")?.entry.version
        == VersionVector([device: 3]))
    #expect(try store.currentActivity()?.path == "a.md")
    #expect(
      try store.peers() == [
        PeerRecord(
          device: DeviceID(rawValue: 42), name: "bob", lastSeen: Date(timeIntervalSince1970: 1000))
      ])
    #expect(try store.counters()["sent"] == 3)
    #expect(try store.failures().map(\.reason) == ["r4", "r3", "r2"])
    let header = String(
      decoding: FileManager.default.contents(atPath: dir + "/handoff.db").map(Array.init) ?? [],
      as: UTF8.self)
    #expect(header.hasPrefix("SQLite format 3"))
    #expect(try store.journalMode() == "wal")
  }

  /// Issue 16 item 7: a state folder copied to another machine (or a changed
  /// machine id) gets a new device id, with a message; the index stays.
  @Test func aDatabaseOpenedOnAnotherMachineTakesANewDeviceID() throws {
    let dir = try TestEnvironment.temporaryDirectory("store").path
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let path = dir + "/" + HandoffStore.fileName
    let original: DeviceID
    do {
      let store = try HandoffStore(path: path, machineID: "aaaa1111")
      original = store.deviceID
      #expect(store.deviceChange == nil)
      try store.save(StoredNote(entry: entry("a.md", "A", original)))
    }
    // Same machine: same id, every time.
    #expect(try HandoffStore(path: path, machineID: "aaaa1111").deviceID == original)
    let copied = try HandoffStore(path: path, machineID: "bbbb2222")
    #expect(copied.deviceID != original)
    let message = try #require(copied.deviceChange)
    #expect(message.contains("was made on another machine"), "\(message)")
    #expect(message.contains("now device \(copied.deviceID), no longer \(original)"), "\(message)")
    // The history stays: the note and its version under the old id.
    #expect(
      try copied.note(activityType: "org.example.notes", path: "a.md")?.entry.version
        == VersionVector([original: 3]))
    // The new machine is now the database's own: no second change.
    let again = try HandoffStore(path: path, machineID: "bbbb2222")
    #expect(again.deviceID == copied.deviceID)
    #expect(again.deviceChange == nil)
    // The machine id itself is not stored, only a digest of it.
    let bytes = FileManager.default.contents(atPath: path).map(Array.init) ?? []
    #expect(!String(decoding: bytes, as: UTF8.self).contains("bbbb2222"))
  }

  /// Protocol 7: a database of protocol 6 or before (a random device id, no
  /// device key) gets a device key, and the id derived from it, with a
  /// message; the key then stays, and the history under the old id too.
  @Test func aDatabaseWithoutADeviceKeyGetsOneAndSaysSo() throws {
    let dir = try TestEnvironment.temporaryDirectory("store").path
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let path = dir + "/" + HandoffStore.fileName
    let old = DeviceID(rawValue: 0x1234_5678)
    do {
      let store = try HandoffStore(path: path, machineID: "aaaa1111")
      try store.save(StoredNote(entry: entry("a.md", "A", old)))
    }
    do {
      let db = try SQLiteDatabase(path: path)
      try db.query("DELETE FROM meta WHERE key = 'device_key'")
      try db.query(
        "INSERT OR REPLACE INTO meta (key, value) VALUES ('device', ?)",
        [.integer(Int64(old.rawValue))])
    }
    let upgraded = try HandoffStore(path: path, machineID: "aaaa1111")
    #expect(upgraded.deviceID != old)
    #expect(upgraded.deviceID == upgraded.deviceKey.publicKey.deviceID)
    let message = try #require(upgraded.deviceChange)
    #expect(message.contains("protocol 6 or before"), "\(message)")
    #expect(message.contains("is \(upgraded.deviceID), no longer \(old)"), "\(message)")
    #expect(
      try upgraded.note(activityType: "org.example.notes", path: "a.md")?.entry.version
        == VersionVector([old: 3]))
    let again = try HandoffStore(path: path, machineID: "aaaa1111")
    #expect(again.deviceKey.publicKey == upgraded.deviceKey.publicKey)
    #expect(again.deviceChange == nil)
  }

  /// A database from before the binding adopts the machine it is opened on,
  /// keeping its id; with no machine id to read, nothing is bound.
  @Test func anUnboundDatabaseAdoptsTheMachineAndKeepsItsID() throws {
    let dir = try TestEnvironment.temporaryDirectory("store").path
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let path = dir + "/" + HandoffStore.fileName
    let original = try HandoffStore(path: path, machineID: nil).deviceID
    let adopted = try HandoffStore(path: path, machineID: "cccc3333")
    #expect(adopted.deviceID == original)
    #expect(adopted.deviceChange == nil)
    #expect(try HandoffStore(path: path, machineID: nil).deviceID == original)
    #expect(try HandoffStore(path: path, machineID: "dddd4444").deviceID != original)
  }

  @Test func theMachineIDIsReadFromEtc() {
    let expected = (try? String(contentsOfFile: "/etc/machine-id", encoding: .utf8))?
      .trimmingCharacters(in: .whitespacesAndNewlines)
    if let expected, !expected.isEmpty {
      #expect(HandoffStore.currentMachineID() == expected)
    }
  }

  /// It names peers and notes: owner only, whatever the umask (issue 13, bug 8).
  @Test func databaseIsCreatedOwnerOnlyAndAnOlderOpenOneIsNarrowed() throws {
    func mode(_ path: String) -> mode_t? {
      var info = stat()
      return stat(path, &info) == 0 ? info.st_mode & 0o777 : nil
    }
    let dir = try TestEnvironment.temporaryDirectory("store-mode").path
    let path = dir + "/" + HandoffStore.fileName
    let old = umask(0o022)
    defer { umask(old) }
    do {
      let store = try HandoffStore(directory: dir)
      try store.save(StoredNote(entry: entry("a.md", "A", store.deviceID)))
      for suffix in ["", "-wal", "-shm"] {
        #expect(mode(path + suffix) == 0o600, "handoff.db\(suffix)")
      }
    }
    // A database created 0644 by an older version.
    for suffix in ["", "-wal", "-shm"] { chmod(path + suffix, 0o644) }
    let reopened = try HandoffStore(directory: dir)
    #expect(try reopened.notes().count == 1)
    for suffix in ["", "-wal", "-shm"] where mode(path + suffix) != nil {
      #expect(mode(path + suffix) == 0o600, "handoff.db\(suffix)")
    }
  }

  @Test func damagedDatabaseIsMovedAsideAndRebuiltWithoutLosingNotes() async throws {
    let key = GroupKey.generate()
    let a = try HandoffTestAgent("alice", key: key)
    for i in 0..<4 { await a.save("n\(i).md", "note \(i)") }
    let oldID = a.engine.deviceID
    let path = a.stateDirectory + "/handoff.db"
    // Checkpoint-free damage: overwrite the header and some pages with junk.
    var bytes = try #require(FileManager.default.contents(atPath: path)).map { $0 }
    for i in 0..<min(bytes.count, 4096) { bytes[i] = UInt8(truncatingIfNeeded: i &* 31 &+ 7) }
    try Data(bytes).write(to: URL(fileURLWithPath: path))
    try? FileManager.default.removeItem(atPath: path + "-wal")

    let b = try HandoffTestAgent("bob", key: key)
    let restarted = try a.restarted()
    let status = await restarted.engine.status()
    #expect(restarted.engine.deviceID != oldID)
    #expect(status.noteCount == 4)  // rebuilt from the folder
    #expect(status.storeRecovery?.contains("damaged") == true)
    let aside = try FileManager.default.contentsOfDirectory(atPath: a.stateDirectory)
      .filter { $0.hasPrefix("handoff.db.damaged-") }
    #expect(!aside.isEmpty)
    // And it still syncs: bob gets all four notes.
    let (r1, r2) = await runSession(b, restarted)
    #expect(r1.succeeded && r2.succeeded)
    #expect(b.folder.contents == a.folder.contents)
  }

  @Test func damagedPageInsideTheFileIsDetected() throws {
    let dir = try TestEnvironment.temporaryDirectory("store").path
    do {
      let store = try HandoffStore(directory: dir)
      for i in 0..<400 {
        try store.save(
          StoredNote(
            entry: entry("dir/note-\(i).md", String(repeating: "x", count: i), store.deviceID)))
      }
    }  // the last connection closes: the WAL is checkpointed into the main file
    let path = dir + "/handoff.db"
    var bytes = try #require(FileManager.default.contents(atPath: path)).map { $0 }
    #expect(bytes.count >= 4 * 4096)
    for i in (2 * 4096)..<(3 * 4096) { bytes[i] = UInt8(truncatingIfNeeded: i &* 131) }
    try Data(bytes).write(to: URL(fileURLWithPath: path))
    let store = try HandoffStore(directory: dir)
    #expect(store.recovery != nil)
    #expect(try store.notes().isEmpty)  // a fresh database; the engine rebuilds it from the folders
  }

  @Test func notADatabaseAtAllIsRecovered() throws {
    let dir = try TestEnvironment.temporaryDirectory("store").path
    try Data("this is not sqlite, just text\n".utf8).write(
      to: URL(fileURLWithPath: dir + "/handoff.db"))
    let store = try HandoffStore(directory: dir)
    #expect(store.recovery?.contains("damaged") == true)
    try store.increment("x")
    #expect(try store.counters()["x"] == 1)
  }

  @Test func unreadableDirectoryIsAnErrorNotARecovery() throws {
    #expect(throws: SQLiteError.self) {
      _ = try HandoffStore(directory: "/nonexistent/baton-state")
    }
  }

  /// Protocol 9: a note's vouchers are kept; a database of protocol 8 (no
  /// vouchers column) gains the column, and its notes read with none.
  @Test func vouchersAreKeptAndAnOlderDatabaseGainsTheirColumn() throws {
    let dir = try TestEnvironment.temporaryDirectory("store").path
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let path = dir + "/" + HandoffStore.fileName
    let key = DeviceKey.generate()
    var e = HandoffIndexEntry(
      activityType: "org.example.notes", path: "a.md", hash: ContentHash(of: Array("A".utf8)),
      size: 1, version: VersionVector([key.deviceID: 3]), origin: key.deviceID)
    e.vouchers = Vouchers().signed(by: key, type: e.activityType, path: e.path, version: e.version)
    do {
      let store = try HandoffStore(path: path, machineID: "aaaa1111")
      try store.save(StoredNote(entry: e))
      #expect(try store.note(activityType: e.activityType, path: "a.md")?.entry.vouchers == e.vouchers)
    }
    do {
      // What a protocol 8 agent left: the same table without the column.
      let db = try SQLiteDatabase(path: path)
      try db.execute(
        """
        CREATE TABLE old (
          activity_type TEXT NOT NULL, path TEXT NOT NULL, hash BLOB NOT NULL,
          size INTEGER NOT NULL, version BLOB NOT NULL, origin INTEGER NOT NULL,
          deleted INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (activity_type, path));
        INSERT INTO old SELECT activity_type, path, hash, size, version, origin, deleted FROM notes;
        DROP TABLE notes; ALTER TABLE old RENAME TO notes;
        """)
    }
    let upgraded = try HandoffStore(path: path, machineID: "aaaa1111")
    let read = try #require(try upgraded.note(activityType: e.activityType, path: "a.md"))
    #expect(read.entry.version == e.version && read.entry.vouchers.isEmpty)
    try upgraded.save(StoredNote(entry: e))
    #expect(try upgraded.note(activityType: e.activityType, path: "a.md")?.entry.vouchers == e.vouchers)
  }
}

extension HandoffStore {
  func journalMode() throws -> String? {
    try SQLiteDatabase(path: path).query("PRAGMA journal_mode").first?.first?.text
  }

}


@Suite struct PeersTableBoundTests {
  /// A key holder that claims a new device id on every connection adds a
  /// row each time; the table keeps the `maximumPeers` seen most recently.
  @Test func thePeersTableKeepsTheMostRecentlySeen() throws {
    let dir = try TestEnvironment.temporaryDirectory("store").path
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let store = try HandoffStore(directory: dir)
    let maximum = HandoffStore.maximumPeers
    let total = maximum + 50
    for i in 0..<total {
      try store.recordPeer(
        PeerRecord(
          device: DeviceID(rawValue: UInt64(i + 1)), name: "claimed-\(i)",
          lastSeen: Date(timeIntervalSince1970: Double(1000 + i))))
    }
    let peers = try store.peers()
    #expect(peers.count == maximum)
    #expect(peers.first?.name == "claimed-\(total - 1)")
    #expect(peers.last?.name == "claimed-\(total - maximum)")
    // A peer seen again stays, whatever its id's age.
    try store.recordPeer(
      PeerRecord(
        device: DeviceID(rawValue: UInt64(total)), name: "claimed-\(total - 1)",
        lastSeen: Date(timeIntervalSince1970: Double(1000 + total))))
    #expect(try store.peers().count == maximum)
  }

  @Test func thePeersTableHasAnIndexOnLastSeen() throws {
    let dir = try TestEnvironment.temporaryDirectory("store").path
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let path = dir + "/" + HandoffStore.fileName
    _ = try HandoffStore(path: path)
    let db = try SQLiteDatabase(path: path)
    let rows = try db.query(
      "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'peers'")
    let names: [String] = rows.compactMap { row in row.first.flatMap { $0.text } }
    #expect(names.contains("peers_by_last_seen"))
  }
}
