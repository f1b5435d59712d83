import BatonSystem
import FoundationEssentials
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// The recursive inotify watch of one notes folder, run on a thread of its
/// own that waits in a `PollLoop` on the inotify descriptor (blocking
/// without a timeout while nothing is pending) until `stop()`.
///
/// Raw inotify rather than libinotifytools: see `Inotify`. Every folder
/// below the root (except hidden ones such as `.git`) gets a watch with
/// `IN_DONT_FOLLOW | IN_ONLYDIR`, added *before* the folder is listed, so a
/// file written into a new folder before its watch existed is still found.
///
/// Saves: a note is read after `IN_CLOSE_WRITE` or `IN_MOVED_TO` (a short
/// settle delay coalesces an editor's events; an `IN_MODIFY` after the close
/// means someone writes again, so it waits for the next close), and reported
/// only when its hash differs from the index. A note read as empty is read
/// again after a hold before it is reported (see `Tuning`). Removals: `IN_MOVED_FROM` and
/// `IN_DELETE` are checked after a delay, so a backup-and-rename save (vim,
/// emacs) is not mistaken for a deletion, and those seen in a row are
/// reported as one `.removed` once the delay has passed since the last
/// (within `removalBurstCap`). Renames: an `IN_MOVED_FROM` and
/// an `IN_MOVED_TO` with the same cookie (one rename(2) of a note, or of a
/// folder holding notes) whose old name is gone when the new one is read are
/// reported as one `.renamed`. `IN_Q_OVERFLOW`: a full rescan. The notes
/// folder itself moved away, deleted or unmounted (`IN_MOVE_SELF`,
/// `IN_DELETE_SELF`, `IN_UNMOUNT`, `IN_IGNORED` on its watch): one
/// `.folderWithdrawn`, never removals, then saves for the notes of the
/// folder found in its place.
///
/// Limits: a change made without closing a write descriptor (truncate(2) by
/// path, writes through mmap) or a hard link made with link(2) is seen at
/// the note's next close or rename, or at the next rescan.
final class NotesWatcher: @unchecked Sendable {
  // @unchecked: all mutable state below is touched only by the watcher's
  // own thread after `prepare()` (which runs before that thread starts;
  // Thread.start is the hand-over). `paused` is an Atomic; `pollLoop` is
  // Sendable, stopped by `NotesFolder.stop()` only.

  struct Tuning: Sendable {
    /// How long after a close or move a note is read (coalescing).
    var settleNanoseconds: UInt64 = 2_000_000
    /// How long after a delete or move away a removal is confirmed.
    var removalDelayNanoseconds: UInt64 = 200_000_000
    /// How long a note read as empty waits to be read again before it is
    /// reported. The kernel queues a truncation's IN_MODIFY only after the
    /// file is empty, so a writer paused between open(O_TRUNC) (or the
    /// O_CREAT of a file found by listing a new folder) and its first write
    /// looks exactly like an empty note with no event pending. Any event of
    /// the note ends the hold; a note still empty after it is reported.
    var emptyReadHoldNanoseconds: UInt64 = 200_000_000
    /// Pretend `inotify_add_watch` fails with ENOSPC after this many watches.
    var simulatedWatchLimit: Int? = nil
    /// Sees every raw event (tests check that editors made their droppings).
    var observer: (@Sendable (String, Inotify.Mask) -> Void)? = nil
  }

  static let watchMask: Inotify.Mask = [
    .closeWrite, .movedTo, .movedFrom, .create, .delete, .modify, .deleteSelf, .moveSelf,
    .onlyDirectory, .dontFollow, .excludeUnlinked,
  ]

  private let inotify: Inotify
  private let pollLoop: PollLoop
  private let index: NoteIndex
  private let names: NoteNames
  private let tuning: Tuning
  private let log = Logger(label: "notes")
  private var continuation: AsyncStream<NotesEvent>.Continuation?

