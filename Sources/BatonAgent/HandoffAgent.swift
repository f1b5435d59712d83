import BatonHandoff
import BatonNotes
import BatonStore
import BatonSystem
import FoundationEssentials
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// The agent itself: joins the notes folders, the handoff engine and the BLE
/// host, and is what `baton agent` runs inside the daemon shell.
///
/// - Each folder's saves go to the engine (becomeCurrent /
///   updateUserActivityState), and the advertised beacon is re-sealed.
/// - Each keyed peer in range gets one link (PROTOCOL.md 6.2), kept up while
///   it is in range: every save is pushed over it at once
///   (continueUserActivity on the peer). Peers beyond the link limit get a
///   connection and a session when their beacon shows something we lack.
/// - A lost controller is reopened with back-off; a reload restarts all of
///   this with the new configuration (the state database keeps what we knew).
public final class HandoffAgent: AgentCore {
  /// The L2CAP LE PSM of the handoff service (PROTOCOL.md, "Connection").
  public static let psm: UInt16 = 0x0080

  struct State {
    var configuration: AgentConfiguration
    var key: GroupKey?
    var generation: Task<Void, any Error>?
    var engine: HandoffEngine?
    var folders: [(configuration: FolderConfiguration, folder: NotesFolder)] = []
    var radio: AgentRadio?
    /// The code `baton pair` shows on this member (HandoffAgent+Pairing).
    var memberPairing: MemberPairing?
    /// Set while this device is in no group yet: its store, for `baton
    /// pair CODE` (HandoffAgent+Pairing).
    var unpaired: (any HandoffStateStore)?
    /// `baton pair CODE` is running.
    var seeking = false
  }

  let state: Mutex<State>
  let log = Logger(label: "agent")

  public init(configuration: AgentConfiguration, key: GroupKey?) {
    state = Mutex(State(configuration: configuration, key: key))
  }

  // MARK: AgentCore

  public func run() async throws {
    // One generation per configuration: a reload cancels the running one and
    // the loop starts the next with the new configuration.
    while !Task.isCancelled {
      let (configuration, key) = state.withLock { ($0.configuration, $0.key) }
      let generation = Task { try await self.runGeneration(configuration, key) }
      state.withLock { $0.generation = generation }
      do {
        try await withTaskCancellationHandler {
          try await generation.value
        } onCancel: {
          generation.cancel()
        }
      } catch is CancellationError {
        // A reload, or the daemon stopping: the loop condition tells which.
      }
      let reloaded = state.withLock { $0.generation == nil }
      if !reloaded { return }
    }
  }

  public func reload(_ configuration: AgentConfiguration, key: GroupKey?) async throws {
    let generation = state.withLock { s -> Task<Void, any Error>? in
      s.configuration = configuration
      s.key = key
      defer { s.generation = nil }
      return s.generation
    }
    log.notice(
      "reloading: \(configuration.folders.count) folders, controller \(configuration.controller)")
    generation?.cancel()
  }

  public func status() async -> AgentStatus {
    let (configuration, engine, radio) = state.withLock { ($0.configuration, $0.engine, $0.radio) }
    var status = AgentStatus(configuration: configuration)
    status.address = radio?.address
    guard let engine else { return status }
    let handoff = await engine.status()
    status.counters = AgentStatus.Counters(
      sent: handoff.counters[HandoffCounter.sent] ?? 0,
      received: handoff.counters[HandoffCounter.received] ?? 0,
      declined: handoff.counters[HandoffCounter.declined] ?? 0,
      failed: handoff.counters[HandoffCounter.failed] ?? 0,
      conflicts: handoff.counters[HandoffCounter.conflicts] ?? 0,
      sessions: handoff.counters[HandoffCounter.sessions] ?? 0,
      trashed: handoff.counters[HandoffCounter.trashed] ?? 0,
      renamed: handoff.counters[HandoffCounter.renamed] ?? 0)
    status.lastFailures = handoff.failures.map {
      AgentStatus.Failure(
        time: $0.time, activityType: $0.activityType, peer: $0.peer, reason: $0.reason)
    }
    if let current = handoff.currentActivity {
      let folder = configuration.folders.first { $0.activityType == current.activityType }
      let bytes = folder.flatMap {
        FileManager.default.contents(atPath: $0.path + "/" + current.path)
      }
      status.currentActivity = AgentStatus.Activity(
        type: current.activityType,
        title: bytes.map { Note(bytes: Array($0)).title(fileName: current.path) } ?? current.path,
        path: current.path, version: current.version.description)
    }
    let handedOver = handoff.handedOver.map { activity in
      AgentStatus.HandedOver(
        peer: activity.peerName, device: activity.peerDevice.description,
        type: activity.activityType, title: activity.title, path: activity.path,
        file: configuration.folders.first { $0.activityType == activity.activityType }
          .map { $0.path + "/" + activity.path },
        time: activity.time)
    }
    status.handedOver = handedOver.isEmpty ? nil : handedOver
    status.heldDeletions = handoff.heldDeletions.isEmpty ? nil : handoff.heldDeletions.count
    status.transfers =
      handoff.transfers.isEmpty ? nil : handoff.transfers.map(AgentStatus.Transfer.init)
    status.peers = radio?.peersInRange() ?? []
    status.scanning = radio?.scanning
    return status
  }

