import FoundationEssentials
import Testing

@testable import BatonAgent
@testable import BatonBlueZ

/// Reading bluetoothd's Privacy setting for `baton check` and the agent's
/// warning (issue 25).
@Suite struct BluetoothdPrivacyTests {
  @Test(arguments: [
    ("", "off"),
    ("[General]\n#Privacy = device\n", "off"),
    ("[General]\nPrivacy = device\n", "device"),
    ("[General]\n  Privacy=Network  \r\n", "network"),
    ("[Policy]\nPrivacy = device\n[General]\nName = x\n", "off"),
    ("[General]\nPrivacy = device\n[LE]\nPrivacy = off\n", "device"),
    ("; comment\n[ General ]\nPrivacy = limited-device\n", "limited-device"),
  ])
  func readsTheGeneralSection(_ text: String, _ expected: String) {
    #expect(BluetoothdPrivacy.setting(inMainConf: text) == expected)
  }

  @Test func onlyPrivateModesKeepTheIdentityOffTheAir() {
    for mode in ["network", "on", "true", "device"] { #expect(BluetoothdPrivacy.isPrivate(mode)) }
    for mode in ["off", "false", "limited-network", "limited-device", "bogus"] {
      #expect(!BluetoothdPrivacy.isPrivate(mode))
    }
    let advice = BluetoothdPrivacy.advice("off")
    #expect(advice.contains("Privacy = device") && advice.contains("/etc/bluetooth/main.conf"))
  }

  /// debugfs's rpa_timeout: the seconds the kernel takes (30 to 86400), or
  /// nothing usable.
  @Test(arguments: [
    ("900\n", 900), ("60", 60), ("30\n", 30), ("86400\n", 86400), ("29\n", nil),
    ("86401", nil), ("", nil), ("-60\n", nil), ("60 60\n", nil), ("1e3", nil),
    ("99999999999999999999999", nil),
  ] as [(String, Int?)])
  func readsTheKernelsRPATimeout(_ text: String, _ seconds: Int?) {
    #expect(BluetoothdPrivacy.rpaTimeout(text: text) == seconds.map { .seconds($0) })
  }

  @Test func theRPATimeoutComesFromDebugfsOrIsTheKernelsDefault() throws {
    let dir = try TestEnvironment.temporaryDirectory("debugfs")
    try FileManager.default.createDirectory(
      at: dir.appendingPathComponent("hci0"), withIntermediateDirectories: true)
    try Data("60\n".utf8).write(to: dir.appendingPathComponent("hci0/rpa_timeout"))
    #expect(BluetoothdPrivacy.rpaTimeout(adapter: "hci0", debugfs: dir.path) == .seconds(60))
    // Not readable (not root, no debugfs), or nonsense: the default, 15 minutes.
    #expect(BluetoothdPrivacy.rpaTimeout(adapter: "hci1", debugfs: dir.path) == .seconds(900))
    try Data("soon".utf8).write(to: dir.appendingPathComponent("hci0/rpa_timeout"))
    #expect(BluetoothdPrivacy.rpaTimeout(adapter: "hci0", debugfs: dir.path) == .seconds(900))
  }
}
