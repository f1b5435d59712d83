import BatonSystem
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Writes incoming notes into a folder safely: every path component opened
/// with `O_NOFOLLOW` relative to its parent's descriptor (nothing is ever
/// written outside the folder or through a symlink), a dotfile temp in the
/// same folder, fsync, rename, fsync of the folder. A crash at any point
/// leaves the old file or the new one, never a partial one.
///
/// The version an incoming note replaces is kept: before the rename, its
/// file is hard-linked into `.baton-trash/<UTC day>/<path>` (numbered like
/// a deletion's), and that link is durable before the rename is made (the
/// trash folder's fsync, or the batch's one `syncfs`). A link, not a copy:
/// atomic, no bytes written whatever the size, and exactly the inode the
/// rename takes away (a copy could miss a save made while it was read).
/// Where the file system has no hard links, the bytes are copied (and
/// fsynced) instead. When the re-check before the rename finds a local
/// save, the link is removed again (the file was not replaced).
struct NoteWriter: Sendable {
  let root: String
  let names: NoteNames
  let index: NoteIndex
  let maximumNoteSize: Int
  let trashCan: NoteTrash
  /// Bounds the conflict copies of each note per hour.
  var conflictCopies = ConflictCopyBudget()

  private static let counter = Atomic<UInt64>(0)
  private let log = Logger(label: "notes")

  func write(
    _ relativePath: String, bytes: [UInt8], replacing expected: ContentHash?, peer: String
  ) throws(NotesError) -> NoteWriteOutcome {
    switch try stage(relativePath, bytes: bytes, replacing: expected, peer: peer, sync: true) {
    case .done(let outcome):
      return outcome
    case .staged(let staged):
      defer {
        staged.directory.closeIgnoringErrors()
        staged.kept?.directory.closeIgnoringErrors()
      }
      let outcome = try commit(staged)
      syncDirectory(staged.directory, relativePath)
      return outcome
    }
  }

  /// Writes several incoming notes with one flush of the file system for all
  /// of them instead of one per note: every temporary file is written, then
  /// `syncfs(2)` makes them all durable at once, then each is renamed into
  /// place (or linked as a conflict copy), then each folder touched is
  /// fsynced once. A crash at any point still leaves each note's old file or
  /// its new one, never a partial one.
  func writeBatch(_ writes: [NoteWrite]) -> [Result<NoteWriteOutcome, NotesError>] {
    var results = [Result<NoteWriteOutcome, NotesError>?](repeating: nil, count: writes.count)
    var staged: [(Int, Staged)] = []
    for (i, w) in writes.enumerated() {
      do {
        switch try stage(
          w.relativePath, bytes: w.bytes, replacing: w.expected, peer: w.peer, sync: false)
        {
        case .done(let outcome): results[i] = .success(outcome)
        case .staged(let s): staged.append((i, s))
        }
      } catch {
        results[i] = .failure(error)
      }
    }
    if let first = staged.first?.1.directory, let error = Self.flush(first) {
      // Without the flush a rename could expose an empty file after a crash.
      for (i, s) in staged {
        _ = unlinkat(s.directory.rawValue, s.temporary, 0)
        s.directory.closeIgnoringErrors()
        if let kept = s.kept {
          _ = unlinkat(kept.directory.rawValue, kept.name, 0)
          kept.directory.closeIgnoringErrors()
        }
        results[i] = .failure(NotesError.writing("flush", s.relativePath, error))
      }
      staged = []
    }
    for (i, s) in staged {
      results[i] = Result { () throws(NotesError) in try commit(s) }
    }
    // The renames made durable: each folder's fsync, or one more syncfs when
    // the batch touched many folders.
    let folders = Dictionary(staged.map { ($0.1.folder, $0.1) }) { first, _ in first }
    let flushedOnce = folders.count > 4 && staged.first.map { Self.flush($0.1.directory) == nil } == true
    if !flushedOnce {
      for s in folders.values { syncDirectory(s.directory, s.relativePath) }
    }
    for (_, s) in staged {
      s.directory.closeIgnoringErrors()
      s.kept?.directory.closeIgnoringErrors()
    }
    return results.map { $0 ?? .failure(.notANote(path: "", reason: "not written")) }
  }

  /// A note written to its temporary file, not yet in place.
  private struct Staged {
    var relativePath: String
    var name: String
    var folder: String
    var directory: FileDescriptor
    var temporary: String
    var bytes: [UInt8]
    var hash: ContentHash
    var expected: ContentHash?
    var peer: String
    /// The version it replaces, linked into the trash.
    var kept: Kept?
  }

