import BatonRadio
import BatonSystem
import FoundationEssentials
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Accepts the L2CAP channels peers open to our PSM, on a thread of its own
/// that waits on the listening socket in a `PollLoop` until `close()`; each
/// accepted socket becomes an `L2CAPSocketChannel` on `channels`.
final class L2CAPListener: @unchecked Sendable {
  let channels: AsyncStream<any PeerChannel>
  private let continuation: AsyncStream<any PeerChannel>.Continuation
  private let socket: FileDescriptor
  /// Stopped by `close()` or by a failing accept; it lives as long as the
  /// object, so a late `close()` never writes to a reused descriptor.
  private let pollLoop: PollLoop
  private let log = Logger(label: "l2cap")

  /// Listens on `psm` of the adapter with address `local`.
  init(local: BluetoothAddress, type: AddressType, psm: UInt16) throws {
    socket = try L2CAPSocket.listen(on: local, type: type, psm: psm)
    do {
      pollLoop = try PollLoop()
    } catch {
      socket.closeIgnoringErrors()
      throw error
    }
    (channels, continuation) = AsyncStream.makeStream(of: (any PeerChannel).self)
    OwnedThread.start(name: "baton-listen") { [self] in loop() }
    log.info("listening for L2CAP channels on PSM 0x\(hex(psm)) of \(local)")
  }

  /// Stops listening; the stream ends. Idempotent.
  func close() { pollLoop.stop() }

  private func loop() {
    // A failing poll(2) ends the listening, as a failing accept does.
    try? pollLoop.run { [self] () -> PollLoop.Turn? in
      PollLoop.Turn([
        PollLoop.Source(
          socket, onReadable: { [self] in acceptOne() }, onHangUp: { [self] _ in acceptOne() })
      ])
    }
    socket.closeIgnoringErrors()
    continuation.finish()
  }

  /// Accepts a channel and yields it; a failure other than a channel given
  /// up before we took it stops the loop.
  private func acceptOne() {
    do {
      let (fd, peer) = try L2CAPSocket.accept(socket)
      let channel = try L2CAPSocket.channel(fd, peer: peer)
      log.info("channel from \(peer) accepted (peer MTU \(channel.maximumMessageSize))")
      continuation.yield(channel)
    } catch let error as BlueZError {
      if case .socket(_, let errno) = error,
        [EAGAIN, ECONNABORTED, EINTR].contains(errno.rawValue)
      {
        return
      }
      log.warning("stopped listening: \(error)")
      pollLoop.stop()
    } catch {
      log.warning("stopped listening: \(error)")
      pollLoop.stop()
    }
  }
}
