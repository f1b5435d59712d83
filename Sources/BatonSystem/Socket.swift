import CBatonShims

#if canImport(Glibc)
  import Glibc
#endif

/// Thin wrappers for the few socket, poll and termios calls the transports
/// use, in the style of `FileDescriptor`: every call goes through
/// `retryingOnInterrupt`, failures are `Errno`.
public enum Socket {
  /// Connects a TCP stream socket to `host:port` (IPv4 or IPv6, through
  /// getaddrinfo(3)), with `TCP_NODELAY` set. The descriptor is close-on-exec.
  public static func connectTCP(host: String, port: UInt16) throws -> FileDescriptor {
    var hints = addrinfo()
    hints.ai_family = AF_UNSPEC
    hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
    var list: UnsafeMutablePointer<addrinfo>?
    let rc = getaddrinfo(host, String(port), &hints, &list)
    guard rc == 0, let first = list else {
      throw SocketError.resolve(host: host, message: String(cString: gai_strerror(rc)))
    }
    defer { freeaddrinfo(list) }
    var lastError = Errno.connectionRefused
    var entry: UnsafeMutablePointer<addrinfo>? = first
    while let info = entry {
      entry = info.pointee.ai_next
      let fd: Int32
      do {
        fd = try retryingOnInterrupt {
          socket(
            info.pointee.ai_family, info.pointee.ai_socktype | Int32(SOCK_CLOEXEC.rawValue),
            info.pointee.ai_protocol)
        }
      } catch {
        lastError = error
        continue
      }
      if Glibc.connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 {
        var one: Int32 = 1
        _ = setsockopt(
          fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        return FileDescriptor(rawValue: fd)
      }
      lastError = Errno.current
      _ = close(fd)
    }
    throw lastError
  }

  /// `socket(2)`, always close-on-exec.
  public static func open(domain: Int32, type: Int32, protocol: Int32) throws(Errno)
    -> FileDescriptor
  {
    let fd = try retryingOnInterrupt {
      socket(domain, type | Int32(SOCK_CLOEXEC.rawValue), `protocol`)
    }
    return FileDescriptor(rawValue: fd)
  }

  /// `bind(2)` to `address`, a C socket address (`sockaddr_l2`, `sockaddr_hci`, ...).
  public static func bind<Address: BitwiseCopyable>(
    _ socket: FileDescriptor, to address: Address
  ) throws(Errno) {
    try checked { withSocketAddress(address) { Glibc.bind(socket.rawValue, $0, $1) } }
  }

  /// `listen(2)`.
  public static func listen(_ socket: FileDescriptor, backlog: Int32) throws(Errno) {
    try checked { Glibc.listen(socket.rawValue, backlog) }
  }

  /// `connect(2)` to `address`, a C socket address. Never retried: a
  /// connect interrupted by a signal goes on in the kernel; on a
  /// non-blocking socket EINPROGRESS says it is under way (wait for
  /// writable, then `pendingError`).
  public static func connect<Address: BitwiseCopyable>(
    _ socket: FileDescriptor, to address: Address
  ) throws(Errno) {
    try checked { withSocketAddress(address) { Glibc.connect(socket.rawValue, $0, $1) } }
  }

  /// `body` with `address` as the `sockaddr` pointer and length C wants.
  private static func withSocketAddress<Address: BitwiseCopyable>(
    _ address: Address, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Int32
  ) -> Int32 {
    var address = address
    return withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        body($0, socklen_t(MemoryLayout<Address>.size))
      }
    }
  }

  /// `accept4(2)` with `SOCK_CLOEXEC`: the connected socket and its peer's
  /// address (`getpeername(2)`; left as `peer` says when that fails).
  public static func accept<Address>(_ socket: FileDescriptor, peer: Address) throws(Errno) -> (
    FileDescriptor, Address
  ) {
    let fd = try retryingOnInterrupt { baton_accept4_cloexec(socket.rawValue) }
    var address = peer
    var size = socklen_t(MemoryLayout<Address>.size)
    _ = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &size) }
    }
    return (FileDescriptor(rawValue: fd), address)
  }

  /// `setsockopt(2)`: option `name` at `level` set to `value`.
  public static func setOption<Value: BitwiseCopyable>(
    _ socket: FileDescriptor, level: Int32, name: Int32, to value: Value
  ) throws(Errno) {
    var value = value
    try checked {
      setsockopt(socket.rawValue, level, name, &value, socklen_t(MemoryLayout<Value>.size))
    }
  }

  /// `getsockopt(2)`: option `name` at `level`, read as a `Value` that
  /// starts as `initial`.
  public static func option<Value: BitwiseCopyable>(
    _ socket: FileDescriptor, level: Int32, name: Int32, initial: Value
  ) throws(Errno) -> Value {
    var value = initial
    var size = socklen_t(MemoryLayout<Value>.size)
    try checked { getsockopt(socket.rawValue, level, name, &value, &size) }
    return value
  }

  /// `SO_ERROR`: why a non-blocking connect failed, nil when it did not (or
  /// when the socket cannot say).
  public static func pendingError(_ socket: FileDescriptor) -> Errno? {
    let status = (try? option(socket, level: SOL_SOCKET, name: SO_ERROR, initial: Int32(0))) ?? 0
    return status == 0 ? nil : Errno(rawValue: status)
  }

  /// `shutdown(2)` both directions: a thread blocked reading the socket wakes up.
  public static func shutdownBoth(_ fd: FileDescriptor) {
    _ = shutdown(fd.rawValue, Int32(SHUT_RDWR))
  }

  /// A close-on-exec `pipe2(2)`: (read end, write end).
  public static func pipe() throws -> (FileDescriptor, FileDescriptor) {
    var fds: [Int32] = [0, 0]
    try retryingOnInterrupt { Glibc.pipe(&fds) }
    for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
    return (FileDescriptor(rawValue: fds[0]), FileDescriptor(rawValue: fds[1]))
  }

  /// `poll(2)` for `events` on each descriptor, at most `timeoutMilliseconds`
  /// (-1: no limit); returns the indices of those with any event (or error,
  /// hang-up), empty on timeout. One wait; a thread that waits again and
  /// again, woken by others, uses `PollLoop`.
  public static func poll(_ fds: [(FileDescriptor, Int16)], timeoutMilliseconds: Int32) throws
    -> [Int]
  {
    var polls = fds.map { pollfd(fd: $0.0.rawValue, events: $0.1, revents: 0) }
    _ = try retryingOnInterrupt { Glibc.poll(&polls, nfds_t(polls.count), timeoutMilliseconds) }
    return polls.indices.filter { polls[$0].revents != 0 }
  }
}

