import BatonSystem

/// Which controller to use, parsed from a spec string:
/// - `bluez` or `bluez:hciN`: the system's Bluetooth stack (bluetoothd over
///   D-Bus, kernel L2CAP sockets), shared with everything else; `bluez`
///   alone takes bluetoothd's first adapter;
/// - `hciN`: a kernel adapter on the HCI user channel;
/// - `tcp:HOST:PORT`: H4 over TCP (`HOST` may be `[v6addr]`);
/// - `serial:/dev/ttyX[:BAUD]`: H4 over a UART, 1000000 baud by default.
public enum ControllerSpec: Equatable, Sendable, CustomStringConvertible {
  case bluez(adapter: Int?)
  case kernel(index: Int)
  case tcp(host: String, port: UInt16)
  case serial(path: String, baud: Int)

  /// Parses `spec`; the error says what is wrong with it.
  public init(_ spec: String) throws(TransportError) {
    func bad(_ reason: String) -> TransportError { .badSpec(spec, reason: reason) }
    if spec == "bluez" {
      self = .bluez(adapter: nil)
    } else if spec.hasPrefix("bluez:") {
      let name = spec.dropFirst(6)
      guard name.hasPrefix("hci"), let index = Int(name.dropFirst(3)), index >= 0, index < 65536,
        name.dropFirst(3).allSatisfy(\.isASCII)
      else { throw bad("expected bluez or bluez:hciN, such as bluez:hci0") }
      self = .bluez(adapter: index)
    } else if spec.hasPrefix("hci") {
      let digits = spec.dropFirst(3)
      guard !digits.isEmpty, digits.allSatisfy(\.isASCII), let index = Int(digits), index >= 0,
        index < 65536
      else { throw bad("expected hci followed by an adapter number, such as hci0") }
      self = .kernel(index: index)
    } else if spec.hasPrefix("tcp:") {
      let rest = spec.dropFirst(4)
      guard let colon = rest.lastIndex(of: ":") else { throw bad("expected tcp:HOST:PORT") }
      var host = String(rest[..<colon])
      let portText = rest[rest.index(after: colon)...]
      if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
      guard !host.isEmpty else { throw bad("the host is empty") }
      guard let port = UInt16(portText), port > 0 else {
        throw bad("the port \"\(portText)\" is not a number from 1 to 65535")
      }
      self = .tcp(host: host, port: port)
    } else if spec.hasPrefix("serial:") {
      let rest = String(spec.dropFirst(7))
      var path = rest
      var baud = SerialTransport.defaultBaud
      if let colon = rest.lastIndex(of: ":") {
        let tail = rest[rest.index(after: colon)...]
        guard let value = Int(tail) else {
          throw bad("the baud rate \"\(tail)\" is not a number")
        }
        guard SerialLine.isSupported(baud: value) else {
          throw bad("unsupported baud rate \(value) (try 115200, 921600 or 1000000)")
        }
        baud = value
        path = String(rest[..<colon])
      }
      guard path.hasPrefix("/") else { throw bad("expected a device path such as /dev/ttyACM0") }
      self = .serial(path: path, baud: baud)
    } else {
      throw bad("unknown transport")
    }
  }

  /// The default: the system's Bluetooth stack through bluetoothd (opening
  /// it says what to configure instead when bluetoothd is not running).
  public static let defaultSpec = ControllerSpec.bluez(adapter: nil)

  /// What the user may write, for error messages.
  public static let expectedForms = "bluez[:hciN], hciN, tcp:HOST:PORT or serial:/dev/ttyX[:BAUD]"

  /// A sentence for `baton check`.
  public var explanation: String {
    switch self {
    case .bluez(let index):
      "\(index.map { "adapter hci\($0)" } ?? "bluetoothd's first adapter"), shared through "
        + "bluetoothd: BlueZ over the system D-Bus and kernel L2CAP sockets, no capability needed"
    case .kernel(let index):
      "kernel adapter hci\(index) through the HCI user channel (needs CAP_NET_ADMIN)"
    case .tcp(let host, let port): "HCI/H4 over TCP to \(host) port \(port)"
    case .serial(let path, let baud): "HCI/H4 over the serial line \(path) at \(baud) baud"
    }
  }

  public var description: String {
    switch self {
    case .bluez(let index): index.map { "bluez:hci\($0)" } ?? "bluez"
    case .kernel(let index): "hci\(index)"
    case .tcp(let host, let port):
      host.contains(":") ? "tcp:[\(host)]:\(port)" : "tcp:\(host):\(port)"
    case .serial(let path, let baud): "serial:\(path):\(baud)"
    }
  }

  /// Opens the transport this spec names (the exclusive controllers only:
  /// `bluez` has no HCI transport; `BlueZHost` opens it).
  public func open() throws -> any HCITransport {
    switch self {
    case .bluez:
      throw TransportError.openFailed(
        spec: description, reason: "bluez is not an HCI transport (it goes through bluetoothd)")
    case .kernel(let index):
      // Binding the user channel is the one call that needs CAP_NET_ADMIN.
      try Capabilities.withNetAdmin { try HCIUserChannelTransport(index: index) }
    case .tcp(let host, let port): try TCPTransport(host: host, port: port)
    case .serial(let path, let baud): try SerialTransport(path: path, baud: baud)
    }
  }
}
