import BatonSystem
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// What the watch of a notes folder reports.
public enum NotesEvent: Sendable, Equatable {
  /// A completed local save whose bytes differ from the index.
  case saved(NoteSave)
  /// Notes deleted or moved away (or turned invalid), confirmed together
  /// (one `rm` of many is one event); the index dropped them.
  case removed(relativePaths: [String])
  /// A note renamed or moved within the folder (one rename(2), of the note
  /// or of a folder holding it): the old name is gone, the save is the new
  /// name's content.
  case renamed(from: String, to: NoteSave)
  /// The notes folder itself was deleted, moved away, replaced or unmounted:
  /// every note it held is withdrawn, not deleted (the index forgot them).
  /// The notes of the folder found in its place, if any, follow as saves.
  case folderWithdrawn
}

/// A folder of markdown notes: its index, a recursive inotify watch turning
/// every completed save into one `NotesEvent.saved`, and safe write-back of
/// incoming notes (`writeNote`).
///
/// Watching uses raw inotify, not libinotifytools, whose process-global
/// state would allow only one watcher per process and which has no
/// descriptor to poll (see `Inotify`).
///
/// Notes are files matching `pattern` (fnmatch(3), default `*.md`) in the
/// folder or any non-hidden subfolder, valid UTF-8 and at most
/// `maximumNoteSize` bytes; other files are skipped with one warning per
/// version. Editor droppings (dotfiles, `*~`, `#*#`, `*.swp`, `4913`) are
/// never notes. Symlinks are never followed.
public final class NotesFolder: NoteFolderAccess {
  /// The folder's absolute path (symlinks in it resolved once, at init).
  public let root: String
  public let names: NoteNames
  public let maximumNoteSize: Int
  /// How many days a version stays in the trash (`trash-days`).
  public let trashDays: Int
  /// The most bytes the trash keeps (`trash-size`; 0: no cap): past it,
  /// the oldest versions go first.
  public let trashSize: Int
  /// The folder's device and inode when it was opened (`DEV:INODE`): another
  /// value at the next start means another folder in its place.
  public let identity: String
  /// The day of the last purge made after a trash.
  private let lastPurge = Mutex<String?>(nil)
  /// The default of `trashDays`.
  public static let defaultTrashDays = 30
  /// The default of `trashSize`: 500 MiB.
  public static let defaultTrashSize = 500 << 20

  let index: NoteIndex
  let tuning: NotesWatcher.Tuning
  private let writer: NoteWriter
  private let trash: NoteTrash
  private let log = Logger(label: "notes")

  private struct Running {
    var watcher: NotesWatcher
  }
  private let running = Mutex<Running?>(nil)

  /// Opens the folder at `root`. Throws `NotesError.rootMissing` or
  /// `.rootNotADirectory`. Nothing is read until `start()` or `buildIndex()`.
  public convenience init(
    root: String, pattern: String = "*.md", maximumNoteSize: Int = 1 << 20,
    trashDays: Int = NotesFolder.defaultTrashDays, trashSize: Int = NotesFolder.defaultTrashSize
  ) throws {
    try self.init(
      root: root, pattern: pattern, maximumNoteSize: maximumNoteSize, tuning: .init(),
      trashDays: trashDays, trashSize: trashSize)
  }