  /// A version linked (or copied) into the trash before a rename replaces it.
  struct Kept {
    /// Its folder in the trash, open.
    var directory: FileDescriptor
    /// Its name there.
    var name: String
    var day: String
    /// Its path in the day folder.
    var pathInDay: String
    var size: Int
  }

  private enum Stage {
    case done(NoteWriteOutcome)
    case staged(Staged)
  }

  /// Checks a write and puts the bytes in a temporary file next to the note
  /// (fsynced when `sync`); the caller owns the returned directory.
  private func stage(
    _ relativePath: String, bytes: [UInt8], replacing expected: ContentHash?, peer: String,
    sync: Bool
  ) throws(NotesError) -> Stage {
    let components = try names.validate(relativePath)
    if bytes.count > maximumNoteSize {
      throw .tooLarge(path: relativePath, size: bytes.count, maximum: maximumNoteSize)
    }
    if !Note.isValidUTF8(bytes) {
      throw .notANote(path: relativePath, reason: "the incoming bytes are not valid UTF-8")
    }
    // Not even its folders: a twin of a note here is refused (issue 31).
    if let twin = index.twin(of: relativePath) {
      throw .invalidPath(path: relativePath, reason: NoteNames.twinReason(twin))
    }
    let name = components[components.count - 1]
    let folder = components.dropLast().joined(separator: "/")
    let directory = try openDirectory(relativePath, components.dropLast(), create: true)
    let hash = ContentHash(of: bytes)
    do throws(NotesError) {
      let current = try currentVersion(relativePath, in: directory, name: name)
      if let current, current.hash == hash {
        index.recordWriteBack(relativePath, bytes: bytes, hash: hash)
        directory.closeIgnoringErrors()
        return .done(.unchanged(relativePath: relativePath))
      }
      let temporary = try writeTemporary(
        relativePath, bytes: bytes, in: directory, mode: current.map(\.noteMode), sync: sync)
      var kept: Kept?
      if let current, current.hash == expected, expected != nil {
        do throws(NotesError) {
          kept = try keep(relativePath, components, in: directory, current, sync: sync)
        } catch {
          _ = unlinkat(directory.rawValue, temporary, 0)
          throw error
        }
      }
      return .staged(
        Staged(
          relativePath: relativePath, name: name, folder: folder, directory: directory,
          temporary: temporary, bytes: bytes, hash: hash, expected: expected, peer: peer,
          kept: kept))
    } catch {
      directory.closeIgnoringErrors()
      throw error
    }
  }

