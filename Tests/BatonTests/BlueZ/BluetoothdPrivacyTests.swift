import Testing

@testable import BatonAgent

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
}
