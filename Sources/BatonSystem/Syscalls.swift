#if canImport(Glibc)
  import Glibc
#endif

/// Runs a syscall that returns -1 on failure, retrying on EINTR, and throws
/// `Errno` on any other failure. The only place that reads `errno` for
/// syscalls; every wrapper goes through here (as in swift-system's
/// `Internals/Syscalls.swift`).
@inline(__always)
@discardableResult
public func retryingOnInterrupt<T: FixedWidthInteger>(_ body: () -> T) throws(Errno) -> T {
  while true {
    let result = body()
    if result != -1 { return result }
    let error = Errno.current
    if error != .interrupted { throw error }
  }
}

/// Like `retryingOnInterrupt`, for calls that must not be retried (`close`).
@inline(__always)
@discardableResult
public func checked<T: FixedWidthInteger>(_ body: () -> T) throws(Errno) -> T {
  let result = body()
  if result == -1 { throw Errno.current }
  return result
}
