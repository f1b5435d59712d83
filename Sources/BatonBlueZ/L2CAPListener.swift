import BatonRadio
import BatonSystem
import FoundationEssentials
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Accepts the L2CAP channels peers open to our PSM, on a thread of its own
/// that polls the listening socket and a wake-up pipe; each accepted socket
/// becomes an `L2CAPSocketChannel` on `channels`.
final class L2CAPListener: @unchecked Sendable {
  let channels: AsyncStream<any PeerChannel>
  private let continuation: AsyncStream<any PeerChannel>.Continuation
  private let socket: FileDescriptor
  private let wakeUp: FileDescriptor
  private let wakeUpWriter: FileDescriptor
  private let closing = Atomic(false)
  private let log = Logger(label: "l2cap")

  /// Listens on `psm` of the adapter with address `local`.
  init(local: BluetoothAddress, type: AddressType, psm: UInt16) throws {
    socket = try L2CAPSocket.listen(on: local, type: type, psm: psm)
    do {
      (wakeUp, wakeUpWriter) = try Socket.pipe()
    } catch {
      socket.closeIgnoringErrors()
      throw error
    }
    (channels, continuation) = AsyncStream.makeStream(of: (any PeerChannel).self)
    OwnedThread.start(name: "baton-listen") { [self] in loop() }
    log.info("listening for L2CAP channels on PSM 0x\(hex(psm)) of \(local)")
  }

  deinit {
    wakeUp.closeIgnoringErrors()
    wakeUpWriter.closeIgnoringErrors()
  }

  /// Stops listening; the stream ends. Idempotent.
  func close() {
    guard !closing.exchange(true, ordering: .acquiringAndReleasing) else { return }
    var one: UInt8 = 1
    _ = Glibc.write(wakeUpWriter.rawValue, &one, 1)
  }

  private func loop() {
    while !closing.load(ordering: .acquiring) {
      guard
        let ready = try? Socket.poll(
          [(wakeUp, Int16(POLLIN)), (socket, Int16(POLLIN))], timeoutMilliseconds: -1)
      else { break }
      if ready.contains(0) { break }
      guard ready.contains(1) else { continue }
      do {
        let (fd, peer) = try L2CAPSocket.accept(socket)
        let channel = try L2CAPSocket.channel(fd, peer: peer)
        log.info("channel from \(peer) accepted (peer MTU \(channel.maximumMessageSize))")
        continuation.yield(channel)
      } catch let error as BlueZError {
        if case .socket(_, let errno) = error,
          [EAGAIN, ECONNABORTED, EINTR].contains(errno.rawValue)
        {
          continue
        }
        log.warning("stopped listening: \(error)")
        break
      } catch {
        log.warning("stopped listening: \(error)")
        break
      }
    }
    socket.closeIgnoringErrors()
    continuation.finish()
  }
}
