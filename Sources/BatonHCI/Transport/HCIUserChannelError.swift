import BatonSystem

#if canImport(Glibc)
  import Glibc
#endif

/// Why a kernel adapter (`hciN`) could not be opened or used on the HCI user
/// channel. Each case's description names the adapter, the cause (with the
/// errno name) and what the user can do about it.
public enum HCIUserChannelError: Error, Equatable, Sendable, CustomStringConvertible {
  /// `socket(AF_BLUETOOTH)` failed with EAFNOSUPPORT: no Bluetooth in this kernel.
  case bluetoothUnsupported(index: Int)
  /// No adapter with this index (ENODEV); `available` lists those that exist.
  case noSuchAdapter(index: Int, available: [HCIAdapterInfo])
  /// The adapter is up, initialising, or used by bluetoothd (EBUSY, EALREADY).
  case adapterBusy(index: Int, errno: Errno)
  /// Another program holds the adapter's user channel already (EUSERS).
  case userChannelTaken(index: Int)
  /// The process lacks CAP_NET_ADMIN (EPERM, EACCES).
  case notPermitted(index: Int, errno: Errno)
  /// The adapter is blocked by rfkill (ERFKILL).
  case blockedByRFKill(index: Int)
  /// The transport has been closed.
  case closed(index: Int)
  /// Any other failure of a system call.
  case failed(index: Int, operation: String, errno: Errno)

  /// Maps an errno from `socket`, `hci_devinfo` or `bind` to its case.
  public init(opening index: Int, errno: Errno, available: [HCIAdapterInfo]) {
    switch errno.rawValue {
    case EAFNOSUPPORT, EPROTONOSUPPORT:
      self = .bluetoothUnsupported(index: index)
    case ENODEV, ENXIO:
      self = .noSuchAdapter(index: index, available: available)
    case EBUSY, EALREADY:
      self = .adapterBusy(index: index, errno: errno)
    case EUSERS:
      self = .userChannelTaken(index: index)
    case EPERM, EACCES:
      self = .notPermitted(index: index, errno: errno)
    case ERFKILL:
      self = .blockedByRFKill(index: index)
    default:
      self = .failed(index: index, operation: "open", errno: errno)
    }
  }

  /// The adapter index the error is about.
  public var index: Int {
    switch self {
    case .bluetoothUnsupported(let index), .noSuchAdapter(let index, _),
      .adapterBusy(let index, _), .userChannelTaken(let index), .notPermitted(let index, _),
      .blockedByRFKill(let index), .closed(let index), .failed(let index, _, _):
      return index
    }
  }

  public var description: String { describe(in: .current) }

  /// The message, for a process in `facts`' sandbox (or none).
  public func describe(in facts: SandboxFacts) -> String {
    let name = "hci\(index)"
    switch self {
    case .bluetoothUnsupported where facts.kernelHasBluetooth:
      return
        "\(name): socket(AF_BLUETOOTH) was refused (EAFNOSUPPORT), though this kernel has "
        + "Bluetooth (/sys/module/bluetooth): a sandbox forbids this process the address "
        + "family. Under systemd, the unit's RestrictAddressFamilies= must list AF_BLUETOOTH "
        + "(the shipped baton.service does; a drop-in that sets the option again must keep "
        + "it); in a container, allow AF_BLUETOOTH in its seccomp profile"
    case .bluetoothUnsupported:
      return
        "\(name): this kernel has no Bluetooth support (socket(AF_BLUETOOTH) failed: "
        + "EAFNOSUPPORT). Load the Bluetooth modules (`modprobe bluetooth` and your "
        + "adapter's driver, e.g. `modprobe btusb`), or reach a controller without the "
        + "kernel: --controller tcp:HOST:PORT or --controller serial:/dev/ttyXXX"
    case .noSuchAdapter(_, let available):
      let present =
        available.isEmpty
        ? "the kernel has no Bluetooth adapters at all: plug one in (check `dmesg` for its "
          + "driver) or use --controller tcp:HOST:PORT or serial:/dev/ttyXXX"
        : "adapters present: " + available.map(\.description).joined(separator: ", ")
          + "; use one of those, e.g. --controller \(available[0].name)"
      return "\(name): no such Bluetooth adapter (ENODEV); \(present)"
    case .adapterBusy(let index, let errno):
      return
        "\(name): adapter is up or in use (\(errno.symbol)): the HCI user channel needs it "
        + "down and used by no one else. If bluetoothd has it, take it down with "
        + "`btmgmt --index \(index) power off` (or `hciconfig \(name) down`) or stop "
        + "bluetoothd (`systemctl stop bluetooth`); if another program holds its user "
        + "channel (another baton agent?), stop that one; then start baton again"
    case .userChannelTaken:
      return
        "\(name): another program already holds this adapter's user channel (EUSERS): "
        + "stop it (another baton agent, btproxy, a bumble app) or use another adapter"
    case .notPermitted(_, let errno):
      return
        "\(name): not permitted (\(errno.symbol)): the exclusive HCI user channel needs "
        + "CAP_NET_ADMIN. The default controller, bluez (beside bluetoothd), needs none: "
        + "drop `controller = \(name)` unless baton must own the adapter. Otherwise grant "
        + "the capability to the binary alone (`sudo setcap cap_net_admin+ep "
        + "$(command -v baton)`) or set AmbientCapabilities=CAP_NET_ADMIN in a system unit "
        + "with User=; do not run the agent as root"
        + (facts.systemdUnit
          ? ". Under systemd, the shipped user unit's sandbox keeps a file capability from "
            + "working: add the drop-in for a kernel adapter from baton.service's comments "
            + "(`systemctl --user edit baton`), or run it as the system unit they describe"
          : "")
    case .blockedByRFKill:
      return "\(name): adapter is blocked by rfkill (ERFKILL): run `rfkill unblock bluetooth`"
    case .closed:
      return "\(name): the user channel is closed"
    case .failed(_, let operation, let errno):
      return "\(name): \(operation) on the HCI user channel failed: \(errno.symbol) (\(errno))"
    }
  }
}

extension Errno {
  /// `name`, plus the few errnos the user channel adds that `Errno` does not name.
  fileprivate var symbol: String {
    switch rawValue {
    case EALREADY: "EALREADY"
    case EUSERS: "EUSERS"
    case EPROTONOSUPPORT: "EPROTONOSUPPORT"
    default: name
    }
  }
}
