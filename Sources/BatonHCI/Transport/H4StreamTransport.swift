import BatonSystem
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// H4 over a byte stream file descriptor (a TCP socket or a serial line): the
/// common part of `TCPTransport` and `SerialTransport`.
///
/// `receive()` blocks in poll(2) on the descriptor and a wake-up pipe, so
/// `close()` from another thread ends it at once (closing a tty does not
/// wake a blocked read). The descriptor itself is closed in `deinit`, after
/// no thread can be reading it any more.
public class H4StreamTransport: HCITransport, @unchecked Sendable {
  // @unchecked: `fd`, `wakeRead`, `wakeWrite` and `name` are immutable; the
  // framer is only touched by the single reader (under `readState`), writes
  // are serialised by `writeLock`, `closed` is a Mutex.
  let fd: FileDescriptor
  private let wakeRead: FileDescriptor
  private let wakeWrite: FileDescriptor
  private let name: String
  private let readState = Mutex(H4Framer())
  private let writeLock = Mutex(())
  private let closed = Mutex(false)

  init(fd: FileDescriptor, name: String) throws {
    self.fd = fd
    self.name = name
    (wakeRead, wakeWrite) = try Socket.pipe()
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
    while true {
      if closed.withLock({ $0 }) { return nil }
      if let packet = try readState.withLock({ framer throws(TransportError) in try framer.next() })
      {
        return packet
      }
      let ready: [Int]
      do {
        ready = try Socket.waitReadable([fd, wakeRead])
      } catch {
        throw TransportError.readFailed(transport: name, reason: "\(error)")
      }
      if ready.contains(1) || closed.withLock({ $0 }) { return nil }
      let n: Int
      do {
        n = try chunk.withUnsafeMutableBytes { try fd.read(into: $0) }
      } catch let error as Errno where error == .wouldBlock {
        continue
      } catch {
        if closed.withLock({ $0 }) { return nil }
        throw TransportError.readFailed(transport: name, reason: "\(error)")
      }
      if n == 0 { return nil }
      readState.withLock { $0.append(chunk[0..<n]) }
    }
  }

  public func close() {
    let wasClosed = closed.withLock { value in
      defer { value = true }
      return value
    }
    guard !wasClosed else { return }
    _ = try? wakeWrite.writeAll([1])
    closeHook()
  }

  /// Extra work on close (TCP: shutdown), before any reader has returned.
  func closeHook() {}

  deinit {
    fd.closeIgnoringErrors()
    wakeRead.closeIgnoringErrors()
    wakeWrite.closeIgnoringErrors()
  }
}
