#if canImport(Glibc)
  import Glibc
#endif

/// Thin wrappers for the few path calls outside `FileDescriptor`, in its
/// style: failures are `Errno`, EINTR is retried, and the callers never read
/// `errno` themselves.
public enum FileSystem {
  /// `lstat(2)`: the status of `path` itself (a symbolic link is not followed).
  public static func linkStatus(_ path: String) throws(Errno) -> stat {
    var info = stat()
    try retryingOnInterrupt { lstat(path, &info) }
    return info
  }

  /// `rename(2)`.
  public static func rename(_ source: String, to destination: String) throws(Errno) {
    try retryingOnInterrupt { Glibc.rename(source, destination) }
  }

  /// `execvp(3)`: replaces this process with `arguments` (the program looked
  /// up on `$PATH`); returns only if that failed, with why.
  public static func execute(_ arguments: [String]) -> Errno {
    guard let program = arguments.first else { return Errno(rawValue: EINVAL) }
    var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) }
    argv.append(nil)
    defer { for pointer in argv { free(pointer) } }
    execvp(program, &argv)
    return Errno.current
  }
}

/// Sleeps the calling thread for `duration` (`nanosleep(2)`, resumed with the
/// time left after a signal). Blocks: only on a thread we own, or in a
/// command-line tool.
public func sleepThread(for duration: Duration) {
  guard duration > .zero else { return }
  let (seconds, attoseconds) = duration.components
  var request = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
  var remaining = timespec()
  while nanosleep(&request, &remaining) != 0 && Errno.current == .interrupted {
    request = remaining
  }
}
