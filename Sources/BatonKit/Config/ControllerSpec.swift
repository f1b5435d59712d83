/// How to reach the BLE controller, as written after `--controller` or in
/// `controller =`: `hciN` (a kernel adapter through the HCI user channel),
/// `tcp:HOST:PORT` (HCI/H4 over TCP, such as a simulator) or
/// `serial:/dev/ttyX[:BAUD]` (HCI/H4 over a UART).
public enum ControllerSpec: Sendable, Equatable, Hashable, CustomStringConvertible {
  case kernel(index: Int)
  case tcp(host: String, port: UInt16)
  /// `baud` nil means the transport's default.
  case serial(path: String, baud: Int?)

  /// The default: the first kernel adapter.
  public static let defaultSpec = ControllerSpec.kernel(index: 0)

  /// What the user may write, for error messages.
  public static let expectedForms = "hciN, tcp:HOST:PORT or serial:/dev/ttyX[:BAUD]"

  /// Parses a spec; nil if it matches none of the three forms.
  public init?(parsing text: String) {
    if text.hasPrefix("hci") {
      let digits = text.dropFirst(3)
      guard !digits.isEmpty, digits.count <= 4, digits.allSatisfy(\.isASCIIDigit),
        let index = Int(digits)
      else { return nil }
      self = .kernel(index: index)
    } else if text.hasPrefix("tcp:") {
      let rest = text.dropFirst(4)
      guard let colon = rest.lastIndex(of: ":") else { return nil }
      var host = String(rest[..<colon])
      if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
      let portText = rest[rest.index(after: colon)...]
      guard !host.isEmpty, portText.allSatisfy(\.isASCIIDigit), let port = UInt16(portText),
        port != 0
      else { return nil }
      self = .tcp(host: host, port: port)
    } else if text.hasPrefix("serial:") {
      let rest = String(text.dropFirst(7))
      guard rest.hasPrefix("/") else { return nil }
      if let colon = rest.lastIndex(of: ":") {
        let baudText = rest[rest.index(after: colon)...]
        guard !baudText.isEmpty, baudText.allSatisfy(\.isASCIIDigit), let baud = Int(baudText),
          baud > 0
        else { return nil }
        let path = String(rest[..<colon])
        guard path.count > 1 else { return nil }
        self = .serial(path: path, baud: baud)
      } else {
        guard rest.count > 1 else { return nil }
        self = .serial(path: rest, baud: nil)
      }
    } else {
      return nil
    }
  }

  /// The spec as the user would write it.
  public var description: String {
    switch self {
    case .kernel(let index): "hci\(index)"
    case .tcp(let host, let port): host.contains(":") ? "tcp:[\(host)]:\(port)" : "tcp:\(host):\(port)"
    case .serial(let path, let baud): baud.map { "serial:\(path):\($0)" } ?? "serial:\(path)"
    }
  }

  /// A sentence for `baton check`.
  public var explanation: String {
    switch self {
    case .kernel(let index):
      "kernel adapter hci\(index) through the HCI user channel (needs CAP_NET_ADMIN)"
    case .tcp(let host, let port): "HCI/H4 over TCP to \(host) port \(port)"
    case .serial(let path, let baud):
      "HCI/H4 over the serial line \(path)" + (baud.map { " at \($0) baud" } ?? "")
    }
  }
}

extension Character {
  fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
