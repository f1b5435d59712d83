import BatonSystem

#if canImport(Glibc)
  import Glibc
#endif

/// The client side of the control socket, for `baton status` and
/// `baton send`: one request line, one response line.
public enum ControlClient {
  /// Whether an agent answers at `socketPath`: throws `.notRunning` when
  /// none does, or `.failed` when the socket cannot be reached.
  public static func probe(socketPath: String) throws(ControlClientError) {
    try connect(socketPath).close()
  }

  private static func connect(_ socketPath: String) throws(ControlClientError) -> UnixSocket {
    do {
      return try UnixSocket.connect(path: socketPath)
    } catch {
      switch error.errno.rawValue {
      case ENOENT, ENOTDIR: throw .notRunning(path: socketPath, stale: false)
      case ECONNREFUSED: throw .notRunning(path: socketPath, stale: true)
      case EACCES, EPERM:
        throw .failed(
          "cannot connect to \(socketPath): \(error.errno); is it another user's agent?")
      default: throw .failed("cannot connect to \(socketPath): \(error.errno)")
      }
    }
  }

  /// Refuses an answer from anyone but this user: what is sent (a path to
  /// send, a restore) and what comes back (a status) are this user's
  /// business, and a socket at a path another user could create (a
  /// `--socket` in /tmp, a runtime directory made by someone else) must
  /// not be trusted for it.
  private static func checkOwner(_ socket: UnixSocket, _ socketPath: String)
    throws(ControlClientError)
  {
    let me = getuid()
    guard let peer = socket.peerUserID() else {
      throw .failed("cannot tell who answers on \(socketPath) (SO_PEERCRED failed); not sending")
    }
    guard peer == me else {
      throw .failed(
        "the socket \(socketPath) is answered by user id \(peer), not by you (\(me)): it is"
          + " not your agent; not sending. Remove it, or give your agent's socket with --socket")
    }
  }

  /// Sends `request` to the agent at `socketPath` and waits up to
  /// `timeoutSeconds` for its reply.
  public static func send(_ request: ControlRequest, socketPath: String, timeoutSeconds: Int = 15)
    throws(ControlClientError) -> ControlResponse
  {
    let socket = try connect(socketPath)
    defer { socket.close() }
    try checkOwner(socket, socketPath)
    socket.setTimeouts(seconds: timeoutSeconds)
    do {
      try socket.writeAll(ControlCoding.encode(request) + [UInt8(ascii: "\n")])
      guard let line = try socket.readLine() else {
        throw ControlClientError.failed("the agent closed the connection without answering")
      }
      do {
        return try ControlCoding.decode(ControlResponse.self, from: line)
      } catch {
        throw ControlClientError.failed("the agent's answer is not valid JSON: \(error)")
      }
    } catch let error as ControlClientError {
      throw error
    } catch let error as Errno where error == .wouldBlock {
      throw .failed("the agent did not answer within \(timeoutSeconds) s")
    } catch {
      throw .failed("talking to the agent at \(socketPath): \(error)")
    }
  }
}

/// Why a request to the agent failed.
public enum ControlClientError: Error, Sendable, Equatable, CustomStringConvertible {
  /// No agent listens at the path (no socket file, or a stale one).
  case notRunning(path: String, stale: Bool)
  case failed(String)

  public var description: String {
    switch self {
    case .notRunning(let path, let stale):
      "no agent is running (\(stale ? "nobody answers on the stale socket" : "no socket") at \(path)); start one with 'baton agent' or 'systemctl --user start baton'"
    case .failed(let text): text
    }
  }
}
