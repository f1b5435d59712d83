/// Which backend the agent runs on, and which controller, parsed from a spec
/// string:
/// - `bluez` or `bluez:hciN`: the system's Bluetooth stack (bluetoothd over
///   D-Bus, kernel L2CAP sockets), shared with everything else; `bluez`
///   alone takes bluetoothd's first adapter;
/// - otherwise an exclusive controller that our own host drives over HCI
///   (`HCITransportSpec`: `hciN`, `tcp:HOST:PORT`, `serial:/dev/ttyX[:BAUD]`).
public enum ControllerSpec: Equatable, Sendable, CustomStringConvertible {
  case bluez(adapter: Int?)
  case exclusive(HCITransportSpec)

  /// Parses `spec`; the error says what is wrong with it.
  public init(_ spec: String) throws(ControllerSpecError) {
    if spec == "bluez" {
      self = .bluez(adapter: nil)
    } else if spec.hasPrefix("bluez:") {
      let name = spec.dropFirst(6)
      guard name.hasPrefix("hci"), let index = Int(name.dropFirst(3)), index >= 0, index < 65536,
        name.dropFirst(3).allSatisfy(\.isASCII)
      else {
        throw ControllerSpecError(spec, reason: "expected bluez or bluez:hciN, such as bluez:hci0")
      }
      self = .bluez(adapter: index)
    } else {
      self = .exclusive(try HCITransportSpec(spec))
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
    case .exclusive(let transport): transport.explanation
    }
  }

  public var description: String {
    switch self {
    case .bluez(let index): index.map { "bluez:hci\($0)" } ?? "bluez"
    case .exclusive(let transport): transport.description
    }
  }
}
