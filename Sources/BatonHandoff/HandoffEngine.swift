import BatonNotes
import BatonSystem
import FoundationEssentials
import Synchronization

/// The radio-independent heart of handoff: the index with version vectors, the
/// beacon, the decision to connect, and the session protocol (PROTOCOL.md).
///
/// The agent feeds it local saves and hands it message channels (L2CAP) to run
/// sessions over; everything it needs of a notes folder goes through
/// `NoteFolderAccess`. All state changes happen on the actor, so two sessions
/// at once (even with the same peer) never interleave inside one note's update.
///
/// Wiring, for the agent:
/// - at start: `HandoffStore(directory: stateDir)` (the directory must exist),
///   then the engine; log `status().storeRecovery` if set (the engine logs it too);
/// - scan the folders (`rescan()`) before the radio starts;
/// - each save the folder watcher reports: `localSave(_:activityType:)`;
///   after an inotify overflow: `rescan()`;
/// - advertise `publishedBeacon()`, without waiting for the engine's
///   thread; seal it again on each element of `beaconChanges` (the
///   engine's every change of the beacon's content, whatever made it: a
///   save, a deletion, a note that came in a session or over a link) and
///   at every address rotation (it is re-sealed on each call);
/// - for each advertisement heard, without waiting for the engine's thread:
///   `openBeacon(_:from:)` (nil: not a group beacon), and the bounds on
///   connections the agent keeps (`ConnectionMemory`, PROTOCOL.md 3) with
///   `currentIndexDigest`;
/// - for each keyed peer in range, one link (PROTOCOL.md 6.2): the side that
///   connects calls `openLink(over:peerAddress:)`, then `runLink(_:)` until it
///   ends; saves are pushed over every running link by the engine itself;
/// - for a peer without a link, if the bounds allow a session: connect, open
///   an L2CAP channel and `runSession(over:initiator: true, peerAddress:)`;
/// - for each incoming L2CAP channel: `respond(over:peerAddress:)`, which
///   gives a link to run or runs a one-shot session;
/// - tell the bounds how each session or link at an address ended
///   (`ConnectionMemory.ended`: the summary's `settled` pair, or the error);
/// - `baton status`: `status()`.
public actor HandoffEngine {
  /// The keys of the group's current epoch (the key file's key in epoch 0).
  let keys: HandoffKeys
  /// The keys of the epochs before the current one that this device holds,
  /// newest first, at most two: an agent still on one of them gets the
  /// next epoch from a session this agent starts (PROTOCOL.md 6.3).
  let olderKeys: [(epoch: UInt32, keys: HandoffKeys)]
  /// The epoch `keys` belong to.
  let epoch: UInt32
  /// The devices removed from the group, for beacons that open only with
  /// `olderKeys` (`openAnyEpoch`); kept up to date with `membership`.
  let removedDevices: Mutex<RemovedDevices>
  let me: LocalIdentity
  /// The group's members (PROTOCOL.md 6.3), as this device's records say.
  var membership: Membership
  /// Called (once) when the epoch moved on: the agent then starts the
  /// engine again, with the new epoch's keys.
  var epochMoved: (@Sendable (UInt32) -> Void)?
  /// The epoch of the keys that opened each address's last beacon, when
  /// older than the current one. Written by `openBeacon(_:from:)`, which
  /// the radio calls off the engine's thread.
  let beaconEpochs = Mutex<[String: UInt32]>([:])
  let store: any HandoffStateStore
  let folders: [String: any NoteFolderAccess]
  /// The folders' gates (`accept-command`, `after-command`), by activity type.
  let gates: [String: any IncomingGate]
  public nonisolated let policy: HandoffPolicy
  let logger = Logger(label: "handoff")
  /// The engine's own thread: its SQLite writes, fsyncs and note writes
  /// block there, never on a thread of the pool (ARCHITECTURE.md, concurrency).
  /// The agent may hand one in, to scan the folders there first.
  let executor: ThreadExecutor
  public nonisolated var unownedExecutor: UnownedSerialExecutor {
    executor.asUnownedSerialExecutor()
  }

  /// The index, mirrored from the store, with its summary: key is `type \0 path`.
  /// Every change publishes the beacon's content (`publishBeaconContent`),
  /// and every change of a note wakes each link's sender for that note
  /// (`HandoffLink.changed`), whatever made it: nobody has to tell them.
  var index: HandoffIndex {
    didSet {
      publishBeaconContent()
      if let key = index.takeChange() {
        for link in links.values { link.changed(key: key) }
      }
    }
  }
  /// The beacon's content as of its last change, the activity hash in the
  /// high 32 bits and the index digest in the low ones: for the radio's
  /// decisions and its beacon, off the engine's thread
  /// (`currentIndexDigest`, `publishedBeacon`).
  private let published = Atomic<UInt64>(0)
  var current: (activityType: String, path: String)? {
    didSet { publishBeaconContent() }
  }
  /// The beacon's content (activity hash, index digest) last published.
  private var publishedContent: (activity: UInt32, digest: UInt32) = (0, 0)
  /// Counts the changes of the beacon's content published.
  private(set) var beaconRevision: UInt64 = 0
  /// A change of the beacon's content (the current activity, or the index
  /// digest: a save, a deletion, a note that arrived by any path), for the
  /// radio to re-seal its beacon; changes that come faster than it takes
  /// them are one. One consumer.
  public nonisolated let beaconChanges: AsyncStream<Void>
  private let beaconChanged: AsyncStream<Void>.Continuation
  /// Each peer's current activity as it last arrived here, for `baton
  /// status` and `baton continue` (HandoffEngine+HandedOver.swift). Kept in
  /// memory only.
  var handedOver: [DeviceID: HandedOverActivity] = [:]
  /// Told of each note that arrives (`onArrival`).
  var arrivals: (@Sendable (Arrival) -> Void)?
  /// Each peer's transfer to this agent while it runs, for `baton status`
  /// (HandoffEngine+Progress.swift).
  var transfers: [DeviceID: TransferProgress] = [:]
  /// The channels receiving from each peer, as far as a message has come.
  var meters: [DeviceID: MessageMeter] = [:]
  private var scanned = false
  /// Counts changes to the offered index that no session made (local saves,
  /// files found changed or missing), so that a session can tell whether the
  /// index it is about to settle still is the one it exchanged.
  var localRevision: UInt64 = 0
  /// Counts the times this side came to lack notes it offered before (held
  /// deletions rejected, notes a gate had no room to keep), which its link
  /// peers learn by INDEX (`resyncLinks`): a link whose LINK was made before
  /// the latest of them resyncs as it starts.
  var lackRevision: UInt64 = 0

  /// What was logged or counted once, by a key with its kind first: a
  /// decline logged per peer and type, and counted per peer, type, path and
  /// version; a note over the size limit per size; a note whose counter is
  /// exhausted; a note not offered because a field is over its wire limit.
  /// Bounded: peers choose most of the keys.
  var once = OnceSet()
  /// Store updates being gathered for one transaction (`batched`).
  var storeBatch: HandoffStoreBatch?
  /// Links running (HandoffEngine+Link.swift): each is woken after every
  /// change of the index, to push what its peer lacks.
  var links: [ObjectIdentifier: HandoffLink] = [:]
  /// Notes received over a link, not relayed to the other links before
  /// their hold is over (and then only if still lacking).
  var relayHolds = RelayHolds()
  /// Incoming notes a folder's gate has not answered for yet, kept to be
  /// applied when it has (HandoffEngine+Gates.swift).
  var awaiting = AwaitingNotes()
  /// Deletions held for a person when they are many (HandoffEngine+Holds.swift).
  var deletionHold: DeletionHold
  /// Folders found replaced since the last run (`foldersReplaced`), for the first scan.
  var replacedAtStart: Set<String> = []
  /// The bytes of the notes saved or written last, to serve them without
  /// reading the files again (`serveNote`).
  var recent = RecentNotes()

  /// - Parameters:
  ///   - folders: the folders served, each with its activity type (types must differ).
  ///   - key: the key file's key (epoch 0 of a key-file group); nil for a
  ///     device that joined by pairing (`Enrolment.inGroup` says whether
  ///     its records let it take part: without, it talks to nobody).
  public init(
    key: GroupKey?, deviceName: String, store: any HandoffStateStore, folders: [HandoffFolder],
    policy: HandoffPolicy = HandoffPolicy()
  ) {
    self.init(
      key: key, deviceName: deviceName, store: store, folders: folders, policy: policy,
      executor: ThreadExecutor(name: Self.threadName))
  }

  /// As above, on `executor` (a `baton-engine` thread the agent first
  /// scanned the folders on).
  package init(
    key: GroupKey?, deviceName: String, store: any HandoffStateStore, folders: [HandoffFolder],
    policy: HandoffPolicy, executor: ThreadExecutor
  ) {
    self.executor = executor
    let name = HandoffLimits.truncated(deviceName, toBytes: HandoffLimits.maxNameBytes)
    me = LocalIdentity(key: store.deviceKey, name: name)
    let (membership, founding) = Self.loadMembership(
      store: store, device: store.deviceKey, groupKey: key, name: name)
    self.membership = membership
    removedDevices = Mutex(RemovedDevices(membership))
    epoch = membership.epoch
    // Not in a group yet (no key file, no enrolment): a random key, which
    // opens nothing and is opened by nobody.
    keys = HandoffKeys(
      groupKey: membership.epochSecret.flatMap(GroupKey.init(bytes:)) ?? key ?? .generate())
    olderKeys = (0..<membership.epoch).reversed().prefix(2).compactMap { epoch in
      membership.secret(ofEpoch: epoch).flatMap(GroupKey.init(bytes:)).map {
        (epoch, HandoffKeys(groupKey: $0))
      }
    }
    self.store = store
    var map: [String: any NoteFolderAccess] = [:]
    var gates: [String: any IncomingGate] = [:]
    for f in folders {
      if !HandoffLimits.isValidActivityType(f.activityType) {
        logger.warning("activity type '\(f.activityType)' of \(f.folder.root) is not reverse-DNS")
      }
      if map[f.activityType] != nil {
        logger.warning("two folders declare \(f.activityType); only \(f.folder.root) is used")
      }
      map[f.activityType] = f.folder
      gates[f.activityType] = f.gate
    }
    self.folders = map
    self.gates = gates
    index = HandoffIndex(offeredTypes: Set(map.keys), summaryKey: keys.summary)
    publishedContent = (0, index.summary.shortDigest)
    published.store(UInt64(index.summary.shortDigest), ordering: .releasing)
    (beaconChanges, beaconChanged) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
    self.policy = policy
    deletionHold = DeletionHold(limits: policy.deletionLimits)
    if let recovery = store.recovery { logger.error(recovery) }
    if let founding { logger.info(founding) }
    if let removal = membership.removal(of: me.device) {
      logger.error(
        "this device was removed from the group by \(removal.by); it gets nothing new from the"
          + " members, which refuse it; the notes it has stay here")
    }
  }

  /// The same, with folders given as (activity type, folder) pairs.
  public init(
    key: GroupKey?, deviceName: String, store: any HandoffStateStore,
    folders: [(activityType: String, folder: any NoteFolderAccess)],
    policy: HandoffPolicy = HandoffPolicy()
  ) {
    self.init(
      key: key, deviceName: deviceName, store: store,
      folders: folders.map { HandoffFolder(activityType: $0.activityType, folder: $0.folder) },
      policy: policy)
  }

  /// This agent's device id.
  public nonisolated var deviceID: DeviceID { me.device }

  static func key(_ type: String, _ path: String) -> String { HandoffIndex.key(type, path) }

  /// The name of the engine's thread.
  package static let threadName = "baton-engine"

  // MARK: Local changes

  /// Loads the index and reconciles it with the folders once (lazily).
  func ensureScanned() {
    guard !scanned else { return }
    scanned = true
    do {
      let stored = try store.notes()
      index.reserveCapacity(stored.count)
      for note in stored {
        index[Self.key(note.entry.activityType, note.entry.path)] = note
      }
      current = try store.currentActivity()
    } catch {
      logger.error("cannot read the state database: \(error)")
    }
    adoptInterruptedWrites()
    var changedWhileAway: [(type: String, path: String)] = []
    batched { changedWhileAway = scanFolders() }
    restoreCurrentActivity(changedWhileAway: changedWhileAway)
  }

  /// The current activity at start: the newest note saved while the agent
  /// was not running; else the one current when it stopped; else (a first
  /// start, or that note is gone) the newest note in the folders.
  private func restoreCurrentActivity(changedWhileAway: [(type: String, path: String)]) {
    var candidates = changedWhileAway
    if candidates.isEmpty {
      if currentEntry != nil { return }
      for note in index.values where !note.deleted && folders[note.entry.activityType] != nil {
        candidates.append((note.entry.activityType, note.entry.path))
      }
    }
    var newest: (type: String, path: String, time: Int64)?
    for (type, path) in candidates {
      guard let time = folders[type]?.modificationTime(path) else { continue }
      if let best = newest,
        (best.time, best.type, best.path) >= (time, type, path)
      {
        continue
      }
      newest = (type, path, time)
    }
    guard let newest else { return }
    if let current, current.activityType == newest.type, current.path == newest.path,
      currentEntry != nil
    {
      return
    }
    current = (newest.type, newest.path)
    persist { try store.setCurrentActivity(activityType: newest.type, path: newest.path) }
    logger.info("current activity at start: \(newest.type):\(newest.path)")
  }

  /// Incoming notes whose file was written just before the agent stopped,
  /// but whose index entry was not: a file holding the incoming bytes is that
  /// note (not a local edit); otherwise the write never happened.
  private func adoptInterruptedWrites() {
    let intents: [StoredNote]
    do {
      intents = try store.pendingWrites()
    } catch {
      logger.error("cannot read the state database: \(error)")
      return
    }
    for intent in intents {
      let e = intent.entry
      let written = folders[e.activityType].flatMap { try? $0.readNote(e.path) }
        .map { ContentHash(of: $0) == e.hash } ?? false
      if written {
        index[Self.key(e.activityType, e.path)] = intent
        logger.info("\(e.activityType):\(e.path) was written back just before the agent stopped; recorded it")
      }
      persist {
        try store.completeWrite(
          activityType: e.activityType, path: e.path, saving: written ? intent : nil)
      }
    }
  }

  /// Compares every folder with the index: a new or changed file (saved while the
  /// agent was not running, or not reported) becomes a new local version; a missing
  /// file becomes a deletion (`markDeleted`; held when they are many,
  /// `deleteLocally`). A folder that is itself gone
  /// (an unmounted disk) deletes nothing.
  public func rescan() {
    if !scanned {
      ensureScanned()
      return
    }
    batched { scanFolders() }
  }

  /// The work of `rescan`; returns the notes that got a new local version.
  @discardableResult
  private func scanFolders() -> [(type: String, path: String)] {
    var changed: [(type: String, path: String)] = []
    for (type, folder) in folders {
      var present: Set<String> = []
      let entries = folder.indexEntries()
      // Room at once for a first scan; a rescan finds most notes indexed.
      index.reserveCapacity(max(index.count, entries.count))
      present.reserveCapacity(entries.count)
      for entry in entries where entry.size <= policy.maxNoteSize {
        // A note grown over the limit counts as absent: no longer offered.
        present.insert(entry.relativePath)
        if recordLocal(type, entry.relativePath, hash: entry.hash, size: entry.size) {
          changed.append((type, entry.relativePath))
        }
        commitBatchIfLarge()
      }
      guard folder.isAvailable else {
        logger.warning("\(folder.root) is gone; its notes are not taken as deleted")
        continue
      }
      let missing = index.missingPaths(of: type) { !present.contains($0) }
      if replacedAtStart.remove(type) != nil {
        withdraw(type, missing)
        if !missing.isEmpty {
          logger.notice(
            "\(type): \(folder.root) is another folder than at the last run (another device or"
              + " inode); \(missing.count) notes missing from it are withdrawn here, not deleted:"
              + " the peers keep them, and a note edited on a peer comes back here")
        }
        continue
      }
      deleteLocally(type, missing.sorted())
    }
    return changed
  }

  /// A note no longer in the folder. If its file is gone, a deletion: a
  /// tombstone with a new version (this device's counter + 1), offered to
  /// peers like any version (PROTOCOL.md section 7.2). If the file is still
  /// there but no longer a note (over the size limit), withdrawn: not
  /// offered, and the same bytes coming back are not a new version.
  func markDeleted(_ type: String, _ path: String, renamedTo newPath: String? = nil) {
    guard index[Self.key(type, path)].map({ !$0.deleted }) ?? false else { return }
    let folder = folders[type]
    let fileGone = folder.map { $0.isAvailable && $0.modificationTime(path) == nil } ?? false
    guard let (note, tombstone) = index.remove(type, path, fileGone: fileGone, device: me.device)
    else { return }
    if !tombstone {
      logger.debug("\(type):\(path) is no longer a note here; no longer offered")
    } else if let newPath {
      logger.info("\(type):\(path) was renamed to \(newPath) here; peers rename their copy")
    } else {
      logger.info("\(type):\(path) was deleted here; peers move their copy to their trash")
    }
    localRevision &+= 1
    persistSave(note)
  }

  /// A note the folder watcher saw deleted, moved away, or turn invalid.
  public func localRemove(relativePath: String, activityType: String) {
    localRemove(relativePaths: [relativePath], activityType: activityType)
  }

  /// Notes the folder watcher saw deleted, moved away, or turn invalid at
  /// once (one `.removed` event): deletions, held as one when they are
  /// many (HandoffEngine+Holds.swift).
  public func localRemove(relativePaths: [String], activityType: String) {
    ensureScanned()
    batched { deleteLocally(activityType, relativePaths) }
  }

  /// The folder of `activityType` itself was deleted, moved away, replaced or
  /// unmounted (the watcher's `.folderWithdrawn`): every note of it whose
  /// file is not there now is withdrawn, never tombstoned (PROTOCOL.md
  /// section 7.2), whatever folder is there by the time this runs. The
  /// notes of the folder in its place come as saves: the same bytes under
  /// a withdrawn name are the same version again; other bytes a new one.
  public func localWithdrawAll(activityType type: String) {
    ensureScanned()
    guard let folder = folders[type] else { return }
    let missing = index.missingPaths(of: type) { folder.modificationTime($0) == nil }
    batched { withdraw(type, missing) }
    let withdrawn = missing.count
    guard withdrawn > 0 else { return }
    logger.notice(
      "\(type): \(folder.root) was moved away, deleted or replaced; \(withdrawn) notes withdrawn"
        + " here, not deleted: the peers keep them and no peer trashes them, a note edited on a"
        + " peer comes back here with its edit, and a note put back in the folder with the same"
        + " bytes is offered again as the same version")
  }

  /// Notes of `type` no longer in the folder, withdrawn (not offered, not
  /// tombstoned); a deletion of theirs held here is forgotten.
  func withdraw(_ type: String, _ paths: [String]) {
    for path in paths {
      let key = Self.key(type, path)
      guard let note = index.withdraw(type, path) else { continue }
      if deletionHold.held[key]?.tombstone == nil { deletionHold.release(key) }
      persistSave(note)
    }
    if !paths.isEmpty { localRevision &+= 1 }
  }

  /// Before the first scan: the folders of `types` are other folders than
  /// at the last run (their device or inode changed, `NotesFolder.identity`),
  /// so the notes missing from them are withdrawn, not deleted, as when a
  /// folder is replaced while the agent runs.
  public func foldersReplaced(_ types: Set<String>) {
    replacedAtStart.formUnion(types)
  }

  /// A note renamed or moved within its folder (the watcher's rename): the
  /// new name saved and the old one deleted in one step, so that a link
  /// pushes the two together as a rename (PROTOCOL.md section 7.3).
  public func localRename(from old: String, to save: NoteSave, activityType: String) {
    ensureScanned()
    batched {
      localSave(save, activityType: activityType)
      markDeleted(activityType, old, renamedTo: save.relativePath)
    }
  }

  /// Records the folder's current bytes of a note as a local version: a new
  /// version (this device's counter + 1) only if the content differs from the
  /// indexed one. Returns whether a new version was made; an exhausted counter
  /// makes none (logged once).
  @discardableResult
  func recordLocal(_ type: String, _ path: String, hash: ContentHash, size: Int) -> Bool {
    let key = Self.key(type, path)
    // A note deleted here and held is back: nothing to decide any more.
    if deletionHold.held[key].map({ $0.tombstone == nil }) ?? false { deletionHold.release(key) }
    let note: StoredNote
    switch index.recordLocal(type, path, hash: hash, size: size, device: me.device) {
    case .unchanged:
      return false
    case .restored(let back):
      persistSave(back)
      return false
    case .counterExhausted:
      if once.first("saturated|" + key) {
        logger.error(
          "\(type):\(path) changed on disk, but this device's version counter for it is"
            + " exhausted (\(index[key]?.entry.version.description ?? "")), so the change cannot be"
            + " offered to peers; save the note under a new name to keep editing it")
      }
      return false
    case .newVersion(let made):
      note = made
    }
    let version = note.entry.version
    _ = isOfferable(note.entry)  // logs once when it cannot be offered
    localRevision &+= 1
    persistSave(note)
    logger.debug("local version of \(type):\(path) is now \(version)")
    return true
  }

  /// A local save (becomeCurrent / updateUserActivityState): bumps the note's
  /// version if its content changed and makes it the current activity. A save
  /// that only reports an incoming note written back changes nothing.
  public func localSave(_ save: NoteSave, activityType: String) {
    ensureScanned()
    guard folders[activityType] != nil else {
      logger.warning(
        "save of \(save.relativePath) has undeclared activity type \(activityType); ignored")
      return
    }
    guard save.bytes.count <= policy.maxNoteSize else {
      logger.warning(
        "\(save.relativePath) is \(save.bytes.count) bytes, over the \(policy.maxNoteSize)-byte limit; not sent"
      )
      return
    }
    let changed = recordLocal(
      activityType, save.relativePath, hash: save.hash, size: save.bytes.count)
    let key = Self.key(activityType, save.relativePath)
    recent.keep(
      key, hash: save.hash, modified: folders[activityType]?.modificationTime(save.relativePath),
      bytes: save.bytes)
    let note = index[key]
    if changed || note?.entry.origin == me.device {
      current = (activityType, save.relativePath)
      persist { try store.setCurrentActivity(activityType: activityType, path: save.relativePath) }
    }
  }

  // MARK: Beacon

  /// The entries we offer to peers: live notes and tombstones (withdrawn
  /// ones are not offered).
  /// Only notes of folders configured now are offered, and only those whose
  /// fields fit the wire limits (others are logged once).
  /// A pass over the whole index: GET_INDEX, INDEX and a link's full pass use it.
  var offered: [HandoffIndexEntry] { index.values.compactMap { self.offeredEntry($0) } }

  /// The note's entry if we offer it now, else nil.
  func offeredEntry(_ note: StoredNote) -> HandoffIndexEntry? {
    guard note.isOfferedState, folders[note.entry.activityType] != nil, isOfferable(note.entry)
    else { return nil }
    return note.entry
  }

  /// The beacon's digest of the offered index, kept up to date by every change.
  var indexDigest: UInt32 { index.summary.shortDigest }

  var currentEntry: HandoffIndexEntry? {
    guard let current, let note = index[Self.key(current.activityType, current.path)],
      !note.deleted, isOfferable(note.entry)
    else { return nil }
    return note.entry
  }

  /// Whether a peer's decoder would accept `entry`; logs once when not.
  func isOfferable(_ entry: HandoffIndexEntry) -> Bool {
    guard let reason = entry.unencodableReason else { return true }
    if once.first("unencodable|" + Self.key(entry.activityType, entry.path)) {
      logger.warning(
        "\(entry.activityType):\(entry.path) is not offered to peers: \(reason); rename it"
          + " (or its folder's activity type) to sync it")
    }
    return false
  }

  /// Our current beacon content (unsealed), with the radio's flags.
  public func beaconContent(closed: Bool = false, asking: Bool = false) -> BeaconContent {
    ensureScanned()
    return BeaconContent(
      activityHash: currentEntry?.activityHash ?? 0, indexDigest: indexDigest,
      closed: closed, asking: asking)
  }

  /// The 31-byte advertising payload, sealed afresh on every call (call it on
  /// every address rotation and after every change). `closed` and `asking`
  /// are the radio's (PROTOCOL.md 3.3).
  public func currentBeacon(closed: Bool = false, asking: Bool = false) -> [UInt8] {
    Beacon.seal(beaconContent(closed: closed, asking: asking), keys: keys, device: me.device)
  }

  /// After a change of the index or of the current activity: publishes
  /// the index digest and, when the beacon's content changed, tells
  /// `beaconChanges`. The engine so tells what changed; nobody has to poke
  /// the radio after calling it.
  private func publishBeaconContent() {
    let content = (activity: currentEntry?.activityHash ?? 0, digest: index.summary.shortDigest)
    guard content != publishedContent else { return }
    publishedContent = content
    published.store(UInt64(content.activity) << 32 | UInt64(content.digest), ordering: .releasing)
    beaconRevision &+= 1
    beaconChanged.yield()
  }

  /// The beacon's digest of the offered index as of its last change,
  /// without waiting for the engine's thread: the radio compares it with
  /// the digest of each beacon heard (`ConnectionMemory.mayConnect`). Only
  /// valid once the folders were scanned (the agent does that first).
  public nonisolated var currentIndexDigest: UInt32 {
    UInt32(truncatingIfNeeded: published.load(ordering: .acquiring))
  }

  /// The 31-byte advertising payload of the beacon's content as of its
  /// last change, sealed afresh, without waiting for the engine's thread:
  /// what the radio advertises at each change (`beaconChanges`) and each
  /// address rotation. Only valid once the folders were scanned (the agent
  /// does that first); `currentBeacon` scans them first if need be.
  public nonisolated func publishedBeacon(closed: Bool = false, asking: Bool = false) -> [UInt8] {
    let content = published.load(ordering: .acquiring)
    return Beacon.seal(
      BeaconContent(
        activityHash: UInt32(truncatingIfNeeded: content >> 32),
        indexDigest: UInt32(truncatingIfNeeded: content), closed: closed, asking: asking),
      keys: keys, device: me.device)
  }

  // MARK: Status and bookkeeping

  /// Counters, recent failures, current activity and known peers.
  public func status() -> HandoffStatus {
    ensureScanned()
    pruneHeldDeletions()
    return HandoffStatus(
      deviceID: me.device, deviceName: me.name, counters: (try? store.counters()) ?? [:],
      failures: (try? store.failures()) ?? [], currentActivity: currentEntry,
      peers: (try? store.peers()) ?? [], noteCount: index.summary.count - index.tombstoneCount,
      storeRecovery: store.recovery, heldDeletions: deletionHold.list,
      handedOver: handedOverNewestFirst, transfers: transferSnapshots())
  }

  /// Runs a store update; a database error is logged, never fatal (the folder
  /// stays the source of truth and a rescan repairs the index).
  func persist(_ body: () throws -> Void) {
    do { try body() } catch { logger.error("state database: \(error)") }
  }

  func count(_ counter: String, _ amount: Int = 1) {
    if storeBatch != nil {
      storeBatch!.append(.increment(counter, by: amount))
    } else {
      persist { try store.increment(counter, by: amount) }
    }
  }

  /// Saves a note now, or with the batch under way.
  func persistSave(_ note: StoredNote) {
    if storeBatch != nil {
      storeBatch!.append(.save(note))
    } else {
      persist { try store.save(note) }
    }
  }

  /// Completes a write-back intent now, or with the batch under way.
  func persistCompleteWrite(_ type: String, _ path: String, saving note: StoredNote?) {
    if storeBatch != nil {
      storeBatch!.append(.completeWrite(activityType: type, path: path, saving: note))
    } else {
      persist { try store.completeWrite(activityType: type, path: path, saving: note) }
    }
  }

  /// The most updates a batch gathers before `commitBatchIfLarge` commits
  /// them: a scan of 100,000 new notes commits 25 transactions instead of
  /// holding 100,000 updates in memory for one.
  static var storeBatchLimit: Int { 4096 }

  /// Commits the batch under way, and starts another, once it holds
  /// `storeBatchLimit` updates. Only for callers between two notes (a scan),
  /// where no update depends on the next.
  func commitBatchIfLarge() {
    guard let batch = storeBatch, batch.count >= Self.storeBatchLimit else { return }
    storeBatch = HandoffStoreBatch()
    persist { try store.commit(batch) }
  }

  /// Runs `body` with its store updates gathered and committed in one
  /// transaction at the end (nested calls join the outer batch).
  func batched(_ body: () -> Void) {
    let outer = storeBatch == nil
    if outer { storeBatch = HandoffStoreBatch() }
    body()
    if outer, let batch = storeBatch {
      storeBatch = nil
      persist { try store.commit(batch) }
    }
  }

  /// didFailToContinue: logs, counts and remembers one failure.
  func fail(activityType: String, peer: String, reason: String) {
    logger.warning("failed to continue \(activityType) with \(peer): \(reason)")
    count(HandoffCounter.failed)
    persist {
      try store.recordFailure(
        FailureRecord(activityType: activityType, peer: peer, reason: reason),
        keep: policy.failureHistory)
    }
  }
}
