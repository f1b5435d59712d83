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
struct NoteWriter: Sendable {
  let root: String
  let names: NoteNames
  let index: NoteIndex
  let maximumNoteSize: Int

  private static let counter = Atomic<UInt64>(0)
  private let log = Logger(label: "notes")

  func write(
    _ relativePath: String, bytes: [UInt8], replacing expected: ContentHash?, peer: String
  ) throws(NotesError) -> NoteWriteOutcome {
    let components = try names.validate(relativePath)
    if bytes.count > maximumNoteSize {
      throw .tooLarge(path: relativePath, size: bytes.count, maximum: maximumNoteSize)
    }
    if !Note.isValidUTF8(bytes) {
      throw .notANote(path: relativePath, reason: "the incoming bytes are not valid UTF-8")
    }
    let name = components[components.count - 1]
    let folder = components.dropLast().joined(separator: "/")
    let directory = try openDirectory(relativePath, components.dropLast(), create: true)
    defer { directory.closeIgnoringErrors() }

    let hash = ContentHash(of: bytes)
    let current = try currentVersion(relativePath, in: directory, name: name)
    if let current, current.hash == hash {
      index.recordWriteBack(relativePath, bytes: bytes, hash: hash)
      return .unchanged(relativePath: relativePath)
    }
    let temporary = try writeTemporary(
      relativePath, bytes: bytes, in: directory, mode: current?.mode ?? 0o644)
    var removeTemporary = true
    defer { if removeTemporary { _ = unlinkat(directory.rawValue, temporary, 0) } }

    // Re-check right before the rename: a save made while we wrote wins.
    let latest = try currentVersion(relativePath, in: directory, name: name)
    let conflict = latest != nil && latest?.hash != expected
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
      syncDirectory(directory, relativePath)
      log.info("wrote \(relativePath) (\(bytes.count) bytes \(hash.short)) from \(peer)")
      return .written(relativePath: relativePath)
    }

    // A local version the caller did not expect: keep it, write a copy.
    let time = Int(NoteWriter.wallClock())
    for attempt in 0..<100 {
      var copyName = NoteNames.conflictName(for: name, peer: peer, time: time)
      if attempt > 0, let dot = copyName.lastIndex(of: ".") {
        copyName.insert(contentsOf: "-\(attempt + 1)", at: dot)
      }
      let copyPath = NoteFile.child(folder, copyName)
      index.recordWriteBack(copyPath, bytes: bytes, hash: hash)
      // link(2) fails with EEXIST rather than replacing: no copy is lost.
      if linkat(directory.rawValue, temporary, directory.rawValue, copyName, 0) == 0 {
        syncDirectory(directory, relativePath)
        log.notice(
          "\(relativePath) holds a local version not yet sent; the note from \(peer)"
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
  private func openDirectory(
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
          if mkdirat(directory.rawValue, component, 0o755) != 0 && Errno.current != .exists {
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

  private struct Version {
    var hash: ContentHash?
    var bytes: [UInt8]?
    var size: Int
    var mode: mode_t
  }

  /// The file now at `name` (nil: none). A file over the size limit has no
  /// hash (it matches no expected version).
  private func currentVersion(
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

  /// Writes `bytes` to a new dotfile in `directory`, fsynced; returns its name.
  private func writeTemporary(
    _ relativePath: String, bytes: [UInt8], in directory: FileDescriptor, mode: mode_t
  ) throws(NotesError) -> String {
    let number = NoteWriter.counter.add(1, ordering: .relaxed).newValue
    let name = "\(NoteNames.temporaryPrefix)\(getpid())-\(number)"
    let fd: FileDescriptor
    do {
      fd = try FileDescriptor.open(
        name, [.writeOnly, .create, .exclusiveCreate, .noFollow], permissions: mode,
        relativeTo: directory)
    } catch {
      throw NotesError.writing("create a temporary file for", relativePath, Errno(error))
    }
    do {
      _ = fchmod(fd.rawValue, mode)
      try fd.writeAll(bytes)
      try fd.sync()
      try fd.close()
    } catch {
      fd.closeIgnoringErrors()
      _ = unlinkat(directory.rawValue, name, 0)
      throw NotesError.writing("write", relativePath, Errno(error))
    }
    return name
  }

  private func syncDirectory(_ directory: FileDescriptor, _ relativePath: String) {
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