  private var directories: [Inotify.Watch: String] = [:]
  /// While the notes folder itself is gone (deleted or moved away): a watch on
  /// the folder that held it, to notice it coming back.
  private var parentWatch: Inotify.Watch?
  private var pendingSaves: [String: UInt64] = [:]
  private var pendingRemovals: [String: UInt64] = [:]
  /// When the last removal was seen (`removalsDue`).
  private var lastRemovalSeen: UInt64 = 0
  /// Notes and folders moved away, by the cookie their move-to will carry.
  private var movedAway: [UInt32: (path: String, isDirectory: Bool)] = [:]
  /// New names of notes moved within the folder, with their old names.
  private var renames: [String: String] = [:]
  /// Notes found by the first scan of a folder that appeared, until read:
  /// one may be a note moved in before the folder was watched.
  private var foundInNewFolders: Set<String> = []
  /// Notes with events since the last drain (their reads may be torn).
  private var touched: Set<String> = []
  /// Notes read as empty and waiting for their second read.
  private var heldEmpty: Set<String> = []
  private var overflowed = false
  private var buffer = [UInt8](repeating: 0, count: 256 * 1024)
  /// Tests hold the reader back to provoke IN_Q_OVERFLOW.
  let paused = Atomic<Bool>(false)

  init(index: NoteIndex, names: NoteNames, tuning: Tuning) throws {
    do {
      pollLoop = try PollLoop()
    } catch {
      throw NotesError.system(operation: "pipe2 for", path: index.root, errno: error)
    }
    do {
      inotify = try Inotify(nonBlocking: true)
    } catch {
      throw NotesError.system(operation: "inotify_init1 for", path: index.root, errno: error)
    }
    self.index = index
    self.names = names
    self.tuning = tuning
  }

  /// Watches the whole tree and indexes every note (reporting none).
  func prepare() throws(NotesError) {
    do {
      try watchTree("", report: false)
    } catch {
      inotify.close()
      throw error
    }
  }

  /// Starts the reader thread; events go to `continuation`.
  func run(_ continuation: AsyncStream<NotesEvent>.Continuation) {
    self.continuation = continuation
    OwnedThread.start(name: "notes-watch") { [self] in self.loop() }
  }

  /// Ends the watch from any thread: the loop returns, closes the inotify
  /// descriptor and finishes the stream.
  func stop() { pollLoop.stop() }

  // MARK: The loop

  private func loop() {
    defer {
      inotify.close()
      continuation?.finish()
    }
    while !pollLoop.isStopped {
      do throws(Errno) {
        try pollLoop.run { [self] () -> PollLoop.Turn? in
          // While paused, only `stop()` is waited for, and the pause is
          // looked at again every 5 ms (tests only).
          if paused.load(ordering: .acquiring) {
            return PollLoop.Turn([], timeout: .milliseconds(5))
          }
          // Until the next pending save or removal is due; none: no timeout.
          var timeout: Duration?
          if let next = (Array(pendingSaves.values) + [removalsDue].compactMap { $0 }).min() {
            let now = NotesWatcher.now()
            timeout = next <= now ? .zero : .nanoseconds(Int64(min(next - now, 60_000_000_000)))
          }
          // Drain everything queued before acting, so one batch coalesces.
          return PollLoop.Turn(
            [
              PollLoop.Source(
                inotify.descriptor, onReadable: { [self] in drain() },
                onHangUp: { [self] _ in drain() })
            ], timeout: timeout, afterWait: { [self] in processDue() })
        }
      } catch {
        log.error("poll on the inotify descriptor: \(error)")
      }
    }
  }