  public func send(notePath: String) async throws -> String {
    let (engine, folders) = state.withLock { ($0.engine, $0.folders) }
    guard let engine else { throw AgentError.notRunning }
    let absolute = URL(fileURLWithPath: notePath).standardizedFileURL.resolvingSymlinksInPath().path
    for (configuration, folder) in folders where absolute.hasPrefix(folder.root + "/") {
      let relative = String(absolute.dropFirst(folder.root.count + 1))
      do {
        _ = try folder.names.validate(relative)
      } catch {
        throw AgentError.notANote(path: notePath, reason: "\(error)")
      }
      let bytes = try folder.readNote(relative)
      await engine.localSave(
        NoteSave(relativePath: relative, bytes: bytes), activityType: configuration.activityType)
      await engine.makeCurrent(activityType: configuration.activityType, path: relative)
      return "\(relative) is now the current \(configuration.activityType) activity"
    }
    throw AgentError.outsideFolders(path: notePath, folders: folders.map(\.folder.root))
  }

  public func trash() async throws -> [TrashedVersionRecord] {
    let folders = state.withLock { $0.folders }
    return folders.flatMap { _, folder in
      folder.trashEntries().map {
        TrashedVersionRecord(
          path: folder.root + "/" + $0.path, day: $0.day, size: $0.size,
          reason: $0.reason.rawValue, trashPath: folder.root + "/" + $0.trashPath)
      }
    }
  }

  public func devices(remove: String?) async throws -> (message: String?, devices: [DeviceEntry])
  {
    guard let engine = state.withLock({ $0.engine }) else {
      throw state.withLock({ $0.unpaired }) != nil
        ? ControlFailure(Self.notInAGroup) : ControlFailure("the agent is starting; try again")
    }
    var message: String?
    if let remove {
      let removed = try await engine.removeDevice(remove)
      message =
        "removed \(removed.name) (\(removed.id)): it can no longer connect to the members, and"
        + " the group moved to a new secret it does not get; the notes it already has stay with it"
    }
    return (message, await engine.devices().map(Self.entry))
  }

  static func entry(_ d: DeviceRecord) -> DeviceEntry {
    DeviceEntry(
      id: d.id.description, name: d.name, fingerprint: d.fingerprint,
      addedBy: d.addedBy.description, member: d.isMember,
      removedBy: d.removedBy?.description, thisDevice: d.isThisDevice, linked: d.linked,
      lastSeen: d.lastSeen)
  }

  /// Starts the generation again (with the same configuration): the group
  /// moved to `epoch`, whose keys the new engine takes.
  private func restart(forEpoch epoch: UInt32) {
    log.notice("the group moved to epoch \(epoch): starting again with its keys")
    restartGeneration()
  }

  /// Ends the running generation; `run` starts the next.
  func restartGeneration() {
    let generation = state.withLock { s -> Task<Void, any Error>? in
      defer { s.generation = nil }
      return s.generation
    }
    generation?.cancel()
  }

  public func restore(notePath: String, day: String?) async throws -> String {
    let folders = state.withLock { $0.folders }
    let absolute = URL(fileURLWithPath: notePath).standardizedFileURL.resolvingSymlinksInPath().path
    for (_, folder) in folders where absolute.hasPrefix(folder.root + "/") {
      let relative = String(absolute.dropFirst(folder.root.count + 1))
      // Through the folder's writer, like the peers' notes: a save made
      // meanwhile is never replaced.
      let outcome = try folder.restoreNote(relative, day: day)
      if outcome.unchanged {
        return "\(relative) already holds the version of \(outcome.day) (\(outcome.trashPath))"
      }
      log.notice(
        "restored \(relative) from \(outcome.trashPath) (\(outcome.size) bytes)"
          + (outcome.replacedTrashPath.map { "; the version it replaced is in \($0)" } ?? ""))
      return "restored \(relative) from \(outcome.trashPath) (\(outcome.size) bytes); it goes to the"
        + " peers as an edit"
        + (outcome.replacedTrashPath.map { "; the version it replaced is in \($0)" } ?? "")
    }
    throw AgentError.outsideFolders(path: notePath, folders: folders.map(\.folder.root))
  }

