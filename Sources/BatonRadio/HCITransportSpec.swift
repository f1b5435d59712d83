import BatonSystem

/// Where an exclusive controller is reached, parsed from a spec string
/// (`ControllerSpec.exclusive`):
/// - `hciN`: a kernel adapter on the HCI user channel;
/// - `tcp:HOST:PORT`: H4 over TCP (`HOST` may be `[v6addr]`);
/// - `serial:/dev/ttyX[:BAUD]`: H4 over a UART, 1000000 baud by default.
///
/// Only a value here: BatonHCI opens it (`open()`), so that this layer needs
/// no transport.
public enum HCITransportSpec: Equatable, Sendable, CustomStringConvertible {
  case kernel(index: Int)
  case tcp(host: String, port: UInt16)
  case serial(path: String, baud: Int)

  /// A serial line's speed when the spec gives none.
  public static let defaultBaud = 1_000_000

  /// Parses `spec`; the error says what is wrong with it.
  public init(_ spec: String) throws(ControllerSpecError) {
    func bad(_ reason: String) -> ControllerSpecError { ControllerSpecError(spec, reason: reason) }
    if spec.hasPrefix("hci") {
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
      var baud = Self.defaultBaud
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

  /// A sentence for `baton check`.
  public var explanation: String {
    switch self {
    case .kernel(let index):
      "kernel adapter hci\(index) through the HCI user channel (needs CAP_NET_ADMIN)"
    case .tcp(let host, let port): "HCI/H4 over TCP to \(host) port \(port)"
    case .serial(let path, let baud): "HCI/H4 over the serial line \(path) at \(baud) baud"
    }
  }

  public var description: String {
    switch self {
    case .kernel(let index): "hci\(index)"
    case .tcp(let host, let port):
      host.contains(":") ? "tcp:[\(host)]:\(port)" : "tcp:\(host):\(port)"
    case .serial(let path, let baud): "serial:\(path):\(baud)"
    }
  }
}
