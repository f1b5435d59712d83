#if canImport(Glibc)
  import Glibc
#endif

/// An exclusive advisory lock on a directory, held as long as the value lives
/// or until `release()`: `flock(2)` on a `lock` file inside it, which records
/// the holder's pid so that a refused process can say who holds it. The kernel
/// drops the lock when the holder exits, however it exits, so a crash never
/// leaves a stale lock behind.
public final class DirectoryLock: Sendable {
  public enum Failure: Error, Equatable {
    /// Another process holds the lock; its pid, when the lock file names it.
    case held(pid: Int32?)
    /// The lock file cannot be opened or locked.
    case system(Errno)
  }

  private let descriptor: FileDescriptor

  /// Takes the lock on `directory` (which must exist) without waiting.
  public init(directory: String, fileName: String = "lock") throws(Failure) {
    let fd: FileDescriptor
    do {
      fd = try FileDescriptor.open(
        directory + "/" + fileName, [.readWrite, .create, .noFollow], permissions: 0o600)
    } catch {
      throw .system(error as? Errno ?? Errno(rawValue: EIO))
    }
    do {
      _ = try retryingOnInterrupt { flock(fd.rawValue, LOCK_EX | LOCK_NB) }
    } catch {
      let holder = try? fd.readAll(limit: 32)
      fd.closeIgnoringErrors()
      if error == .wouldBlock {
        let text = holder.map { String(decoding: $0, as: UTF8.self) } ?? ""
        throw .held(pid: Int32(text.filter { !$0.isWhitespace }))
      }
      throw .system(error)
    }
    // Ours now: record our pid for whoever is refused next.
    _ = ftruncate(fd.rawValue, 0)
    try? fd.writeAll(Array("\(getpid())\n".utf8))
    descriptor = fd
  }

  /// Releases the lock (closing the descriptor releases it).
  deinit { descriptor.closeIgnoringErrors() }
}