  static func now() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
  }

  /// Reads and handles every event queued now (non-blocking).
  private func drain() {
    while true {
      guard let events = try? inotify.readEvents(into: &buffer), !events.isEmpty else { return }
      for event in events { handle(event) }
    }
  }

  private func handle(_ event: Inotify.Event) {
    if event.mask.contains(.queueOverflow) {
      log.warning("inotify queue overflowed; rescanning \(index.root)")
      overflowed = true
      rescan()
      return
    }
    if let parentWatch, event.watch == parentWatch {
      handleParent(event)
      return
    }
    guard let directory = directories[event.watch] else { return }
    if event.name.isEmpty, directory.isEmpty,
      !event.mask.isDisjoint(with: [.deleteSelf, .moveSelf, .unmount, .ignored])
    {
      // The notes folder itself: moved away, deleted, its file system
      // unmounted, or its watch dropped by the kernel for any other reason.
      let how =
        event.mask.contains(.moveSelf)
        ? "moved away" : event.mask.contains(.deleteSelf) ? "deleted" : "unmounted or lost"
      rootLost(how)
      return
    }
    if event.mask.contains(.ignored) {
      directories[event.watch] = nil
      return
    }
    if event.name.isEmpty { return }
    let path = NoteFile.child(directory, event.name)
    tuning.observer?(path, event.mask)
    if event.mask.contains(.isDirectory) {
      guard NoteNames.isWatchedDirectory(event.name) else { return }
      if event.mask.contains(.create) || event.mask.contains(.movedTo) {
        if event.mask.contains(.movedTo), let old = movedAway.removeValue(forKey: event.cookie),
          old.isDirectory
        {
          let prefix = old.path + "/"
          for note in index.paths(under: old.path) where note.hasPrefix(prefix) {
            renames[path + "/" + note.dropFirst(prefix.count)] = note
          }
        }
        do {
          try watchTree(path, report: true)
        } catch {
          log.error("\(error)")
        }
      } else if event.mask.contains(.movedFrom) || event.mask.contains(.delete) {
        if event.mask.contains(.movedFrom) { rememberMove(event.cookie, path, isDirectory: true) }
        unwatchTree(path)
        let due = scheduleRemoval()
        for note in index.paths(under: path) { pendingRemovals[note] = due }
      }
      return
    }
    guard names.isNote(event.name) else { return }
    touched.insert(path)
    heldEmpty.remove(path)
    if event.mask.contains(.closeWrite) || event.mask.contains(.movedTo) {
      if event.mask.contains(.movedTo), let old = movedAway.removeValue(forKey: event.cookie),
        !old.isDirectory
      {
        renames[path] = old.path
      }
      pendingSaves[path] = NotesWatcher.now() + tuning.settleNanoseconds
    } else if event.mask.contains(.modify) {
      // Written again after a close: wait for the writer's next close.
      pendingSaves[path] = nil
    } else if event.mask.contains(.movedFrom) || event.mask.contains(.delete) {
      if event.mask.contains(.movedFrom) {
        rememberMove(event.cookie, path, isDirectory: false)
        pairMoveIntoNewFolder(path, cookie: event.cookie)
      }
      pendingRemovals[path] = scheduleRemoval()
    }
  }

  /// When a removal seen now is due, noted as the last removal seen.
  private func scheduleRemoval() -> UInt64 {
    lastRemovalSeen = NotesWatcher.now()
    return lastRemovalSeen + tuning.removalDelayNanoseconds
  }

  /// When the pending removals are confirmed: all together, once the
  /// removal delay has passed since the last one seen (an `rm` of many
  /// files is one `.removed`), but no later than `removalBurstCap` after
  /// the first was due (an `rm -r` of a large tree goes in a few parts).
  private var removalsDue: UInt64? {
    guard let first = pendingRemovals.values.min() else { return nil }
    return min(lastRemovalSeen + tuning.removalDelayNanoseconds, first + Self.removalBurstCap)
  }
  static let removalBurstCap: UInt64 = 1_000_000_000

  /// `mkdir d; mv n.md d/`: the note's move-to happened in `d` before `d`
  /// was watched, so only its move-from is seen (after `d`'s creation), and
  /// `d`'s first scan finds the note as new. A note so found, not read yet,
  /// whose name is that of the note moved away from `path` is its rename,
  /// as if the move-to had been seen; `report` still checks that the old
  /// name is gone.
  private func pairMoveIntoNewFolder(_ path: String, cookie: UInt32) {
    let name = NoteFile.lastComponent(path)
    guard
      let newPath = foundInNewFolders.first(where: {
        renames[$0] == nil && pendingSaves[$0] != nil && NoteFile.lastComponent($0) == name
      })
    else { return }
    foundInNewFolders.remove(newPath)
    movedAway[cookie] = nil
    renames[newPath] = path
  }

  /// A move away whose move-to (same cookie) may follow; the memory is
  /// bounded (a move out of the folder never gets its move-to).
  private func rememberMove(_ cookie: UInt32, _ path: String, isDirectory: Bool) {
    if movedAway.count >= 256 { movedAway.removeAll() }
    movedAway[cookie] = (path, isDirectory)
  }

  /// Yields an event; a save of a note's new name whose old name is gone
  /// becomes `.renamed` (and the old name's removal is not reported again).
  private func report(_ event: NotesEvent) {
    if case .saved(let save) = event, let old = renames.removeValue(forKey: save.relativePath),
      index.dropIfGone(old)
    {
      pendingRemovals[old] = nil
      log.debug("renamed \(old) to \(save.relativePath)")
      continuation?.yield(.renamed(from: old, to: save))
      return
    }
    continuation?.yield(event)
  }

  /// Reads the notes whose settle delay is over, then drains the queue
  /// once more: a note written again meanwhile (a truncate after the close
  /// we acted on) may have been read torn, so its read is dropped and it
  /// waits for its next close. A note read as empty for the first time is
  /// held and read again (`Tuning.emptyReadHoldNanoseconds`). Then confirms
  /// removals.
  private func processDue() {
    let now = NotesWatcher.now()
    let due = pendingSaves.filter { $0.value <= now }.sorted { $0.value < $1.value }.map(\.key)
    if !due.isEmpty {
      touched.removeAll()
      overflowed = false
      var inspections: [(String, NoteIndex.Inspection)] = []
      for path in due {
        pendingSaves[path] = nil
        foundInNewFolders.remove(path)
        inspections.append((path, index.inspect(path)))
      }
      drain()
      for (path, inspection) in inspections where !overflowed && !touched.contains(path) {
        if inspection.isEmptyNote, heldEmpty.insert(path).inserted {
          pendingSaves[path] = now + tuning.emptyReadHoldNanoseconds
          continue
        }
        heldEmpty.remove(path)
        if let event = index.commit(inspection) { report(event) }
      }
      for path in due where pendingSaves[path] == nil { renames[path] = nil }
      touched.removeAll()
    }
    // Removals confirmed together are reported together (`rm *.md` is one
    // event): the engine holds many deletions for a person.
    guard let removalsDue, removalsDue <= now else { return }
    var removed: [String] = []
    for (path, due) in pendingRemovals.sorted(by: { $0.key < $1.key }) where due <= now {
      if pendingSaves[path] != nil { continue }
      pendingRemovals[path] = nil
      if index.dropIfGone(path) {
        log.debug("removed \(path)")
        removed.append(path)
      }
    }
    if !removed.isEmpty { continuation?.yield(.removed(relativePaths: removed)) }
  }

  // MARK: The notes folder itself

  private var rootName: String { String(index.root.split(separator: "/").last ?? "") }
  private var parentPath: String {
    let parent = index.root.split(separator: "/").dropLast().joined(separator: "/")
    return "/" + parent
  }

  /// The notes folder was deleted, moved away or unmounted (whatever comes
  /// in its place, and however soon): its notes are withdrawn, never
  /// removed. The index forgets them and one `.folderWithdrawn` is
  /// reported; removals and saves still pending for them are dropped (they
  /// were of the old folder). The folder that held it is watched until a
  /// folder is there again, whose notes are then reported as saves.
  private func rootLost(_ how: String) {
    guard parentWatch == nil else { return }
    unwatchTree("")
    pendingSaves.removeAll()
    pendingRemovals.removeAll()
    heldEmpty.removeAll()
    movedAway.removeAll()
    renames.removeAll()
    let withdrawn = index.dropAll(except: [])
    log.error(
      "the notes folder \(index.root) was \(how); its \(withdrawn.count) notes are withdrawn"
        + " here, not deleted: the peers keep them, and baton resumes when a folder is there again")
    continuation?.yield(.folderWithdrawn)
    do {
      parentWatch = try inotify.addWatch(
        parentPath, mask: [.create, .movedTo, .onlyDirectory, .dontFollow])
    } catch {
      log.error(
        "cannot watch \(parentPath) for the notes folder to come back: \(error); "
          + "restart baton once \(index.root) exists again")
      return
    }
    // It may be back already (a tool that replaces the folder by a rename).
    if NoteFile.isDirectory(index.root) { rootReturned() }
  }

  private func handleParent(_ event: Inotify.Event) {
    if event.mask.contains(.ignored) {
      parentWatch = nil
      log.error(
        "\(parentPath), which held the notes folder, is gone too; restart baton once \(index.root) exists again"
      )
      return
    }
    if event.name == rootName, event.mask.contains(.isDirectory),
      !event.mask.isDisjoint(with: [.create, .movedTo])
    {
      rootReturned()
    }
  }

  /// The notes folder exists again (the same one, or another in its place):
  /// watch it, and report every note in it as a save.
  private func rootReturned() {
    if let parentWatch { inotify.removeWatch(parentWatch) }
    parentWatch = nil
    log.notice(
      "the notes folder \(index.root) is there again; watching it, and its notes are offered as"
        + " they are")
    do {
      try watchTree("", report: true)
    } catch {
      log.error("\(error)")
    }
  }

  // MARK: Watches

  /// Watches `relativeDirectory` and every folder below it, then indexes
  /// the notes in them; with `report`, new or changed notes are yielded.
  private func watchTree(_ relativeDirectory: String, report: Bool) throws(NotesError) {
    let path = NoteFile.join(index.root, relativeDirectory)
    let watch: Inotify.Watch
    do {
      if let limit = tuning.simulatedWatchLimit, directories.count >= limit {
        throw Errno.noSpaceForWatches
      }
      watch = try inotify.addWatch(path, mask: NotesWatcher.watchMask)
    } catch let error as Errno where error == .noSpaceForWatches {
      throw .watchLimitReached(
        path: path, current: tuning.simulatedWatchLimit ?? Inotify.maximumUserWatches(),
        needed: NotesWatcher.countDirectories(index.root))
    } catch {
      // Gone again, or replaced by a symlink or a file: nothing to watch.
      log.debug("not watching \(path): \(error)")
      return
    }
    directories[watch] = relativeDirectory
    let entries = NoteFile.list(path)
    if !report { NoteWriter.removeStaleTemporaries(in: path, names: entries.map(\.name)) }
    for (name, kind) in entries {
      let child = NoteFile.child(relativeDirectory, name)
      switch kind {
      case .directory where NoteNames.isWatchedDirectory(name):
        try watchTree(child, report: report)
      case .file where names.isNote(name):
        if report {
          // A new folder's file may still be being written: read it through
          // the settle-and-drain path, which drops a torn read.
          pendingSaves[child] = NotesWatcher.now() + tuning.settleNanoseconds
          if foundInNewFolders.count < 4096 { foundInNewFolders.insert(child) }
        } else {
          _ = index.examine(child)
        }
      default:
        break
      }
    }
  }

  /// Removes the watches of a folder that moved away (its watch would keep
  /// reporting events under the old path).
  private func unwatchTree(_ relativeDirectory: String) {
    let prefix = relativeDirectory.isEmpty ? "" : relativeDirectory + "/"
    for (watch, path) in directories where path == relativeDirectory || path.hasPrefix(prefix) {
      inotify.removeWatch(watch)
      directories[watch] = nil
    }
  }

  /// After IN_Q_OVERFLOW: re-watch the whole tree, re-read every note and
  /// report whatever differs from the index, including removals.
  private func rescan() {
    pendingSaves.removeAll()
    heldEmpty.removeAll()
    pendingRemovals.removeAll()
    movedAway.removeAll()
    renames.removeAll()
    let old = directories
    directories.removeAll()
    var present = Set<String>()
    var changes: [NotesEvent] = []
    func walk(_ relativeDirectory: String) {
      let path = NoteFile.join(index.root, relativeDirectory)
      let watch: Inotify.Watch
      do {
        watch = try inotify.addWatch(path, mask: NotesWatcher.watchMask)
      } catch {
        if error == .noSpaceForWatches {
          let limit = NotesError.watchLimitReached(
            path: path, current: Inotify.maximumUserWatches(),
            needed: NotesWatcher.countDirectories(index.root))
          log.error("\(limit)")
        }
        return
      }
      directories[watch] = relativeDirectory
      for (name, kind) in NoteFile.list(path) {
        let child = NoteFile.child(relativeDirectory, name)
        switch kind {
        case .directory where NoteNames.isWatchedDirectory(name): walk(child)
        case .file where names.isNote(name):
          present.insert(child)
          if let event = index.examine(child) { changes.append(event) }
        default: break
        }
      }
    }
    walk("")
    for (watch, _) in old where directories[watch] == nil { inotify.removeWatch(watch) }
    for event in changes { continuation?.yield(event) }
    let removed = index.dropAll(except: present)
    if !removed.isEmpty { continuation?.yield(.removed(relativePaths: removed)) }
    log.info("rescan found \(changes.count) changed notes, \(present.count) in all")
  }

  /// The number of folders a full watch of `root` needs.
  static func countDirectories(_ root: String) -> Int {
    var count = 1
    for (name, kind) in NoteFile.list(root)
    where kind == .directory && NoteNames.isWatchedDirectory(name) {
      count += countDirectories(root + "/" + name)
    }
    return count
  }
}