  init(
    root: String, pattern: String, maximumNoteSize: Int, tuning: NotesWatcher.Tuning,
    trashDays: Int = NotesFolder.defaultTrashDays, trashSize: Int = NotesFolder.defaultTrashSize
  ) throws {
    var info = stat()
    guard stat(root, &info) == 0 else {
      if Errno.current == .noEntry { throw NotesError.rootMissing(path: root) }
      throw NotesError.system(operation: "stat the notes folder", path: root, errno: .current)
    }
    guard (info.st_mode & S_IFMT) == S_IFDIR else {
      throw NotesError.rootNotADirectory(path: root)
    }
    var resolved = root
    if let real = realpath(root, nil) {
      resolved = String(cString: real)
      free(real)
    }
    self.root = resolved
    identity = "\(info.st_dev):\(info.st_ino)"
    self.names = NoteNames(pattern: pattern)
    self.maximumNoteSize = maximumNoteSize
    self.trashDays = trashDays
    self.trashSize = trashSize
    self.tuning = tuning
    self.index = NoteIndex(root: resolved, maximumNoteSize: maximumNoteSize)
    self.trash = NoteTrash(root: resolved, capacity: trashSize)
    self.writer = NoteWriter(
      root: resolved, names: names, index: index, maximumNoteSize: maximumNoteSize,
      trashCan: trash)
  }

  deinit { stop() }

  // MARK: Index and watch

  /// Builds the index without watching (a one-off scan) and returns it.
  @discardableResult
  public func buildIndex() throws -> [NoteIndexEntry] {
    func walk(_ relativeDirectory: String) {
      let path = NoteFile.join(root, relativeDirectory)
      let entries = NoteFile.list(path)
      NoteWriter.removeStaleTemporaries(in: path, names: entries.map(\.name))
      for (name, kind) in entries {
        let child = NoteFile.child(relativeDirectory, name)
        switch kind {
        case .directory where NoteNames.isWatchedDirectory(name): walk(child)
        case .file where names.isNote(name): _ = index.examine(child)
        default: break
        }
      }
    }
    walk("")
    return index.entries
  }

  /// Builds the index (every note's path, size and hash), then watches the
  /// folder. The stream yields one event per completed save or removal and
  /// finishes after `stop()`. Throws `NotesError.watchLimitReached` when
  /// `fs.inotify.max_user_watches` cannot cover every folder.
  public func start() throws -> AsyncStream<NotesEvent> {
    try running.withLock { (state) throws -> AsyncStream<NotesEvent> in
      precondition(state == nil, "NotesFolder.start() called twice without stop()")
      let watcher = try NotesWatcher(index: index, names: names, tuning: tuning)
      try watcher.prepare()
      index.endTrust()
      let (stream, continuation) = AsyncStream.makeStream(
        of: NotesEvent.self, bufferingPolicy: .unbounded)
      // A consumer that drops the stream stops the watch.
      let id = ObjectIdentifier(watcher)
      continuation.onTermination = { [weak self] _ in self?.stop(only: id) }
      watcher.run(continuation)
      state = Running(watcher: watcher)
      log.info("watching \(root): \(index.count) notes matching \(names.pattern)")
      return stream
    }
  }

  /// Stops the watch; the stream finishes. Safe to call more than once.
  public func stop() { stop(only: nil) }

  /// Stops the watch; with `only`, just when that watcher is the one running.
  private func stop(only watcher: ObjectIdentifier?) {
    running.withLock { state in
      guard let current = state else { return }
      if let watcher, ObjectIdentifier(current.watcher) != watcher { return }
      current.watcher.stop()
      state = nil
    }
  }

  /// Holds the watcher back from reading events (tests provoke an overflow).
  func pauseWatching(_ paused: Bool) {
    running.withLock { $0?.watcher.paused.store(paused, ordering: .releasing) }
  }

  /// Stamps (from the state database) that the next index build may trust:
  /// a file whose size, time and inode match is indexed with the stamp's
  /// hash without being read. Call before `start()` or `buildIndex()`.
  public func trust(_ stamps: [NoteFileStamp]) { index.trust(stamps) }

  /// The stamps of the files read and hashed since the last call, for the
  /// state database.
  public func takeFreshStamps() -> [NoteFileStamp] { index.takeFreshStamps() }

  // MARK: NoteFolderAccess

  public func indexEntries() -> [NoteIndexEntry] { index.entries }

