import BatonSystem

#if canImport(Glibc)
  import Glibc
#endif

/// Deletions and renames made on a peer (baton(1), "Deletions and
/// renames"): a note deleted there is moved, never unlinked, to
/// `.baton-trash/<UTC yyyy-mm-dd>/<its path>` in its own folder (a hidden
/// folder, so never taken for notes), and the day folders older than the
/// retention are removed; a note renamed there is renamed here.
extension NoteWriter {
  /// The trash folder's name, directly below the notes folder.
  static let trashFolder = NoteTrash.folder

  /// Moves the note at `relativePath` to the trash if its file holds
  /// `expected`'s bytes (anything else is an edit this agent has not
  /// recorded yet, which a deletion made elsewhere must not take away).
  /// `day` is the day folder (`yyyy-mm-dd`). A name already in the day's
  /// trash gets `-2`, `-3` ... before its extension. Then the note's folders
  /// left empty are removed, up to (not including) the notes folder.
  func trash(_ relativePath: String, expected: ContentHash, day: String) throws(NotesError)
    -> NoteTrashOutcome
  {
    let components = try names.validate(relativePath)
    let name = components.last!
    let directory: FileDescriptor
    switch try openHolding(relativePath, components, expected) {
    case .gone: return .gone
    case .changed: return .changed
    case .holding(let d): directory = d
    }
    defer { directory.closeIgnoringErrors() }
    let place = [Self.trashFolder, day] + components.dropLast()
    let trash = try openDirectory(relativePath, place[...], create: true)
    defer { trash.closeIgnoringErrors() }
    for attempt in 1...100 {
      let target = attempt == 1 ? name : Self.numbered(name, attempt)
      guard let error = Self.move(name, in: directory, to: target, in: trash) else {
        syncDirectory(trash, relativePath)
        syncDirectory(directory, relativePath)
        removeEmptyFolders(components.dropLast(), of: relativePath)
        let pathInDay = (components.dropLast() + [target]).joined(separator: "/")
        trashCan.record(.deleted, day: day, name: pathInDay, original: relativePath)
        var info = stat()
        if fstatat(trash.rawValue, target, &info, AT_SYMLINK_NOFOLLOW) == 0 {
          trashCan.added(Int(info.st_size))
        }
        return .trashed(trashPath: (place + [target]).joined(separator: "/"))
      }
      if error != .exists { throw NotesError.writing("move to the trash", relativePath, error) }
    }
    throw .system(operation: "choose a name in the trash for", path: relativePath, errno: .exists)
  }

  /// Links the file of the note at `relativePath` (in `directory`, holding
  /// `current`) into today's trash at its path, numbered like a deletion's
  /// when the name is taken, before a rename replaces it; with `sync`, the
  /// link (and the file) are fsynced. Where the file system refuses hard
  /// links, `current`'s bytes are copied there instead. The caller owns the
  /// returned folder.
  func keep(
    _ relativePath: String, _ components: [String], in directory: FileDescriptor,
    _ current: Version, sync: Bool
  ) throws(NotesError) -> Kept {
    let name = components.last!
    let day = Self.day(Self.wallClock())
    let place = [Self.trashFolder, day] + components.dropLast()
    let trash = try openDirectory(relativePath, place[...], create: true)
    for attempt in 1...100 {
      let target = attempt == 1 ? name : Self.numbered(name, attempt)
      var error: Errno?
      if linkat(directory.rawValue, name, trash.rawValue, target, 0) != 0 {
        error = Errno.current
        if error == .permissionDenied || error?.rawValue == EPERM || error?.rawValue == EXDEV,
          let bytes = current.bytes
        {
          error = Self.copy(bytes, mode: current.mode, to: target, in: trash, sync: sync)
        }
      }
      guard let error else {
        if sync {
          if let fd = try? FileDescriptor.open(target, [.readOnly, .noFollow], relativeTo: trash) {
            try? fd.sync()
            fd.closeIgnoringErrors()
          }
          syncDirectory(trash, relativePath)
        }
        return Kept(
          directory: trash, name: target, day: day,
          pathInDay: (components.dropLast() + [target]).joined(separator: "/"), size: current.size)
      }
      if error != .exists {
        trash.closeIgnoringErrors()
        throw NotesError.writing("keep in the trash the version replaced of", relativePath, error)
      }
    }
    trash.closeIgnoringErrors()
    throw .system(operation: "choose a name in the trash for", path: relativePath, errno: .exists)
  }

  /// Writes `bytes` to a new file `target` in `trash` (never replacing
  /// one), fsynced when `sync`. The error, if any.
  private static func copy(
    _ bytes: [UInt8], mode: mode_t, to target: String, in trash: FileDescriptor, sync: Bool
  ) -> Errno? {
    let fd: FileDescriptor
    do {
      fd = try FileDescriptor.open(
        target, [.writeOnly, .create, .exclusiveCreate, .noFollow], permissions: mode,
        relativeTo: trash)
    } catch {
      return Errno(error)
    }
    do {
      try fd.writeAll(bytes)
      if sync { try fd.sync() }
      try fd.close()
      return nil
    } catch {
      fd.closeIgnoringErrors()
      _ = unlinkat(trash.rawValue, target, 0)
      return Errno(error)
    }
  }