/// A serial line in raw mode: termios(3) settings for an H4 UART.
public enum SerialLine {
  /// The baud rates termios knows, as `speed_t` constants (`B115200` ...).
  static let speeds: [Int: speed_t] = [
    9600: speed_t(B9600), 19200: speed_t(B19200), 38400: speed_t(B38400),
    57600: speed_t(B57600), 115200: speed_t(B115200), 230400: speed_t(B230400),
    460800: speed_t(B460800), 500000: speed_t(B500000), 921600: speed_t(B921600),
    1_000_000: speed_t(B1000000), 1_500_000: speed_t(B1500000), 2_000_000: speed_t(B2000000),
    3_000_000: speed_t(B3000000), 4_000_000: speed_t(B4000000),
  ]

  /// Whether termios supports `baud`.
  public static func isSupported(baud: Int) -> Bool { speeds[baud] != nil }

  /// Puts `fd` in raw 8N1 mode at `baud`, with RTS/CTS hardware flow control
  /// (`CRTSCTS`) when `hardwareFlowControl`, and discards pending bytes.
  public static func configure(_ fd: FileDescriptor, baud: Int, hardwareFlowControl: Bool) throws {
    guard let speed = speeds[baud] else { throw Errno(rawValue: EINVAL) }
    var tio = termios()
    try retryingOnInterrupt { tcgetattr(fd.rawValue, &tio) }
    cfmakeraw(&tio)
    tio.c_cflag |= tcflag_t(CLOCAL | CREAD)
    if hardwareFlowControl {
      tio.c_cflag |= tcflag_t(CRTSCTS)
    } else {
      tio.c_cflag &= ~tcflag_t(CRTSCTS)
    }
    withUnsafeMutableBytes(of: &tio.c_cc) { cc in
      cc[Int(VMIN)] = 1
      cc[Int(VTIME)] = 0
    }
    try retryingOnInterrupt { cfsetispeed(&tio, speed) }
    try retryingOnInterrupt { cfsetospeed(&tio, speed) }
    try retryingOnInterrupt { tcsetattr(fd.rawValue, TCSANOW, &tio) }
    _ = tcflush(fd.rawValue, TCIOFLUSH)
  }
}

/// Failures of `Socket` beyond plain errno values.
public enum SocketError: Error, CustomStringConvertible {
  case resolve(host: String, message: String)
  public var description: String {
    switch self {
    case .resolve(let host, let message):
      "cannot resolve host \"\(host)\": \(message); check the controller spec's host name"
    }
  }
}
