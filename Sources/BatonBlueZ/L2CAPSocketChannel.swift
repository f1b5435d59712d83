import BatonRadio
import BatonSystem
import FoundationEssentials
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// A `MessageChannel` over a connected `SOCK_SEQPACKET` socket: on the BlueZ
/// backend, a kernel L2CAP LE credit-based channel, where one `write(2)` is
/// one SDU and one `read(2)` returns one; the kernel does credits and
/// segmentation. (Tests use a UNIX seqpacket pair, which keeps message
/// boundaries the same way.)
///
/// The socket is non-blocking and served by a thread of its own, which waits
/// on it in a `PollLoop` (woken by `send`, `receive` and `close`): reading
/// while fewer than `inboxLimit`
/// messages wait unread (so a slow reader stops the kernel's credits, and the
/// sender), writing queued messages when the socket takes them. Nothing
/// blocks Swift's cooperative pool.
final class L2CAPSocketChannel: PeerChannel, @unchecked Sendable, CustomStringConvertible {
  static let inboxLimit = 16

  let peerAddress: BluetoothAddress
  /// The largest message `send` takes (the peer's MTU).
  let maximumMessageSize: Int
  /// The largest message we read (our MTU).
  let receiveLimit: Int

  private let socket: FileDescriptor
  /// The channel thread's wait; it lives as long as the object, so a late
  /// `wake()` from another thread never writes to a reused descriptor.
  private let pollLoop: PollLoop
  private let log = Logger(label: "l2cap")

  private struct State {
    var inbox: [[UInt8]] = []
    var receivers: [CheckedContinuation<[UInt8]?, Never>] = []
    var outbox: [(message: [UInt8], continuation: CheckedContinuation<Void, any Error>)] = []
    var closed: String?
    var closing = false
  }
  private let state = Mutex(State())

  /// Takes ownership of the connected `socket`.
  init(
    socket: FileDescriptor, peerAddress: BluetoothAddress, maximumMessageSize: Int,
    receiveLimit: Int
  ) throws {
    self.socket = socket
    self.peerAddress = peerAddress
    self.maximumMessageSize = maximumMessageSize
    self.receiveLimit = receiveLimit
    _ = try? socket.setNonBlocking(true)
    pollLoop = try PollLoop()
    OwnedThread.start(name: "baton-l2cap") { [self] in loop() }
  }

  var description: String { "L2CAP socket channel with \(peerAddress)" }

  var isClosed: Bool { state.withLock { $0.closed != nil || $0.closing } }

  func send(_ message: [UInt8]) async throws {
    guard message.count <= maximumMessageSize else {
      throw L2CAPError.messageTooLong(size: message.count, mtu: maximumMessageSize)
    }
    try await withCheckedThrowingContinuation {
      (continuation: CheckedContinuation<Void, any Error>) in
      let closed = state.withLock { s -> String? in
        if let reason = s.closed { return reason }
        if s.closing { return "closed locally" }
        s.outbox.append((message, continuation))
        return nil
      }
      if let closed {
        continuation.resume(throwing: L2CAPError.channelClosed(psm: 0, reason: closed))
      } else {
        wake()
      }
    }
  }

  func receive() async throws -> [UInt8]? {
    await withCheckedContinuation { (continuation: CheckedContinuation<[UInt8]?, Never>) in
      let (now, wasFull): ([UInt8]??, Bool) = state.withLock { s in
        if !s.inbox.isEmpty {
          let full = s.inbox.count >= Self.inboxLimit
          return (.some(s.inbox.removeFirst()), full)
        }
        if s.closed != nil { return (.some(nil), false) }
        s.receivers.append(continuation)
        return (nil, false)
      }
      if let now { continuation.resume(returning: now) }
      // The reader stopped at the limit: it may read again.
      if wasFull { wake() }
    }
  }

