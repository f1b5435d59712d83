import BatonSystem

#if canImport(Glibc)
  import Glibc
#endif

/// What went wrong in the notes layer: on which path, and what the user can do.
public enum NotesError: Error, CustomStringConvertible, Equatable, Sendable {
  /// The folder to watch does not exist.
  case rootMissing(path: String)
  /// The folder to watch is not a directory.
  case rootNotADirectory(path: String)
  /// A path from a peer was refused; `reason` says why.
  case invalidPath(path: String, reason: String)
  /// A path from a peer leads through a symlink inside the folder.
  case symlinkInPath(path: String, component: String)
  /// The note is too big to write or read.
  case tooLarge(path: String, size: Int, maximum: Int)
  /// The note is not a regular file.
  case notANote(path: String, reason: String)
  /// There is no note at the path (it was deleted or moved away).
  case noSuchNote(path: String)
  /// The trash holds no version of the note (of `day`, when given).
  case notInTrash(path: String, day: String?)
  /// `fs.inotify.max_user_watches` is exhausted.
  case watchLimitReached(path: String, current: Int?, needed: Int)
  /// The disk (or the user's quota) is full; nothing local was changed.
  case diskFull(path: String)
  /// The folder is read-only or not writable by us; nothing local was changed.
  case readOnly(path: String, errno: Errno)
  /// Any other system call failure.
  case system(operation: String, path: String, errno: Errno)

  public var description: String {
    switch self {
    case .rootMissing(let path):
      return "notes folder \(path) does not exist; create it or fix the configured path"
    case .rootNotADirectory(let path):
      return "notes folder \(path) is not a directory; point the configuration at a folder"
    case .invalidPath(let path, let reason):
      return "refused note path \(Self.quoted(path)): \(reason)"
    case .symlinkInPath(let path, let component):
      return "refused note path \(Self.quoted(path)): \(Self.quoted(component)) is a symlink"
        + " (or not a folder); notes are never written through symlinks"
    case .tooLarge(let path, let size, let maximum):
      return "note \(path) is \(size) bytes, over the maximum of \(maximum) bytes"
    case .notANote(let path, let reason):
      return "\(path) is not a note: \(reason)"
    case .noSuchNote(let path):
      return "there is no note \(path) (it was deleted or moved away)"
    case .notInTrash(let path, let day):
      return "the trash holds no version of \(path)\(day.map { " of \($0)" } ?? "");"
        + " 'baton trash' lists what it holds"
    case .watchLimitReached(let path, let current, let needed):
      let now = current.map { "\($0)" } ?? "unknown"
      let suggestion = current.map { $0 + needed } ?? needed * 2
      return "cannot watch \(path): the inotify watch limit fs.inotify.max_user_watches"
        + " (currently \(now)) is exhausted; this notes folder needs \(needed) watches"
        + " (one per folder). Raise it, for example"
        + " `sudo sysctl fs.inotify.max_user_watches=\(suggestion)`, and persist it in"
        + " /etc/sysctl.d/"
    case .diskFull(let path):
      return "cannot write \(path): no space left on the device (or quota exceeded);"
        + " the local folder is unchanged and the note is kept for a retry"
    case .readOnly(let path, let errno):
      return "cannot write \(path): \(errno) (\(errno.name)); the folder is read-only or"
        + " not writable; the local folder is unchanged and the note is kept for a retry"
    case .system(let operation, let path, let errno):
      return "\(operation) \(path) failed: \(errno) (\(errno.name))"
    }
  }

  /// Whether a later retry of the same write may succeed.
  public var isRetryable: Bool {
    switch self {
    case .diskFull, .readOnly, .system: true
    default: false
    }
  }

  /// Maps a write-side errno to the error the caller should see.
  static func writing(_ operation: String, _ path: String, _ errno: Errno) -> NotesError {
    switch errno {
    case .noSpace, Errno(rawValue: EDQUOT): .diskFull(path: path)
    case .readOnlyFileSystem, .permissionDenied, .notPermitted: .readOnly(path: path, errno: errno)
    default: .system(operation: operation, path: path, errno: errno)
    }
  }

  /// A path for an error message, in quotes, escaped (`escapedForDisplay`).
  static func quoted(_ path: String) -> String {
    "\"" + path.escapedForDisplay + "\""
  }
}
