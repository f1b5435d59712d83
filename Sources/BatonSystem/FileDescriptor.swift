import CBatonShims

#if canImport(Glibc)
  import Glibc
#endif

/// An open file descriptor: a thin wrapper in the style of swift-system.
///
/// It does not close itself; ownership is explicit (`close()`), so a
/// descriptor can be handed between threads as a plain value.
public struct FileDescriptor: RawRepresentable, Hashable, Sendable {
  public let rawValue: Int32
  public init(rawValue: Int32) { self.rawValue = rawValue }

  /// Flags for `open(2)`. The corresponding C constants are `O_*`.
  public struct OpenOptions: OptionSet, Sendable {
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }
    public static let readOnly = OpenOptions(rawValue: O_RDONLY)
    public static let writeOnly = OpenOptions(rawValue: O_WRONLY)
    public static let readWrite = OpenOptions(rawValue: O_RDWR)
    public static let create = OpenOptions(rawValue: O_CREAT)
    public static let exclusiveCreate = OpenOptions(rawValue: O_EXCL)
    public static let truncate = OpenOptions(rawValue: O_TRUNC)
    public static let append = OpenOptions(rawValue: O_APPEND)
    public static let noFollow = OpenOptions(rawValue: O_NOFOLLOW)
    public static let directory = OpenOptions(rawValue: O_DIRECTORY)
    public static let closeOnExec = OpenOptions(rawValue: O_CLOEXEC)
    public static let nonBlocking = OpenOptions(rawValue: O_NONBLOCK)
    public static let noControllingTerminal = OpenOptions(rawValue: O_NOCTTY)
  }

  /// `open(2)`, always with `O_CLOEXEC`.
  public static func open(
    _ path: String, _ options: OpenOptions, permissions: mode_t = 0o644,
    relativeTo directory: FileDescriptor? = nil
  ) throws -> FileDescriptor {
    let flags = options.union(.closeOnExec).rawValue
    let fd = try retryingOnInterrupt {
      openat(directory?.rawValue ?? AT_FDCWD, path, flags, permissions)
    }
    return FileDescriptor(rawValue: fd)
  }

  /// `read(2)` into `buffer`; returns the byte count (0 at end of file).
  public func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
    try retryingOnInterrupt { Glibc.read(rawValue, buffer.baseAddress, buffer.count) }
  }

  /// Reads up to `count` bytes; an empty array means end of file.
  public func read(upToCount count: Int) throws -> [UInt8] {
    var bytes = [UInt8](repeating: 0, count: count)
    let n = try bytes.withUnsafeMutableBytes { (buffer) throws -> Int in
      try read(into: buffer)
    }
    bytes.removeSubrange(n...)
    return bytes
  }

  /// Reads until end of file, failing once more than `limit` bytes arrive.
  public func readAll(limit: Int = .max) throws -> [UInt8] {
    var result: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
      let n = try chunk.withUnsafeMutableBytes { (buffer) throws -> Int in
        try read(into: buffer)
      }
      if n == 0 { return result }
      result.append(contentsOf: chunk[..<n])
      if result.count > limit { throw Errno(rawValue: EFBIG) }
    }
  }

  /// `write(2)` once; returns how many bytes were written.
  public func write(_ buffer: UnsafeRawBufferPointer) throws -> Int {
    try retryingOnInterrupt { Glibc.write(rawValue, buffer.baseAddress, buffer.count) }
  }

  /// Writes every byte, looping over short writes.
  public func writeAll<C: Collection>(_ bytes: C) throws where C.Element == UInt8 {
    let array = Array(bytes)
    try array.withUnsafeBytes { (buffer) throws in
      var offset = 0
      while offset < buffer.count {
        offset += try write(UnsafeRawBufferPointer(rebasing: buffer[offset...]))
      }
    }
  }

  /// `fsync(2)`.
  public func sync() throws { try retryingOnInterrupt { fsync(rawValue) } }

  /// `syncfs(2)`: makes everything written to the file system holding this
  /// descriptor durable, in one flush.
  public func syncFileSystem() throws { try checked { baton_syncfs(rawValue) } }

  /// Sets or clears `O_NONBLOCK` (`fcntl(2)`, `F_SETFL`); returns whether
  /// it was set before, so that a caller can put it back.
  @discardableResult
  public func setNonBlocking(_ on: Bool) throws(Errno) -> Bool {
    let flags = try retryingOnInterrupt { fcntl(rawValue, F_GETFL) }
    let was = flags & O_NONBLOCK != 0
    if was != on {
      try retryingOnInterrupt {
        fcntl(rawValue, F_SETFL, on ? flags | O_NONBLOCK : flags & ~O_NONBLOCK)
      }
    }
    return was
  }

  /// `close(2)`; never retried (Linux closes the descriptor even on EINTR).
  public func close() throws { try checked { Glibc.close(rawValue) } }

  /// Closes and ignores the result, for clean-up paths.
  public func closeIgnoringErrors() { _ = Glibc.close(rawValue) }
}
