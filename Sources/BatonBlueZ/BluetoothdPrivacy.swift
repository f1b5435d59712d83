import FoundationEssentials

/// bluetoothd's `Privacy` setting (`[General]` of /etc/bluetooth/main.conf),
/// which decides what address our advertisement goes out on with
/// `controller = bluez`: with `off` (Debian's default) and the `limited-*`
/// modes (which publish the identity address when discoverable, as our
/// advertisement is), a connectable beacon would be heard on the adapter's
/// public address, which links every beacon to this machine. So then the
/// agent advertises it closed (PROTOCOL.md 3.3), and `BlueZHost` reports the
/// address as not private. Read by `baton check` and logged by the agent
/// once at start.
public enum BluetoothdPrivacy {
  public static let mainConf = BluetoothdMainConf.path

  /// The value of `Privacy` in `[General]` of a main.conf text (comments
  /// and other sections skipped), lower-cased; "off" when it is not set.
  public static func setting(inMainConf text: String) -> String {
    BluetoothdMainConf.general("Privacy", inMainConf: text)?.lowercased() ?? "off"
  }

  /// The setting of this machine's bluetoothd; nil when main.conf cannot be
  /// read.
  public static func current() -> String? {
    BluetoothdMainConf.current().map(setting(inMainConf:))
  }

  /// Whether the setting keeps the adapter's identity address off the air
  /// for our (discoverable) advertisement.
  public static func isPrivate(_ setting: String) -> Bool {
    ["network", "on", "true", "device"].contains(setting)
  }

  /// The kernel's RPA timeout when nobody changed it (HCI_DEFAULT_RPA_TIMEOUT,
  /// 15 minutes), which only root can read or change (debugfs).
  public static let defaultRPATimeout: Duration = .seconds(900)
  public static let debugfs = "/sys/kernel/debug/bluetooth"

  /// How long the kernel keeps the resolvable private address it gave an
  /// advertising set, for adapter `adapter` (hci0): its debugfs
  /// `rpa_timeout` when this process may read it, else the kernel's
  /// default. The kernel gives every new set a fresh address and keeps it
  /// while the set lives, until this long after it was set; then the next
  /// time the kernel sets the live set up again (the set a connection ended
  /// on, when a client sets the adapter connectable, for instance) it gives
  /// the same data a new address (PROTOCOL.md 3.3).
  public static func rpaTimeout(adapter: String, debugfs: String = debugfs) -> Duration {
    let path = "\(debugfs)/\(adapter)/rpa_timeout"
    guard let data = FileManager.default.contents(atPath: path) else { return defaultRPATimeout }
    return rpaTimeout(text: String(decoding: data, as: UTF8.self)) ?? defaultRPATimeout
  }

  /// debugfs's `rpa_timeout` text ("900\n"), in seconds: the kernel takes
  /// 30 to 86400 (24 hours).
  static func rpaTimeout(text: String) -> Duration? {
    let words = text.split(whereSeparator: \.isWhitespace)
    guard words.count == 1, let seconds = Int(words[0]), (30...86_400).contains(seconds) else {
      return nil
    }
    return .seconds(seconds)
  }

  /// What to do about a setting that is not private.
  public static func advice(_ setting: String) -> String {
    "bluetoothd's Privacy is '\(setting)' (\(mainConf)): the beacon goes out closed, from"
      + " fresh addresses, and the adapter's public address only in the short windows a peer"
      + " asks for to link, so new links wait for the peer's next scan; set 'Privacy = device'"
      + " under [General] there and restart bluetoothd (systemctl restart bluetooth) to advertise"
      + " connectably on a private address"
  }
}
