import BatonSystem

/// H4 over TCP (`tcp:HOST:PORT`): bumble's `tcp-server` transport, Android's
/// emulators, HCI proxies. The peer closing the connection ends `receive()`
/// with nil.
public final class TCPTransport: H4StreamTransport, @unchecked Sendable {
  // @unchecked: no state of its own beyond H4StreamTransport's.

  /// Connects to `host:port`.
  public init(host: String, port: UInt16) throws {
    let fd: FileDescriptor
    do {
      fd = try Socket.connectTCP(host: host, port: port)
    } catch {
      throw TransportError.openFailed(
        spec: "tcp:\(host):\(port)",
        reason: "\(error); is the controller (or simulator) listening on that port?")
    }
    do {
      try super.init(fd: fd, name: "tcp:\(host):\(port)")
    } catch {
      fd.closeIgnoringErrors()
      throw error
    }
  }

  override func closeHook() { Socket.shutdownBoth(fd) }
}