  /// The bytes of the note at `relativePath` (validated like `writeNote`'s
  /// paths; never through a symlink).
  public func readNote(_ relativePath: String) throws -> [UInt8] {
    try writer.read(relativePath)
  }

  public func modificationTime(_ relativePath: String) -> Int64? {
    NoteFile.modificationTime(NoteFile.join(root, relativePath))
  }

  /// Writes an incoming note atomically (see `NoteFolderAccess`): a dotfile
  /// temp in the note's folder (created if missing), fsync, rename, fsync of
  /// the folder. A file holding other bytes than `expected` (or any file
  /// when `expected` is nil) is kept and the note goes to a conflict copy
  /// `<name>.conflict-<peer>-<UTC yyyymmddTHHMMSSZ>.md`; a file that is gone
  /// although `expected` was given is simply written (nothing local is
  /// lost). The file it replaces is kept in the trash first (hard-linked
  /// there, durably, before the rename; see `NoteWriter`). The write is not
  /// reported as a local save. Throws
  /// `NotesError`: `.invalidPath`/`.symlinkInPath` for refused paths,
  /// `.diskFull`/`.readOnly` (retryable: keep the note and try again later).
  public func writeNote(
    _ relativePath: String, bytes: [UInt8], replacing expected: ContentHash?, peer: String
  ) throws -> NoteWriteOutcome {
    try writer.write(relativePath, bytes: bytes, replacing: expected, peer: peer)
  }

  /// Moves a note to `.baton-trash/<UTC day>/` (see `NoteWriter.trash`),
  /// then, once a day, removes the trash's day folders older than `trashDays` days.
  public func trashNote(_ relativePath: String, expected: ContentHash) throws -> NoteTrashOutcome {
    let now = NoteWriter.wallClock()
    let day = NoteWriter.day(now)
    let outcome = try writer.trash(relativePath, expected: expected, day: day)
    // Once a day is enough: a folder removed with `rm -r` trashes many notes.
    let due = lastPurge.withLock { last -> Bool in
      guard last != day else { return false }
      last = day
      return true
    }
    if due { purgeTrash(now: now) }
    return outcome
  }

  /// Removes the trash's day folders older than `trashDays` days (returns
  /// how many), then its oldest versions while it weighs more than
  /// `trashSize`.
  @discardableResult
  public func purgeTrash(now: Int64? = nil) -> Int {
    let now = now ?? NoteWriter.wallClock()
    let (oldest, overflow) = Int64(trashDays).multipliedReportingOverflow(by: 86_400)
    let removed = overflow ? 0 : writer.purgeTrash(before: NoteWriter.day(now - oldest))
    trash.trim()
    return removed
  }

  /// Every version in the trash (`baton trash`): newest day first, each
  /// day's in the order they came.
  public func trashEntries() -> [NoteTrashEntry] { trash.entries() }

  /// Puts the newest version of `relativePath` in the trash (of `day`
  /// `yyyy-mm-dd`, or the newest day that holds one) back in the folder, as
  /// a local save: the watcher reports it and it travels. The version it
  /// replaces is kept in the trash first. Throws `NotesError.notInTrash`
  /// when the trash has none.
  public func restoreNote(_ relativePath: String, day: String? = nil) throws -> NoteRestoreOutcome {
    try writer.restore(relativePath, day: day)
  }

  /// Renames a note within the folder (see `NoteWriter.rename`).
  public func renameNote(_ from: String, to: String, expected: ContentHash) throws
    -> NoteMoveOutcome
  {
    try writer.rename(from, to: to, expected: expected)
  }

  public var isAvailable: Bool { NoteFile.isDirectory(root) }

  /// Writes several incoming notes with one flush for all (see `writeNote`
  /// for each; `NoteWriter.writeBatch` for the order of the steps).
  public func writeNotes(_ writes: [NoteWrite]) -> [Result<NoteWriteOutcome, any Error>] {
    writer.writeBatch(writes).map { $0.mapError { $0 as any Error } }
  }
}