  /// Renames the note at `from` to `to` if its file holds `expected`'s
  /// bytes and nothing is at `to` (folders of `to` are created; those `from`
  /// leaves empty are removed).
  func rename(_ from: String, to: String, expected: ContentHash) throws(NotesError) -> NoteMoveOutcome {
    let source = try names.validate(from)
    let target = try names.validate(to)
    // A rename that changes only the case of a name is no twin of itself.
    if let twin = index.twin(of: to), !twin.utf8.elementsEqual(from.utf8) {
      throw .invalidPath(path: to, reason: NoteNames.twinReason(twin))
    }
    let directory: FileDescriptor
    switch try openHolding(from, source, expected) {
    case .gone: return .gone
    case .changed: return .changed
    case .holding(let d): directory = d
    }
    defer { directory.closeIgnoringErrors() }
    let destination = try openDirectory(to, target.dropLast(), create: true)
    defer { destination.closeIgnoringErrors() }
    if let error = Self.move(source.last!, in: directory, to: target.last!, in: destination) {
      if error == .exists { return .taken }
      throw NotesError.writing("rename \(NotesError.quoted(from)) to", to, error)
    }
    syncDirectory(destination, to)
    syncDirectory(directory, from)
    removeEmptyFolders(source.dropLast(), of: from)
    return .moved
  }

  private enum Holding {
    case gone
    case changed
    /// The note's folder, open (the caller closes it).
    case holding(FileDescriptor)
  }

  /// The folder of the note at `relativePath` if its file holds `expected`'s
  /// bytes; whether it is gone or holds others otherwise.
  private func openHolding(
    _ relativePath: String, _ components: [String], _ expected: ContentHash
  ) throws(NotesError) -> Holding {
    let directory: FileDescriptor
    do {
      directory = try openDirectory(relativePath, components.dropLast(), create: false)
    } catch .system(_, _, .noEntry) {
      return .gone
    }
    let current: Version?
    do {
      current = try currentVersion(relativePath, in: directory, name: components.last!)
    } catch {
      directory.closeIgnoringErrors()
      throw error
    }
    guard let current, current.hash == expected else {
      directory.closeIgnoringErrors()
      return current == nil ? .gone : .changed
    }
    return .holding(directory)
  }

  /// Moves `name` without ever replacing a file at `target`: a hard link
  /// then an unlink, or (where the file system has no hard links) a rename
  /// after checking that `target` is free. The error, if any.
  private static func move(
    _ name: String, in directory: FileDescriptor, to target: String, in trash: FileDescriptor
  ) -> Errno? {
    if linkat(directory.rawValue, name, trash.rawValue, target, 0) == 0 {
      guard unlinkat(directory.rawValue, name, 0) == 0 else {
        let error = Errno.current
        _ = unlinkat(trash.rawValue, target, 0)
        return error
      }
      return nil
    }
    let error = Errno.current
    guard error == .permissionDenied || error.rawValue == EPERM || error.rawValue == EXDEV else {
      return error
    }
    var info = stat()
    if fstatat(trash.rawValue, target, &info, AT_SYMLINK_NOFOLLOW) == 0 { return .exists }
    return renameat(directory.rawValue, name, trash.rawValue, target) == 0 ? nil : Errno.current
  }

  /// `name` with `-n` before its last dot (or at its end).
  static func numbered(_ name: String, _ n: Int) -> String {
    guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return "\(name)-\(n)" }
    return "\(name[..<dot])-\(n)\(name[dot...])"
  }

  /// Removes the folders of `components` that are empty, deepest first,
  /// stopping at the first that is not (rmdir(2) never removes a file).
  private func removeEmptyFolders(_ components: ArraySlice<String>, of relativePath: String) {
    var folders = components
    while let last = folders.last {
      folders.removeLast()
      guard let parent = try? openDirectory(relativePath, folders, create: false) else { return }
      let removed = unlinkat(parent.rawValue, last, AT_REMOVEDIR) == 0
      parent.closeIgnoringErrors()
      if !removed { return }
    }
  }

  /// Removes the trash's day folders whose day is before `oldestKept`
  /// (`yyyy-mm-dd`); other names in the trash are left alone. Returns how
  /// many day folders went.
  @discardableResult
  func purgeTrash(before oldestKept: String) -> Int {
    let trash = NoteFile.join(root, Self.trashFolder)
    var removed = 0
    for (name, kind) in NoteFile.list(trash)
    where kind == .directory && Self.isDay(name) && name < oldestKept {
      Self.removeTree(trash + "/" + name)
      removed += 1
    }
    return removed
  }

  /// Whether `name` is `yyyy-mm-dd`.
  static func isDay(_ name: String) -> Bool {
    let bytes = Array(name.utf8)
    guard bytes.count == 10 else { return false }
    return bytes.enumerated().allSatisfy { i, b in
      i == 4 || i == 7 ? b == UInt8(ascii: "-") : (b >= 0x30 && b <= 0x39)
    }
  }

  /// Removes a folder and everything in it (symlinks themselves, never what
  /// they point to).
  private static func removeTree(_ path: String) {
    for (name, kind) in NoteFile.list(path) {
      let child = path + "/" + name
      if kind == .directory { removeTree(child) } else { _ = unlink(child) }
    }
    _ = rmdir(path)
  }

  /// The UTC day (`yyyy-mm-dd`) of `time` (seconds since the epoch).
  static func day(_ time: Int64) -> String {
    var seconds = time_t(time)
    var parts = tm()
    gmtime_r(&seconds, &parts)
    func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
    return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))"
  }
}