  public func deletions(_ action: DeletionAction) async throws -> (
    message: String?, held: [HeldDeletionRecord]
  ) {
    guard let engine = state.withLock({ $0.engine }) else { throw AgentError.notRunning }
    var message: String?
    switch action {
    case .list: break
    case .apply: message = await engine.applyHeldDeletions()
    case .reject: message = await engine.rejectHeldDeletions()
    }
    let held = await engine.heldDeletions().map {
      HeldDeletionRecord(
        activityType: $0.activityType, path: $0.path, peer: $0.peer, since: $0.since)
    }
    return (message, held)
  }

  // MARK: One generation

  private func runGeneration(_ configuration: AgentConfiguration, _ key: GroupKey?) async throws {
    try Self.makePrivateDirectory(configuration.stateDirectory)
    // One agent per state folder: two with the same device id would resolve
    // concurrent edits by overwriting one of them.
    let lock: DirectoryLock
    do {
      lock = try DirectoryLock(directory: configuration.stateDirectory)
    } catch .held(let pid) {
      throw AgentError.stateDirectoryInUse(path: configuration.stateDirectory, pid: pid)
    } catch .system(let errno) {
      throw AgentError.stateDirectory(path: configuration.stateDirectory, reason: "\(errno)")
    }
    defer { withExtendedLifetime(lock) {} }
    let store = try await HandoffStore.open(directory: configuration.stateDirectory)
    if let change = store.deviceChange { log.warning(change) }
    guard Enrolment.inGroup(store: store, key: key) else {
      try await waitForPairing(store, configuration)
      return
    }
    // The first scan of each folder (reading and hashing every note not
    // known unchanged), the trash purge and the store's stamps block: they
    // run on the engine's thread, before the engine does.
    let engineThread = ThreadExecutor(name: HandoffEngine.threadName)
    let opened = try await engineThread.run { () throws -> OpenedFolders in
      try Self.openFolders(configuration, store)
    }
    let folders = opened.folders
    let streams = opened.streams
    let replaced = opened.replaced
    defer { for (_, folder) in folders { folder.stop() } }
    var policy = HandoffPolicy(
      allowedPeers: configuration.allowedPeers.isEmpty ? nil : Set(configuration.allowedPeers),
      maxNoteSize: configuration.maxNoteSize)
    policy.deletionLimits = DeletionLimits(
      count: configuration.holdDeletions, sharePercent: configuration.holdDeletionsShare)
    let commands = folders.map { FolderCommands($0.configuration) }
    let engine = HandoffEngine(
      key: key, deviceName: configuration.name, store: store,
      folders: zip(folders, commands).map { folder, gate in
        HandoffFolder(
          activityType: folder.configuration.activityType, folder: folder.folder, gate: gate)
      },
      policy: policy, executor: engineThread)
    for gate in commands.compactMap({ $0 }) {
      gate.onDecided { [weak engine] in
        guard let engine else { return }
        Task { await engine.incomingDecided() }
      }
    }
    await engine.onEpochMove { [weak self] epoch in self?.restart(forEpoch: epoch) }
    await engine.foldersReplaced(replaced)
    await engine.rescan()
    await engineThread.run {
      for (folderConfiguration, folder) in folders {
        try? store.setFolderIdentity(folder.identity, activityType: folderConfiguration.activityType)
      }
    }
    // The first scan of a large folder builds its indexes with much
    // temporary memory (file lists, store batches); give it back.
    HeapMemory.releaseFreePages()
    let radio = AgentRadio(
      configuration: configuration, engine: engine,
      pairing: { [weak self] in self?.state.withLock { $0.memberPairing } })
    state.withLock {
      $0.engine = engine
      $0.folders = folders
      $0.radio = radio
    }
    defer {
      state.withLock {
        $0.engine = nil
        $0.folders = []
        $0.radio = nil
      }
    }
    log.notice(
      "\(configuration.name): \(folders.count) folder(s), device \(engine.deviceID), controller \(configuration.controller)"
    )

    // Resume from suspend starts a scan burst. Only beside bluetoothd: an
    // agent on its own controller has no use for D-Bus otherwise (and does
    // not map libsystemd); there, the links that dropped over the suspend
    // start a burst, as does a controller that has to be opened again.
    var sleep: SleepWatcher?
    if case .bluez = configuration.controller {
      sleep = await SleepWatcher.startOnSystemBus(log: log) { radio.resumed() }
    }
    defer { sleep?.close() }
    // Desktop notifications, when there is a session bus to show them on.
    let notifier = await DesktopNotifier.start(folders.map(\.configuration))
    if let notifier { await engine.onArrival { notifier.arrived($0) } }
    defer { notifier?.close() }
    try await withThrowingTaskGroup(of: Void.self) { group in
      for (activityType, stream) in streams {
        group.addTask {
          for await event in stream {
            switch event {
            case .saved(let save):
              await engine.localSave(save, activityType: activityType)
            case .removed(let relativePaths):
              await engine.localRemove(relativePaths: relativePaths, activityType: activityType)
            case .renamed(let from, let save):
              await engine.localRename(from: from, to: save, activityType: activityType)
            case .folderWithdrawn:
              await engine.localWithdrawAll(activityType: activityType)
            }
          }
        }
      }
      group.addTask { try await radio.run() }
      // The radio runs until cancelled or until it cannot go on; the folder
      // streams end only when the folders stop. Either way, stop it all.
      try await group.next()
      group.cancelAll()
    }
  }

