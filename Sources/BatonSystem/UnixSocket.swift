import CBatonShims

#if canImport(Glibc)
  import Glibc
#endif

/// A UNIX-domain stream socket (`AF_UNIX`, `SOCK_STREAM`): a thin wrapper in
/// the style of swift-system. Like `FileDescriptor` it does not close itself.
/// `sendDatagram` sends a single datagram, with a socket of its own.
public struct UnixSocket: Sendable {
  public let descriptor: FileDescriptor

  public init(descriptor: FileDescriptor) { self.descriptor = descriptor }

  /// The longest path a `sockaddr_un` can hold (107 bytes plus the NUL).
  public static let maximumPathLength = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1

  /// Errors naming the socket path and the failing call.
  public struct Failure: Error, CustomStringConvertible, Equatable {
    public var operation: String
    public var path: String
    public var errno: Errno
    public var description: String { "\(operation) \(path): \(errno)" }
  }

  /// A new unconnected socket (`socket(2)` with `SOCK_CLOEXEC`).
  public static func make() throws(Errno) -> UnixSocket {
    let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
    let fd = try retryingOnInterrupt { socket(AF_UNIX, type, 0) }
    return UnixSocket(descriptor: FileDescriptor(rawValue: fd))
  }

  /// Calls `body` with a `sockaddr_un` for `path`. With `abstract`, a path
  /// starting with "@" names a socket in Linux's abstract namespace: the "@"
  /// becomes a NUL byte and the address ends with the name.
  private static func withAddress<T>(
    _ path: String, abstract: Bool = false, _ body: (UnsafePointer<sockaddr>, socklen_t) -> T
  ) throws(Errno) -> T {
    var bytes = Array(path.utf8)
    guard !bytes.isEmpty, bytes.count <= maximumPathLength else {
      throw Errno(rawValue: ENAMETOOLONG)
    }
    var length = socklen_t(MemoryLayout<sockaddr_un>.size)
    if abstract && bytes[0] == UInt8(ascii: "@") {
      bytes[0] = 0
      length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count)
    }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
      for (index, byte) in bytes.enumerated() { raw[index] = byte }
    }
    return withUnsafePointer(to: &address) { pointer in
      pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) }
    }
  }

  /// Sends `bytes` as one datagram to the `SOCK_DGRAM` socket at `path`
  /// ("@name" for an abstract one), from a socket opened for this one
  /// `sendto(2)`. Does not block on a full receiver (`MSG_DONTWAIT`).
  public static func sendDatagram(_ bytes: [UInt8], to path: String) throws(Failure) {
    let type = Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
    let fd: Int32
    do { fd = try retryingOnInterrupt { Glibc.socket(AF_UNIX, type, 0) } } catch {
      throw Failure(operation: "socket", path: path, errno: error)
    }
    defer { FileDescriptor(rawValue: fd).closeIgnoringErrors() }
    do {
      try withAddress(path, abstract: true) { address, length in
        let sent = bytes.withUnsafeBytes { buffer in
          Glibc.sendto(
            fd, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT), address,
            length)
        }
        return Int32(sent < 0 ? -1 : 0)
      }.throwingErrno()
    } catch {
      throw Failure(operation: "sendto", path: path, errno: error)
    }
  }

  /// `bind(2)` to `path` then `listen(2)`. Fails with `EADDRINUSE` if a file
  /// is already there; the caller decides whether it is stale.
  public static func listen(path: String, backlog: Int32 = 16) throws(Failure) -> UnixSocket {
    let socket: UnixSocket
    do { socket = try make() } catch {
      throw Failure(operation: "socket", path: path, errno: error)
    }
    do {
      try withAddress(path) { address, length in
        Glibc.bind(socket.descriptor.rawValue, address, length)
      }.throwingErrno()
    } catch {
      socket.close()
      throw Failure(operation: "bind", path: path, errno: error)
    }
    guard Glibc.listen(socket.descriptor.rawValue, backlog) == 0 else {
      let error = Errno.current
      socket.close()
      throw Failure(operation: "listen", path: path, errno: error)
    }
    return socket
  }

  /// `connect(2)` to the socket at `path`.
  public static func connect(path: String) throws(Failure) -> UnixSocket {
    let socket: UnixSocket
    do { socket = try make() } catch {
      throw Failure(operation: "socket", path: path, errno: error)
    }
    do {
      try withAddress(path) { address, length in
        // connect(2) is not restartable after EINTR on a stream socket (it
        // continues asynchronously); the signals we care about are blocked.
        Glibc.connect(socket.descriptor.rawValue, address, length)
      }.throwingErrno()
    } catch {
      socket.close()
      throw Failure(operation: "connect", path: path, errno: error)
    }
    return socket
  }

  /// `accept4(2)` with `SOCK_CLOEXEC`; blocks until a client connects.
  public func accept() throws(Errno) -> UnixSocket {
    let fd = try retryingOnInterrupt { baton_accept4_cloexec(descriptor.rawValue) }
    return UnixSocket(descriptor: FileDescriptor(rawValue: fd))
  }

  /// Sets `SO_RCVTIMEO` and `SO_SNDTIMEO` so a silent peer cannot block us
  /// for ever (reads and writes then fail with `EAGAIN`).
  public func setTimeouts(seconds: Int) {
    var value = timeval(tv_sec: seconds, tv_usec: 0)
    let size = socklen_t(MemoryLayout<timeval>.size)
    setsockopt(descriptor.rawValue, SOL_SOCKET, SO_RCVTIMEO, &value, size)
    setsockopt(descriptor.rawValue, SOL_SOCKET, SO_SNDTIMEO, &value, size)
  }

  /// The user id of the connected peer (`SO_PEERCRED`).
  public func peerUserID() -> uid_t? {
    let uid = baton_peer_uid(descriptor.rawValue)
    return uid < 0 ? nil : uid_t(uid)
  }

  /// Reads up to and excluding the first newline; nil if the peer closed the
  /// connection before sending anything. Fails with `EMSGSIZE` past `limit`.
  public func readLine(limit: Int = 1 << 20) throws(Errno) -> [UInt8]? {
    var line: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
      let count = try retryingOnInterrupt {
        chunk.withUnsafeMutableBytes { recv(descriptor.rawValue, $0.baseAddress, $0.count, 0) }
      }
      if count == 0 { return line.isEmpty ? nil : line }
      if let newline = chunk[..<count].firstIndex(of: UInt8(ascii: "\n")) {
        line.append(contentsOf: chunk[..<newline])
        return line
      }
      line.append(contentsOf: chunk[..<count])
      if line.count > limit { throw Errno(rawValue: EMSGSIZE) }
    }
  }

  /// Sends every byte (`MSG_NOSIGNAL`: a vanished peer gives `EPIPE`, not a
  /// signal).
  public func writeAll(_ bytes: [UInt8]) throws(Errno) {
    var offset = 0
    while offset < bytes.count {
      let count = try retryingOnInterrupt {
        bytes.withUnsafeBytes { buffer in
          send(
            descriptor.rawValue, buffer.baseAddress! + offset, buffer.count - offset,
            Int32(MSG_NOSIGNAL))
        }
      }
      offset += count
    }
  }

  /// `shutdown(2)` both ways; on a listening socket this wakes a thread
  /// blocked in `accept()` (which then fails with `EINVAL`).
  public func shutdown() { _ = Glibc.shutdown(descriptor.rawValue, Int32(SHUT_RDWR)) }

  /// `close(2)`, ignoring errors.
  public func close() { descriptor.closeIgnoringErrors() }
}

extension Int32 {
  /// Throws `Errno.current` when a syscall returned -1.
  fileprivate func throwingErrno() throws(Errno) {
    if self == -1 { throw Errno.current }
  }
}
