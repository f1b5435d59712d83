import BatonSystem
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// H4 over a byte stream file descriptor (a TCP socket or a serial line): the
/// common part of `TCPTransport` and `SerialTransport`.
///
/// `receive()` blocks in a `PollLoop` on the descriptor, so `close()` from
/// another thread ends it at once (closing a tty does not wake a blocked
/// read). The descriptor itself is closed in `deinit`, after no thread can
/// be reading it any more.
public class H4StreamTransport: HCITransport, @unchecked Sendable {
  // @unchecked: `fd`, `pollLoop` and `name` are immutable; the framer is
  // only touched by the single reader (under `readState`), writes are
  // serialised by `writeLock`, `closed` is a Mutex.
  let fd: FileDescriptor
  private let pollLoop: PollLoop
  private let name: String
  private let readState = Mutex(H4Framer())
  private let writeLock = Mutex(())
  private let closed = Mutex(false)

  init(fd: FileDescriptor, name: String) throws {
    self.fd = fd
    self.name = name
    pollLoop = try PollLoop()
  }

  public var description: String { name }

  public func send(_ packet: [UInt8]) throws {
    guard packet.count >= 3 else { throw TransportError.badPacket(length: packet.count) }
    if closed.withLock({ $0 }) {
      throw TransportError.writeFailed(transport: name, reason: "closed")
    }
    do {
      try writeLock.withLock { _ in try fd.writeAll(packet) }
    } catch {
      throw TransportError.writeFailed(transport: name, reason: "\(error)")
    }
  }

  public var hasBufferedBytes: Bool { readState.withLock { $0.pendingByteCount > 0 } }

  public func receive() throws -> [UInt8]? {
    var chunk = [UInt8](repeating: 0, count: 4096)
    // Set by a turn or a handler: the packet, nil for the end, or the failure.
    var outcome: Result<[UInt8]?, TransportError>?
    let read = { [self] in
      if closed.withLock({ $0 }) {
        outcome = .success(nil)
        return
      }
      let n: Int
      do {
        n = try chunk.withUnsafeMutableBytes { try fd.read(into: $0) }
      } catch let error as Errno where error == .wouldBlock {
        return
      } catch {
        outcome =
          closed.withLock({ $0 })
          ? .success(nil) : .failure(.readFailed(transport: name, reason: "\(error)"))
        return
      }
      if n == 0 {
        outcome = .success(nil)
      } else {
        readState.withLock { $0.append(chunk[0..<n]) }
      }
    }
    do throws(Errno) {
      try pollLoop.run { () -> PollLoop.Turn? in
        if outcome != nil { return nil }
        if closed.withLock({ $0 }) {
          outcome = .success(nil)
          return nil
        }
        do throws(TransportError) {
          if let packet = try readState.withLock({ framer throws(TransportError) in
            try framer.next()
          }) {
            outcome = .success(packet)
            return nil
          }
        } catch {
          outcome = .failure(error)
          return nil
        }
        // A hang-up is read too: the read says end of stream or why not.
        return PollLoop.Turn([PollLoop.Source(fd, onReadable: read, onHangUp: { _ in read() })])
      }
    } catch {
      throw TransportError.readFailed(transport: name, reason: "\(error)")
    }
    // No outcome: `close()` stopped the loop.
    return try outcome?.get() ?? nil
  }

  public func close() {
    let wasClosed = closed.withLock { value in
      defer { value = true }
      return value
    }
    guard !wasClosed else { return }
    pollLoop.stop()
    closeHook()
  }

  /// Extra work on close (TCP: shutdown), before any reader has returned.
  func closeHook() {}

  deinit {
    fd.closeIgnoringErrors()
  }
}
