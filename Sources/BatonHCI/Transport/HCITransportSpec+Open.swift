import BatonRadio
import BatonSystem

extension HCITransportSpec {
  /// Opens the transport this spec names (the exclusive controllers; `bluez`
  /// is no HCI transport: `BlueZHost` reaches it through bluetoothd).
  public func open() throws -> any HCITransport {
    switch self {
    case .kernel(let index):
      // Binding the user channel is the one call that needs CAP_NET_ADMIN.
      try Capabilities.withNetAdmin { try HCIUserChannelTransport(index: index) }
    case .tcp(let host, let port): try TCPTransport(host: host, port: port)
    case .serial(let path, let baud): try SerialTransport(path: path, baud: baud)
    }
  }
}
