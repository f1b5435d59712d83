import BatonSystem
import CBatonShims
import FoundationEssentials
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// The agent's control socket: a UNIX stream socket of mode 0600 in a
/// directory of mode 0700, answered one JSON line per connection.
///
/// A dedicated thread blocks in `accept(2)` and reads each request line
/// (with a timeout), then hands the connection to `requests`; nothing wakes
/// up while nobody connects. Replies are written on another thread of ours
/// ("baton-replies"): a client that does not read can hold a write for up to
/// the socket's 5 s timeout, and that must not park the caller.
public final class ControlServer: Sendable {
  /// An accepted connection with its decoded request (or why it failed).
  public struct Connection: Sendable {
    public let socket: UnixSocket
    public let request: Result<ControlRequest, ControlServerError>
    let replies: ThreadExecutor

    /// Has `response` written as one JSON line, then the connection closed;
    /// returns at once (the write happens on the replies thread).
    public func reply(_ response: ControlResponse) {
      let socket = self.socket
      let line = ControlCoding.encode(response) + [UInt8(ascii: "\n")]
      replies.execute {
        try? socket.writeAll(line)
        socket.close()
      }
    }
  }

  public let path: String
  public let requests: AsyncStream<Connection>
  private let socket: UnixSocket
  private let continuation: AsyncStream<Connection>.Continuation
  private let identity: (dev: UInt64, ino: UInt64)
  private let state = Mutex<(started: Bool, closed: Bool)>((false, false))
  private let log = Logger(label: "control")
  private let replies = ThreadExecutor(name: "baton-replies")

  /// Creates the socket at `path`, its directory (mode 0700) if missing, and
  /// replaces a stale socket left by an agent that died; fails if another
  /// agent answers there.
  public init(path: String) throws(ControlServerError) {
    self.path = path
    try ControlServer.prepareDirectory(of: path)
    var listening: UnixSocket
    do {
      listening = try UnixSocket.listen(path: path)
    } catch let failure where failure.errno == Errno(rawValue: EADDRINUSE) {
      var info = stat()
      if lstat(path, &info) == 0 && info.st_mode & S_IFMT != S_IFSOCK {
        throw .notASocket(path: path)
      }
      if let other = try? UnixSocket.connect(path: path) {
        other.close()
        throw .alreadyRunning(path: path)
      }
      // Nobody answers: a stale socket from an agent that did not clean up.
      Logger(label: "control").notice("removing stale socket \(path)")
      unlink(path)
      do { listening = try UnixSocket.listen(path: path) } catch {
        throw .system(error.description)
      }
    } catch let failure where failure.errno == Errno(rawValue: ENAMETOOLONG) {
      throw .pathTooLong(path: path)
    } catch {
      throw .system(error.description)
    }
    chmod(path, 0o600)
    var info = stat()
    stat(path, &info)
    identity = (UInt64(info.st_dev), UInt64(info.st_ino))
    socket = listening
    (requests, continuation) = AsyncStream<Connection>.makeStream()
  }

  /// Creates the socket's directory with mode 0700 if it is missing, and
  /// checks that it belongs to us and nobody else can enter it.
  private static func prepareDirectory(of path: String) throws(ControlServerError) {
    let directory = parentDirectory(of: path)
    guard !directory.isEmpty else { return }
    if mkdir(directory, 0o700) != 0 && Errno.current != .exists {
      throw .directory(path: directory, reason: Errno.current.description)
    }
    var info = stat()
    guard lstat(directory, &info) == 0 else {
      throw .directory(path: directory, reason: Errno.current.description)
    }
    guard info.st_mode & S_IFMT == S_IFDIR else {
      throw .directory(path: directory, reason: "not a directory")
    }
    // Ours, or a shared sticky directory such as /tmp (where nobody can
    // replace our socket). Not someone else's /tmp/baton-UID.
    let sharedSticky = info.st_uid == 0 && info.st_mode & S_ISVTX != 0
    guard info.st_uid == getuid() || sharedSticky else {
      throw .directory(path: directory, reason: "owned by another user (uid \(info.st_uid))")
    }
  }

  /// Starts the accept thread.
  public func start() {
    let alreadyStarted = state.withLock { state in
      defer { state.started = true }
      return state.started || state.closed
    }
    guard !alreadyStarted else { return }
    let socket = self.socket
    let continuation = self.continuation
    let log = self.log
    let replies = self.replies
    OwnedThread.start(name: "baton-control") {
      baton_set_thread_name("baton-control")
      while true {
        let client: UnixSocket
        do throws(Errno) {
          client = try socket.accept()
        } catch {
          // shutdown() by close(), or a fatal error: stop accepting.
          if error.rawValue != EINVAL { log.error("accept on control socket: \(error)") }
          break
        }
        client.setTimeouts(seconds: 5)
        if let uid = client.peerUserID(), uid != getuid(), uid != 0 {
          log.warning("refused a control connection from uid \(uid)")
          client.close()
          continue
        }
        let request: Result<ControlRequest, ControlServerError>
        do {
          guard let line = try client.readLine(limit: 64 * 1024) else {
            client.close()
            continue
          }
          request = .success(try ControlCoding.decode(ControlRequest.self, from: line))
        } catch {
          request = .failure(.badRequest("\(error)"))
        }
        continuation.yield(Connection(socket: client, request: request, replies: replies))
      }
      socket.close()
      continuation.finish()
    }
  }

  /// Stops accepting and removes the socket file if it is still ours.
  /// Idempotent.
  public func close() {
    let (wasStarted, wasClosed) = state.withLock { state in
      defer { state.closed = true }
      return (state.started, state.closed)
    }
    guard !wasClosed else { return }
    var info = stat()
    if stat(path, &info) == 0 && UInt64(info.st_dev) == identity.dev
      && UInt64(info.st_ino) == identity.ino
    {
      unlink(path)
    }
    socket.shutdown()
    if !wasStarted {
      socket.close()
      continuation.finish()
    }
  }
}

/// Why the control socket could not be opened or a request not read.
public enum ControlServerError: Error, Sendable, Equatable, CustomStringConvertible {
  case alreadyRunning(path: String)
  case notASocket(path: String)
  case pathTooLong(path: String)
  case directory(path: String, reason: String)
  case system(String)
  case badRequest(String)

  public var description: String {
    switch self {
    case .alreadyRunning(let path):
      "another agent is already running (it answers on \(path)); stop it first, or give this one another --socket"
    case .notASocket(let path):
      "\(path) exists and is not a socket; remove it or choose another --socket"
    case .pathTooLong(let path):
      "the socket path \(path) is longer than \(UnixSocket.maximumPathLength) bytes; choose a shorter --socket"
    case .directory(let path, let reason):
      "cannot use the socket directory \(path): \(reason)"
    case .system(let text): "control socket: \(text)"
    case .badRequest(let text): "bad request: \(text)"
    }
  }
}