  /// Closes the socket (the kernel disconnects the channel). Idempotent.
  func close() async {
    let first = state.withLock { s -> Bool in
      guard !s.closing, s.closed == nil else { return false }
      s.closing = true
      return true
    }
    if first { wake() }
  }

  private func wake() { pollLoop.wake() }

  // MARK: The channel's thread

  private func loop() {
    var buffer = [UInt8](repeating: 0, count: max(receiveLimit, 1))
    var reason = "closed locally"
    // A failure ends the channel: the loop stops with its reason.
    let write = { [self] in
      if let failure = writeQueued() {
        reason = failure
        pollLoop.stop()
      }
    }
    let read = { [self] in
      if let failure = readOne(into: &buffer) {
        reason = failure
        pollLoop.stop()
      }
    }
    do throws(Errno) {
      try pollLoop.run { [self] () -> PollLoop.Turn? in
        let (closing, wantRead, wantWrite) = state.withLock {
          ($0.closing, $0.inbox.count < Self.inboxLimit, !$0.outbox.isEmpty)
        }
        if closing { return nil }
        // The socket is polled only for what we want from it, so a hang-up
        // while the inbox is full does not make us spin; with nothing
        // wanted, only a wake-up ends the wait.
        guard wantRead || wantWrite else { return PollLoop.Turn([]) }
        return PollLoop.Turn([
          PollLoop.Source(
            socket, onReadable: wantRead ? read : nil, onWritable: wantWrite ? write : nil,
            onHangUp: { [self] _ in
              // The write or the read says why (or reads what is left).
              if wantWrite { write() }
              if wantRead && !pollLoop.isStopped { read() }
            })
        ])
      }
    } catch {
      reason = "poll failed"
    }
    finish(reason)
  }

  /// Writes queued messages until the socket would block; a failure reason ends the channel.
  private func writeQueued() -> String? {
    while let next = state.withLock({ $0.outbox.first }) {
      do {
        let written = try next.message.withUnsafeBytes { try socket.write($0) }
        state.withLock { _ = $0.outbox.removeFirst() }
        if written != next.message.count {
          next.continuation.resume(
            throwing: L2CAPError.channelClosed(psm: 0, reason: "short write of \(written) bytes"))
          return "short write"
        }
        next.continuation.resume()
      } catch let error as Errno where error == .wouldBlock {
        return nil
      } catch {
        state.withLock { _ = $0.outbox.removeFirst() }
        let reason = "write failed: \(error)"
        next.continuation.resume(throwing: L2CAPError.channelClosed(psm: 0, reason: reason))
        return reason
      }
    }
    return nil
  }

  /// Reads one message if there is one; a failure reason (or end) ends the channel.
  private func readOne(into buffer: inout [UInt8]) -> String? {
    let n: Int
    do {
      n = try buffer.withUnsafeMutableBytes { try socket.read(into: $0) }
    } catch let error as Errno where error == .wouldBlock {
      return nil
    } catch {
      return "read failed: \(error)"
    }
    if n == 0 { return "the peer closed the channel" }
    let message = Array(buffer[..<n])
    let receiver = state.withLock { s -> CheckedContinuation<[UInt8]?, Never>? in
      if !s.receivers.isEmpty { return s.receivers.removeFirst() }
      s.inbox.append(message)
      return nil
    }
    receiver?.resume(returning: message)
    return nil
  }

  private func finish(_ reason: String) {
    Socket.shutdownBoth(socket)
    socket.closeIgnoringErrors()
    let (receivers, senders) = state.withLock { s in
      s.closed = reason
      defer {
        s.receivers.removeAll()
        s.outbox.removeAll()
      }
      return (s.receivers, s.outbox.map(\.continuation))
    }
    log.info("\(self): \(reason)")
    for receiver in receivers { receiver.resume(returning: nil) }
    for sender in senders {
      sender.resume(throwing: L2CAPError.channelClosed(psm: 0, reason: reason))
    }
  }
}
