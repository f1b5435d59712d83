import BatonDBus
import BatonRadio
import BatonSystem
/// Failures of the BlueZ backend, each saying what went wrong and what to do.
public enum BlueZError: Error, CustomStringConvertible {
  /// No system bus to connect to.
  case systemBus(DBusError)
  /// Nobody owns `org.bluez` on the system bus.
  case notRunning
  /// The bus policy refused us (`operation` says what we tried).
  case accessDenied(operation: String, detail: String)
  /// bluetoothd answered an operation with an error.
  case failed(operation: String, DBusError)
  /// RegisterAdvertisement was refused.
  case advertisingRefused(adapter: String, DBusError)
  /// A kernel L2CAP socket call failed.
  case socket(operation: String, errno: Errno)
  /// Connecting a channel to a peer failed.
  case connect(peer: BluetoothAddress, errno: Errno)
  /// The host was closed.
  case closed

  /// Maps a D-Bus failure of `operation` to the error that explains it.
  static func from(_ error: any Error, operation: String) -> BlueZError {
    guard let error = error as? DBusError else {
      return .failed(operation: operation, .closed(reason: "\(error)"))
    }
    if error.isAccessDenied { return .accessDenied(operation: operation, detail: "\(error)") }
    if error.isServiceUnknown { return .notRunning }
    return .failed(operation: operation, error)
  }

  public var description: String {
    switch self {
    case .systemBus(let error):
      "cannot connect to the system D-Bus, through which baton reaches bluetoothd (\(error)); "
        + "is dbus running (systemctl status dbus)? "
        + "Without it, configure an exclusive controller: controller = hciN, serial:/dev/ttyX or tcp:HOST:PORT"
    case .notRunning:
      "bluetoothd is not on the system bus (nobody owns org.bluez): start it with "
        + "'sudo systemctl start bluetooth', or configure an exclusive controller "
        + "(controller = hciN, serial:/dev/ttyX or tcp:HOST:PORT in baton.conf)"
    case .accessDenied(let operation, let detail):
      "the system bus policy does not let this user talk to bluetoothd (\(operation): \(detail)); "
        + "add the user to the 'bluetooth' group (sudo usermod -aG bluetooth $USER, then log in again) "
        + "or see /etc/dbus-1/system.d/bluetooth.conf"
    case .failed(let operation, let error):
      "bluetoothd refused \(operation): \(error)"
    case .advertisingRefused(let adapter, let error):
      switch error.name {
      case "org.bluez.Error.NotPermitted":
        "\(adapter) has no advertising instance left (\(error)); stop another advertiser "
          + "(bluetoothctl advertise off) or use another adapter"
      case "org.bluez.Error.InvalidLength":
        "\(adapter) refused the beacon as too long (\(error)); the beacon needs 28 of the 31 "
          + "advertising bytes, so nothing else (name, TX power) may be added to it"
      case "org.bluez.Error.NotReady":
        "\(adapter) is not ready to advertise (\(error)); is it powered (bluetoothctl power on)?"
      default:
        "\(adapter) refused to advertise (\(error))"
      }
    case .socket(let operation, let errno):
      switch errno.rawValue {
      case EAFNOSUPPORT where SandboxFacts.current.kernelHasBluetooth:
        "L2CAP socket: socket(AF_BLUETOOTH) was refused (\(errno.name)), though this kernel "
          + "has Bluetooth: a sandbox forbids this process the address family. Under systemd, "
          + "the unit's RestrictAddressFamilies= must list AF_BLUETOOTH (the shipped "
          + "baton.service does; a drop-in that sets the option again must keep it)"
      case EAFNOSUPPORT:
        "L2CAP socket: this kernel has no Bluetooth support (\(errno.name)); load it "
          + "(modprobe bluetooth) or use an exclusive controller over serial: or tcp:"
      case EACCES, EPERM:
        "L2CAP socket \(operation): permission denied (\(errno.name)); PSM 0x0080 needs no "
          + "capability, so check that no security module blocks Bluetooth sockets"
      case EADDRINUSE:
        "L2CAP socket \(operation): PSM 0x0080 is in use on this adapter (\(errno.name)); "
          + "is another baton agent running on it?"
      default:
        "L2CAP socket \(operation) failed: \(errno) (\(errno.name))"
      }
    case .connect(let peer, let errno):
      "cannot open an L2CAP channel to \(peer): \(errno) (\(errno.name))"
    case .closed:
      "the BlueZ host is closed"
    }
  }
}

#if canImport(Glibc)
  import Glibc
#endif
