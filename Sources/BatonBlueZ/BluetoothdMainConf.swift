import BatonSystem
import FoundationEssentials

/// bluetoothd's /etc/bluetooth/main.conf as `baton check` and the agent
/// read it: the `[General]` keys that decide what baton can do beside
/// bluetoothd (`Privacy`: `BluetoothdPrivacy`; `Experimental`: whether
/// bluetoothd offers the advertisement monitor that lets the agent scan
/// passively, with no discovery, `BlueZHost+Monitor`).
public enum BluetoothdMainConf {
  public static let path = "/etc/bluetooth/main.conf"

  /// This machine's main.conf; nil when it cannot be read.
  public static func current() -> String? {
    guard let data = FileManager.default.contents(atPath: path) else { return nil }
    return String(decoding: data, as: UTF8.self)
  }

  /// The value of `key` in `[General]` of a main.conf text (comments and
  /// other sections skipped; the last one counts), nil when it is not set.
  public static func general(_ key: String, inMainConf text: String) -> String? {
    var section = ""
    var value: String?
    for raw in text.split(whereSeparator: \.isNewline) {
      let line = raw.trimmingSpaces
      if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
      if line.hasPrefix("[") && line.hasSuffix("]") {
        section = String(line.dropFirst().dropLast()).trimmingSpaces
        continue
      }
      guard section == "General", let equals = line.firstIndex(of: "=") else { continue }
      if line[..<equals].trimmingSpaces == key {
        value = line[line.index(after: equals)...].trimmingSpaces
      }
    }
    return value
  }

  /// Whether main.conf turns on bluetoothd's experimental features
  /// (`Experimental = true`, as GLib reads a boolean). bluetoothd's `-E`
  /// does the same from its command line, which this cannot see.
  public static func experimental(inMainConf text: String) -> Bool {
    ["true", "1"].contains(general("Experimental", inMainConf: text)?.lowercased() ?? "false")
  }

  /// How to get passive scanning where bluetoothd does not offer it.
  public static let experimentalAdvice =
    "bluetoothd's experimental features are off (\(path)), so baton finds peers by discovery"
    + " windows; set 'Experimental = true' under [General] there and restart bluetoothd"
    + " (systemctl restart bluetooth) to scan passively through its advertisement monitor,"
    + " with no discovery"
}
