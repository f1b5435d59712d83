#if canImport(Glibc)
  import Glibc
#endif

/// A C `errno` value as a Swift error.
///
/// Modelled on swift-system's `Errno`: a small `RawRepresentable` struct whose
/// `description` comes from `strerror`. Every syscall wrapper in
/// `Syscalls.swift` throws this, so the rest of the code never reads the C
/// global `errno` itself.
public struct Errno: Error, RawRepresentable, Hashable, Sendable, CustomStringConvertible {
  public let rawValue: Int32

  public init(rawValue: Int32) { self.rawValue = rawValue }

  /// The value of `errno` right now.
  public static var current: Errno { Errno(rawValue: errno) }

  public var description: String {
    guard let text = strerror(rawValue) else { return "errno \(rawValue)" }
    return String(cString: text)
  }

  /// The symbolic name when we know it (`EACCES`), else the number.
  public var name: String { Errno.names[rawValue] ?? "errno \(rawValue)" }

  public static let interrupted = Errno(rawValue: EINTR)
  public static let wouldBlock = Errno(rawValue: EAGAIN)
  public static let noEntry = Errno(rawValue: ENOENT)
  public static let exists = Errno(rawValue: EEXIST)
  public static let permissionDenied = Errno(rawValue: EACCES)
  public static let notPermitted = Errno(rawValue: EPERM)
  public static let busy = Errno(rawValue: EBUSY)
  public static let noDevice = Errno(rawValue: ENODEV)
  public static let noSpace = Errno(rawValue: ENOSPC)
  public static let readOnlyFileSystem = Errno(rawValue: EROFS)
  public static let addressFamilyNotSupported = Errno(rawValue: EAFNOSUPPORT)
  public static let connectionRefused = Errno(rawValue: ECONNREFUSED)
  public static let tooManyLinks = Errno(rawValue: ELOOP)
  public static let noSpaceForWatches = Errno(rawValue: ENOSPC)
  public static let noMemory = Errno(rawValue: ENOMEM)
  public static let invalidArgument = Errno(rawValue: EINVAL)
  /// EMLINK, "too many links": what the kernel makes of a controller's
  /// Connection Limit Exceeded.
  public static let linkLimit = Errno(rawValue: EMLINK)

  private static let names: [Int32: String] = [
    EPERM: "EPERM", ENOENT: "ENOENT", EINTR: "EINTR", EIO: "EIO", EBADF: "EBADF",
    EAGAIN: "EAGAIN", ENOMEM: "ENOMEM", EACCES: "EACCES", EBUSY: "EBUSY",
    EEXIST: "EEXIST", ENODEV: "ENODEV", ENOTDIR: "ENOTDIR", EISDIR: "EISDIR",
    EINVAL: "EINVAL", EMFILE: "EMFILE", ENOSPC: "ENOSPC", EROFS: "EROFS",
    EPIPE: "EPIPE", ENAMETOOLONG: "ENAMETOOLONG", ELOOP: "ELOOP",
    EAFNOSUPPORT: "EAFNOSUPPORT", EADDRINUSE: "EADDRINUSE", ECONNRESET: "ECONNRESET",
    ECONNREFUSED: "ECONNREFUSED", ETIMEDOUT: "ETIMEDOUT", ENXIO: "ENXIO",
    ERFKILL: "ERFKILL", EDQUOT: "EDQUOT", EXDEV: "EXDEV", ENOTCONN: "ENOTCONN",
  ]
}
