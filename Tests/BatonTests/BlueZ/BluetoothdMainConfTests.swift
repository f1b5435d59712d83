import Testing

@testable import BatonAgent
@testable import BatonBlueZ

/// Reading bluetoothd's Experimental setting for `baton check`: whether
/// bluetoothd offers the advertisement monitor (passive scanning).
@Suite struct BluetoothdMainConfTests {
  @Test(arguments: [
    ("", false),
    ("[General]\n#Experimental = true\n", false),
    ("[General]\nExperimental = true\n", true),
    ("[General]\nExperimental=1\n", true),
    ("[General]\nExperimental = false\n", false),
    ("[Policy]\nExperimental = true\n", false),
    ("[General]\nExperimental = true\nExperimental = false\n", false),
  ])
  func readsExperimental(_ text: String, _ expected: Bool) {
    #expect(BluetoothdMainConf.experimental(inMainConf: text) == expected)
  }

  @Test func theAdviceNamesTheLineAndTheRestart() {
    let advice = BluetoothdMainConf.experimentalAdvice
    #expect(advice.contains("Experimental = true") && advice.contains("[General]"))
    #expect(advice.contains("/etc/bluetooth/main.conf"))
    #expect(advice.contains("systemctl restart bluetooth"))
  }
}
