import BatonSystem
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Reading notes and listing folders, never following symlinks.
enum NoteFile {
  /// What identifies one version of a file cheaply (for "skipped until it
  /// changes").
  struct Signature: Equatable, Sendable {
    var size: Int
    var modified: timespec
    var inode: UInt64

    init(_ info: stat) {
      size = Int(info.st_size)
      modified = info.st_mtim
      inode = UInt64(info.st_ino)
    }

    /// Whether `stamp` describes this version of the file.
    func matches(_ stamp: NoteFileStamp) -> Bool {
      size == stamp.size && inode == stamp.inode && Int64(modified.tv_sec) == stamp.modifiedSeconds
        && Int64(modified.tv_nsec) == stamp.modifiedNanoseconds
    }

    func stamp(_ relativePath: String, hash: ContentHash) -> NoteFileStamp {
      NoteFileStamp(
        relativePath: relativePath, size: size, modifiedSeconds: Int64(modified.tv_sec),
        modifiedNanoseconds: Int64(modified.tv_nsec), inode: inode, hash: hash)
    }

    static func == (a: Signature, b: Signature) -> Bool {
      a.size == b.size && a.inode == b.inode && a.modified.tv_sec == b.modified.tv_sec
        && a.modified.tv_nsec == b.modified.tv_nsec
    }
  }

  enum ReadResult {
    /// A valid note.
    case note([UInt8], Signature)
    /// A file to skip (and warn about once): invalid UTF-8 or too big.
    case invalid(reason: String, Signature)
    /// Gone, a symlink, a folder, a FIFO: not a note at all.
    case absent
  }

  /// Reads the note at `path` (absolute), refusing symlinks and non-regular
  /// files, and files over `maximum` bytes. `known` is the signature of a
  /// version already skipped: when unchanged, returns `.invalid` unread.
  static func read(_ path: String, maximum: Int) -> ReadResult {
    // O_NONBLOCK: opening a FIFO called `x.md` must not block the watcher.
    guard
      let fd = try? FileDescriptor.open(path, [.readOnly, .noFollow, .nonBlocking])
    else { return .absent }
    defer { fd.closeIgnoringErrors() }
    var info = stat()
    guard fstat(fd.rawValue, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
      return .absent
    }
    let signature = Signature(info)
    if Int(info.st_size) > maximum {
      return .invalid(
        reason: "it is \(info.st_size) bytes, over the maximum note size of \(maximum) bytes",
        signature)
    }
    let bytes: [UInt8]
    do {
      bytes = try fd.readAll(limit: maximum)
    } catch let error as Errno where error.rawValue == EFBIG {
      return .invalid(
        reason: "it grew over the maximum note size of \(maximum) bytes", signature)
    } catch {
      return .absent
    }
    guard Note.isValidUTF8(bytes) else {
      return .invalid(reason: "it is not valid UTF-8", signature)
    }
    return .note(bytes, signature)
  }

  /// The signature of the file at `path` (not following symlinks), if it is
  /// a regular file.
  static func signature(_ path: String) -> Signature? {
    var info = stat()
    guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
    return Signature(info)
  }

  /// When the regular file at `path` was last modified, in nanoseconds since
  /// the Unix epoch (not following symlinks); nil if it is not a regular file.
  static func modificationTime(_ path: String) -> Int64? {
    var info = stat()
    guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
    let (seconds, overflow) = Int64(info.st_mtim.tv_sec).multipliedReportingOverflow(
      by: 1_000_000_000)
    return overflow ? Int64(info.st_mtim.tv_sec) : seconds &+ Int64(info.st_mtim.tv_nsec)
  }

  /// Whether `path` is a directory (not following symlinks).
  static func isDirectory(_ path: String) -> Bool {
    var info = stat()
    return lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
  }

  /// Whether `path` is a regular file (not following symlinks).
  static func isRegularFile(_ path: String) -> Bool { signature(path) != nil }

  enum Kind { case file, directory, symlink, other }

  /// The entries of the folder at `path` (without `.` and `..`), with their
  /// kind as lstat(2) sees it. Empty when the folder cannot be read.
  ///
  /// Entries that can never be notes are left out, each said once in the log:
  /// a name that is not valid UTF-8 (notes travel under UTF-8 names) and a
  /// symlink (never followed, so a note cannot be read from outside the folder).
  static func list(_ path: String) -> [(name: String, kind: Kind)] {
    guard let dir = opendir(path) else { return [] }
    defer { closedir(dir) }
    var result: [(String, Kind)] = []
    while let entry = readdir(dir) {
      let raw = withUnsafePointer(to: &entry.pointee.d_name) {
        let c = UnsafeRawPointer($0).assumingMemoryBound(to: UInt8.self)
        return Array(UnsafeBufferPointer(start: c, count: strlen(UnsafeRawPointer(c).assumingMemoryBound(to: CChar.self))))
      }
      guard let name = String(validating: raw, as: UTF8.self) else {
        skipped(
          path + "/" + String(decoding: raw, as: UTF8.self),
          "its name is not valid UTF-8; rename it to sync it")
        continue
      }
      if name == "." || name == ".." { continue }
      var kind: Kind
      switch Int32(entry.pointee.d_type) {
      case Int32(DT_REG): kind = .file
      case Int32(DT_DIR): kind = .directory
      case Int32(DT_LNK): kind = .symlink
      case Int32(DT_UNKNOWN):
        var info = stat()
        if lstat(path + "/" + name, &info) != 0 { continue }
        switch info.st_mode & S_IFMT {
        case S_IFREG: kind = .file
        case S_IFDIR: kind = .directory
        case S_IFLNK: kind = .symlink
        default: kind = .other
        }
      default: kind = .other
      }
      if kind == .symlink, !name.hasPrefix(".") {
        skipped(
          path + "/" + name,
          "it is a symlink, and baton never follows one; move the file or folder itself here to sync it")
        kind = .other
      }
      result.append((name, kind))
    }
    return result
  }

  /// Paths already said to be skipped (each is said once; bounded).
  private static let skippedPaths = Mutex<Set<String>>([])

  private static func skipped(_ path: String, _ why: String) {
    let first = skippedPaths.withLock {
      if $0.count > 4096 { $0.removeAll() }
      return $0.insert(path).inserted
    }
    if first { Logger(label: "notes").info("skipped \(path): \(why)") }
  }

  /// `root/relative` (or `root` for the empty relative path).
  static func join(_ root: String, _ relative: String) -> String {
    relative.isEmpty ? root : root + "/" + relative
  }

  /// `directory/name` for relative paths (`name` alone at the top).
  static func child(_ directory: String, _ name: String) -> String {
    directory.isEmpty ? name : directory + "/" + name
  }

  /// The name after the last `/` (the whole path at the top).
  static func lastComponent(_ path: String) -> Substring {
    guard let slash = path.lastIndex(of: "/") else { return path[...] }
    return path[path.index(after: slash)...]
  }
}
