import Foundation
import Testing

@testable import BatonHandoff
@testable import BatonNotes
@testable import BatonStore
@testable import BatonSystem

/// A state store whose `save` blocks while the gate is closed (a disk that
/// takes its time over an fsync), recording which thread it blocked.
private final class StallingStore: HandoffStateStore, @unchecked Sendable {
  let inner: HandoffStore
  let gate: Gate
  private let lock = ConditionLock()
  private var blocked: [String] = []  // guarded by `lock`

  init(directory: String, gate: Gate) throws {
    inner = try HandoffStore(directory: directory)
    self.gate = gate
  }

  /// The names of the threads blocked in `save` now.
  var blockedThreads: [String] { lock.withLock { blocked } }

  var deviceKey: DeviceKey { inner.deviceKey }
  var recovery: String? { inner.recovery }
  func notes() throws -> [StoredNote] { try inner.notes() }
  func save(_ note: StoredNote) throws {
    let name = Threads.currentName
    lock.withLock { blocked.append(name) }
    gate.pass()
    lock.withLock { blocked.remove(at: blocked.firstIndex(of: name)!) }
    try inner.save(note)
  }
  func savePending(_ note: StoredNote) throws { try inner.savePending(note) }
  func membershipRecords() throws -> [[UInt8]] { try inner.membershipRecords() }
  func saveMembershipRecords(_ records: [[UInt8]]) throws {
    try inner.saveMembershipRecords(records)
  }
  func pendingWrites() throws -> [StoredNote] { try inner.pendingWrites() }
  func completeWrite(activityType: String, path: String, saving note: StoredNote?) throws {
    try inner.completeWrite(activityType: activityType, path: path, saving: note)
  }
  func currentActivity() throws -> (activityType: String, path: String)? {
    try inner.currentActivity()
  }
  func setCurrentActivity(activityType: String, path: String) throws {
    try inner.setCurrentActivity(activityType: activityType, path: path)
  }
  func recordPeer(_ peer: PeerRecord) throws { try inner.recordPeer(peer) }
  func peers() throws -> [PeerRecord] { try inner.peers() }
  func increment(_ counter: String, by amount: Int) throws {
    try inner.increment(counter, by: amount)
  }
  func counters() throws -> [String: Int] { try inner.counters() }
  func recordFailure(_ failure: FailureRecord, keep: Int) throws {
    try inner.recordFailure(failure, keep: keep)
  }
  func failures() throws -> [FailureRecord] { try inner.failures() }
}

/// Closed until `open()`; a watchdog thread opens it after `limit` whatever
/// happens, so that a test that parks every pool thread fails instead of
/// hanging, and says so (`openedByWatchdog`).
private final class Gate: @unchecked Sendable {
  private let lock = ConditionLock()
  private var isOpen = false  // guarded by `lock`
  private var byWatchdog = false  // guarded by `lock`

  init(limit: Duration) {
    let deadline = MonotonicTime.deadline(after: limit)
    OwnedThread.start(name: "test-watchdog") { [self] in
      lock.withLock {
        while !isOpen && MonotonicTime.now() < deadline { lock.wait(until: deadline) }
        if !isOpen { byWatchdog = true }
        isOpen = true
      }
      lock.broadcast()
    }
  }

  var openedByWatchdog: Bool { lock.withLock { byWatchdog } }

  func open() {
    lock.withLock { isOpen = true }
    lock.broadcast()
  }

  /// Blocks the calling thread until the gate is open.
  func pass() {
    lock.withLock { while !isOpen { lock.wait() } }
  }
}

/// The engine's blocking work (SQLite writes, fsyncs) runs on a thread of its
/// own, so a slow disk never parks a thread of Swift's pool.
@Suite struct HandoffEngineThreadTests {
  @Test func blockedStoreWritesParkEngineThreadsNotThePool() async throws {
    // More engines stuck in a write than the pool has threads: if the
    // writes ran on the pool, nothing else could run until the watchdog.
    let count = ProcessInfo.processInfo.activeProcessorCount + 1
    let gate = Gate(limit: .seconds(60))
    let key = GroupKey.generate()
    var stores: [StallingStore] = []
    var engines: [HandoffEngine] = []
    for index in 0..<count {
      let directory = try TestEnvironment.temporaryDirectory("engine-thread-\(index)").path
      let store = try StallingStore(directory: directory, gate: gate)
      stores.append(store)
      engines.append(
        HandoffEngine(
          key: key, deviceName: "engine\(index)", store: store,
          folders: [(HandoffTestAgent.notesType, InMemoryNoteFolder(root: "/e\(index)"))]))
    }
    let emptyDigest = engines[0].currentIndexDigest
    let saves = engines.map { engine in
      Task {
        await engine.localSave(
          NoteSave(relativePath: "a.md", bytes: Array("# A\n".utf8)),
          activityType: HandoffTestAgent.notesType)
      }
    }
    #expect(
      await eventually(60, "every engine blocked in a write") {
        stores.allSatisfy { $0.blockedThreads.count == 1 }
      })
    // Async work that needs the pool still runs while they are blocked.
    let ran = await withTaskGroup(of: Int.self, returning: Int.self) { group in
      for _ in 0..<(4 * count) {
        group.addTask {
          await Task.yield()
          return 1
        }
      }
      return await group.reduce(0, +)
    }
    #expect(ran == 4 * count)
    // The beacon is sealed, with the new note's digest, while the engine's
    // thread is blocked: the radio never waits for it to advertise.
    let beacon = engines[0].openBeacon(engines[0].publishedBeacon())
    #expect(beacon != nil && beacon?.indexDigest != emptyDigest)
    #expect(!gate.openedByWatchdog)
    #expect(stores.allSatisfy { $0.blockedThreads == ["baton-engine"] })
    gate.open()
    for save in saves { await save.value }
    for engine in engines { #expect(await engine.status().noteCount == 1) }
  }
}