  /// Puts a staged note in place: renamed over the expected version, or
  /// linked as a conflict copy when the file holds something else. Does not
  /// sync the folder.
  private func commit(_ s: Staged) throws(NotesError) -> NoteWriteOutcome {
    let (relativePath, name, directory, temporary, bytes, hash) = (
      s.relativePath, s.name, s.directory, s.temporary, s.bytes, s.hash
    )
    var removeTemporary = true
    var removeKept = true
    defer {
      if removeTemporary { _ = unlinkat(directory.rawValue, temporary, 0) }
      if removeKept, let kept = s.kept { _ = unlinkat(kept.directory.rawValue, kept.name, 0) }
    }

    // Re-check right before the rename: a save made while we wrote wins.
    let latest = try currentVersion(relativePath, in: directory, name: name)
    // A twin written since it was staged (one batch holding `A.md` and `a.md`).
    if latest == nil, let twin = index.twin(of: relativePath) {
      throw .invalidPath(path: relativePath, reason: NoteNames.twinReason(twin))
    }
    let conflict = latest != nil && latest?.hash != s.expected
    if !conflict {
      let previous = index.entry(relativePath)
      index.recordWriteBack(relativePath, bytes: bytes, hash: hash)
      do {
        try retryingOnInterrupt {
          renameat(directory.rawValue, temporary, directory.rawValue, name)
        }
      } catch {
        index.cancelWriteBack(relativePath, previous: previous)
        throw NotesError.writing("rename into", relativePath, error)
      }
      removeTemporary = false
      removeKept = false
      var replaced = ""
      if let kept = s.kept {
        trashCan.record(.overwritten, day: kept.day, name: kept.pathInDay, original: relativePath)
        trashCan.added(kept.size)
        replaced = "; the version it replaced is in \(NoteTrash.folder)/\(kept.day)/\(kept.pathInDay)"
      }
      log.info(
        "wrote \(relativePath) (\(bytes.count) bytes \(hash.short)) from \(s.peer)\(replaced)")
      return .written(relativePath: relativePath)
    }

    // A local version the caller did not expect: keep it, write a copy.
    let now = NoteWriter.wallClock()
    let time = Int(now)
    if case .replace(let copyPath, let firstTime) = conflictCopies.decide(relativePath, now: now) {
      // Over the bound: the newest incoming version replaces the most
      // recent copy; the local note stays as it is.
      let copyName = String(copyPath.split(separator: "/").last ?? "")
      // The copy's bytes (edited since, perhaps) go to the trash first, as
      // any version an incoming one replaces.
      var keptCopy: Kept?
      if let old = try currentVersion(copyPath, in: directory, name: copyName) {
        keptCopy = try keep(
          copyPath, copyPath.split(separator: "/").map(String.init), in: directory, old,
          sync: true)
      }
      defer { keptCopy?.directory.closeIgnoringErrors() }
      let previous = index.entry(copyPath)
      index.recordWriteBack(copyPath, bytes: bytes, hash: hash)
      do {
        try retryingOnInterrupt {
          renameat(directory.rawValue, temporary, directory.rawValue, copyName)
        }
      } catch {
        index.cancelWriteBack(copyPath, previous: previous)
        if let keptCopy { _ = unlinkat(keptCopy.directory.rawValue, keptCopy.name, 0) }
        throw NotesError.writing("rename over conflict copy", copyPath, error)
      }
      removeTemporary = false
      if let keptCopy {
        trashCan.record(
          .overwritten, day: keptCopy.day, name: keptCopy.pathInDay, original: copyPath)
        trashCan.added(keptCopy.size)
      }
      if firstTime {
        log.warning(
          "\(relativePath) has had \(conflictCopies.limit) conflict copies this hour; newer"
            + " versions from \(s.peer) replace \(copyPath) instead of adding copies"
            + " (merge the copies into \(relativePath) and delete them to end the conflict)")
      }
      return .conflictCopy(relativePath: copyPath)
    }
    for attempt in 0..<100 {
      var copyName = NoteNames.conflictName(for: name, peer: s.peer, time: time)
      if attempt > 0, let dot = copyName.lastIndex(of: ".") {
        copyName.insert(contentsOf: "-\(attempt + 1)", at: dot)
      }
      let copyPath = NoteFile.child(s.folder, copyName)
      index.recordWriteBack(copyPath, bytes: bytes, hash: hash)
      // link(2) fails with EEXIST rather than replacing: no copy is lost.
      if linkat(directory.rawValue, temporary, directory.rawValue, copyName, 0) == 0 {
        conflictCopies.recordCopy(relativePath, copyPath: copyPath, now: now)
        log.notice(
          "\(relativePath) holds a local version not yet sent; the note from \(s.peer)"
            + " went to \(copyPath)")
        return .conflictCopy(relativePath: copyPath)
      }
      let error = Errno.current
      index.cancelWriteBack(copyPath, previous: nil)
      if error == .exists { continue }
      throw NotesError.writing("link conflict copy", copyPath, error)
    }
    throw .system(operation: "choose a conflict copy name for", path: relativePath, errno: .exists)
  }

  /// Reads a note through descriptors that never follow symlinks.
  func read(_ relativePath: String) throws(NotesError) -> [UInt8] {
    let components = try names.validate(relativePath)
    let directory: FileDescriptor
    do {
      directory = try openDirectory(relativePath, components.dropLast(), create: false)
    } catch .system(_, _, .noEntry) {
      throw .noSuchNote(path: relativePath)
    }
    defer { directory.closeIgnoringErrors() }
    guard let current = try currentVersion(relativePath, in: directory, name: components.last!)
    else { throw .noSuchNote(path: relativePath) }
    guard let bytes = current.bytes else {
      throw .tooLarge(path: relativePath, size: current.size, maximum: maximumNoteSize)
    }
    return bytes
  }

  // MARK: Steps

  /// Opens the folder `components` below the root, creating missing ones.
  func openDirectory(
    _ relativePath: String, _ components: ArraySlice<String>, create: Bool
  ) throws(NotesError) -> FileDescriptor {
    var directory: FileDescriptor
    do {
      directory = try FileDescriptor.open(root, [.readOnly, .directory])
    } catch {
      throw .system(operation: "open the notes folder", path: root, errno: Errno(error))
    }
    for component in components {
      var opened: FileDescriptor?
      for _ in 0..<2 where opened == nil {
        do {
          opened = try FileDescriptor.open(
            component, [.readOnly, .directory, .noFollow], relativeTo: directory)
        } catch let error as Errno where error == .noEntry && create {
          // 0777 less the umask, as mkdir(1) makes it (0700 under the unit).
          if mkdirat(directory.rawValue, component, 0o777) != 0 && Errno.current != .exists {
            let failure = Errno.current
            directory.closeIgnoringErrors()
            throw NotesError.writing("create folder for", relativePath, failure)
          }
        } catch let error as Errno where error == .tooManyLinks || error.rawValue == ENOTDIR {
          directory.closeIgnoringErrors()
          throw .symlinkInPath(path: relativePath, component: component)
        } catch {
          directory.closeIgnoringErrors()
          throw .system(
            operation: "open folder \(component) of", path: relativePath, errno: Errno(error))
        }
      }
      directory.closeIgnoringErrors()
      guard let opened else {
        throw .system(operation: "open folder of", path: relativePath, errno: .noEntry)
      }
      directory = opened
    }
    return directory
  }