  /// The folders of a generation, scanned, with their event streams.
  struct OpenedFolders: Sendable {
    var folders: [(configuration: FolderConfiguration, folder: NotesFolder)] = []
    var streams: [(String, AsyncStream<NotesEvent>)] = []
    /// The activity types whose folder is another one than at the last run
    /// (moved away and replaced while the agent was stopped): they delete nothing.
    var replaced: Set<String> = []
  }

  /// Opens, purges and scans each configured folder. Blocking: on the engine's thread.
  private static func openFolders(_ configuration: AgentConfiguration, _ store: HandoffStore)
    throws -> OpenedFolders
  {
    var opened = OpenedFolders()
    do {
      for folderConfiguration in configuration.folders {
        let type = folderConfiguration.activityType
        let folder = try NotesFolder(
          root: folderConfiguration.path, pattern: folderConfiguration.pattern,
          maximumNoteSize: configuration.maxNoteSize, trashDays: configuration.trashDays,
          trashSize: configuration.trashSize)
        folder.purgeTrash()
        // Files unchanged since the last run are not read again (issue 14).
        folder.trust((try? store.fileStamps(activityType: type)) ?? [])
        do {
          opened.streams.append((type, try folder.start()))
        } catch {
          folder.stop()
          throw error
        }
        try? store.saveFileStamps(folder.takeFreshStamps(), activityType: type)
        opened.folders.append((folderConfiguration, folder))
        if let last = try? store.folderIdentity(activityType: type), last != folder.identity {
          opened.replaced.insert(type)
        }
      }
    } catch {
      for (_, folder) in opened.folders { folder.stop() }
      throw error
    }
    return opened
  }

  /// Creates `path` (and parents) with mode 0700 if missing.
  static func makePrivateDirectory(_ path: String) throws {
    var info = stat()
    if stat(path, &info) == 0 { return }
    do {
      try FileManager.default.createDirectory(
        atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    } catch {
      throw AgentError.stateDirectory(path: path, reason: "\(describe(error))")
    }
  }
}

/// Why the agent cannot do what was asked.
public enum AgentError: Error, CustomStringConvertible {
  case notRunning
  case notANote(path: String, reason: String)
  case outsideFolders(path: String, folders: [String])
  case stateDirectory(path: String, reason: String)
  case stateDirectoryInUse(path: String, pid: Int32?)
  case controller(spec: String, reason: String)

  public var description: String {
    switch self {
    case .notRunning: "the agent is starting or reloading; try again in a moment"
    case .notANote(let path, let reason):
      "\(path) is not a note: \(reason)"
    case .outsideFolders(let path, let folders):
      "\(path) is not in a watched folder (\(folders.joined(separator: ", "))); save it in one of them"
    case .stateDirectory(let path, let reason):
      "cannot create the state folder \(path): \(reason); set state-dir to a writable folder"
    case .stateDirectoryInUse(let path, let pid):
      "the state folder \(path) is in use by another baton agent"
        + (pid.map { " (pid \($0))" } ?? "")
        + "; stop it, or give each agent its own state-dir"
    case .controller(let spec, let reason):
      "cannot use the controller \(spec): \(reason)"
    }
  }
}
