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

  /// What to do about a setting that is not private.
  public static func advice(_ setting: String) -> String {
    "bluetoothd's Privacy is '\(setting)' (\(mainConf)): the beacon goes out closed, from"
      + " fresh addresses, and the adapter's public address only in the short windows a peer"
      + " asks for to link, so new links wait for the peer's next scan; set 'Privacy = device'"
      + " under [General] there and restart bluetoothd (systemctl restart bluetooth) to advertise"
      + " connectably on a private address"
  }
}