  struct Version {
    var hash: ContentHash?
    var bytes: [UInt8]?
    var size: Int
    var mode: mode_t

    /// The permissions the new version of this file gets: the old one's
    /// read and write bits. No execute, set-id or sticky bit: a peer's
    /// bytes never become a program because the file they replace was one.
    var noteMode: mode_t { mode & 0o666 }
  }

  /// The file now at `name` (nil: none). A file over the size limit has no
  /// hash (it matches no expected version).
  func currentVersion(
    _ relativePath: String, in directory: FileDescriptor, name: String
  ) throws(NotesError) -> Version? {
    let fd: FileDescriptor
    do {
      fd = try FileDescriptor.open(
        name, [.readOnly, .noFollow, .nonBlocking], relativeTo: directory)
    } catch let error as Errno where error == .noEntry {
      return nil
    } catch let error as Errno where error == .tooManyLinks {
      throw .symlinkInPath(path: relativePath, component: name)
    } catch {
      throw .system(operation: "open", path: relativePath, errno: Errno(error))
    }
    defer { fd.closeIgnoringErrors() }
    var info = stat()
    guard fstat(fd.rawValue, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
      throw .notANote(path: relativePath, reason: "a folder or special file is in the way")
    }
    let mode = info.st_mode & 0o7777
    guard Int(info.st_size) <= maximumNoteSize,
      let bytes = try? fd.readAll(limit: maximumNoteSize)
    else { return Version(hash: nil, bytes: nil, size: Int(info.st_size), mode: mode) }
    return Version(hash: ContentHash(of: bytes), bytes: bytes, size: bytes.count, mode: mode)
  }

  /// Writes `bytes` to a new dotfile in `directory` (fsynced when `sync`);
  /// returns its name. Its permissions are `mode` (the replaced file's, see
  /// `Version.noteMode`), or for a new note 0666 less the umask, as any
  /// program's new file (the user unit's `UMask=0077` gives 0600).
  func writeTemporary(
    _ relativePath: String, bytes: [UInt8], in directory: FileDescriptor, mode: mode_t?,
    sync: Bool
  ) throws(NotesError) -> String {
    let number = NoteWriter.counter.add(1, ordering: .relaxed).newValue
    let name = "\(NoteNames.temporaryPrefix)\(getpid())-\(number)"
    let fd: FileDescriptor
    do {
      fd = try FileDescriptor.open(
        name, [.writeOnly, .create, .exclusiveCreate, .noFollow], permissions: mode ?? 0o666,
        relativeTo: directory)
    } catch {
      throw NotesError.writing("create a temporary file for", relativePath, Errno(error))
    }
    do {
      // The replaced file's mode as it was, not narrowed by our umask.
      if let mode { _ = fchmod(fd.rawValue, mode) }
      try fd.writeAll(bytes)
      if sync { try fd.sync() }
      try fd.close()
    } catch {
      fd.closeIgnoringErrors()
      _ = unlinkat(directory.rawValue, name, 0)
      throw NotesError.writing("write", relativePath, Errno(error))
    }
    return name
  }

  /// `syncfs(2)` on the file system of `directory`; the error, if any.
  private static func flush(_ directory: FileDescriptor) -> Errno? {
    do {
      try directory.syncFileSystem()
      return nil
    } catch {
      return Errno(error)
    }
  }

  func syncDirectory(_ directory: FileDescriptor, _ relativePath: String) {
    do {
      try directory.sync()
    } catch {
      log.warning("fsync of the folder of \(relativePath) failed: \(error)")
    }
  }

  /// Removes temporaries left by writers that died (their pid is gone).
  static func removeStaleTemporaries(in path: String, names: [String]) {
    for name in names where name.hasPrefix(NoteNames.temporaryPrefix) {
      let rest = name.dropFirst(NoteNames.temporaryPrefix.count)
      guard let pid = rest.split(separator: "-").first.flatMap({ Int32($0) }) else { continue }
      if pid != getpid() && kill(pid, 0) != 0 && Errno.current.rawValue == ESRCH {
        _ = unlink(path + "/" + name)
      }
    }
  }

  static func wallClock() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return Int64(ts.tv_sec)
  }
}

extension Errno {
  /// The errno inside `error` (EIO when it is some other error).
  init(_ error: any Error) { self = (error as? Errno) ?? Errno(rawValue: EIO) }
}
