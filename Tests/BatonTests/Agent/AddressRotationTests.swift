import Testing

@testable import BatonAgent

/// The address rotation's period is jittered (baton.conf(5),
/// `address-rotation`), so two addresses cannot be tied by a fixed period.
@Suite struct AddressRotationTests {
  /// Whether `a` is within a millisecond of `seconds` (floating point).
  func about(_ a: Duration, _ seconds: Int64) -> Bool {
    let d = a - .seconds(seconds)
    return d < .milliseconds(1) && d > .milliseconds(-1)
  }

  @Test func rotationSpansTwentyPercentEitherSide() {
    let base = Duration.seconds(900)
    #expect(about(AgentRadio.jittered(base, unit: 0), 720))
    #expect(about(AgentRadio.jittered(base, unit: 0.5), 900))
    #expect(AgentRadio.jittered(base, unit: 0.999_999) < .seconds(1080))
    #expect(AgentRadio.jittered(base, unit: 0.999_999) > .seconds(1079))
  }

  /// Where the system gives a live advertisement a new address after a
  /// while (BlueZ with privacy: the kernel's RPA timeout), the beacon is
  /// re-sealed within two thirds of it, so even the longest jittered period
  /// ends before it (PROTOCOL.md 3.3).
  @Test func aShortAddressLifetimeShortensTheRotation() {
    let rotation = Duration.seconds(900)
    #expect(AgentRadio.rotationBase(rotation, addressLifetime: nil) == rotation)
    #expect(AgentRadio.rotationBase(rotation, addressLifetime: .seconds(900)) == .seconds(600))
    #expect(AgentRadio.rotationBase(rotation, addressLifetime: .seconds(60)) == .seconds(40))
    #expect(AgentRadio.rotationBase(rotation, addressLifetime: .seconds(3600)) == rotation)
    for lifetime in [30, 60, 900, 86400] {
      let base = AgentRadio.rotationBase(rotation, addressLifetime: .seconds(lifetime))
      #expect(AgentRadio.jittered(base, unit: 1) < .seconds(lifetime))
    }
  }

  @Test func aUnitOutsideZeroToOneIsClamped() {
    let base = Duration.seconds(60)
    #expect(about(AgentRadio.jittered(base, unit: -3), 48))
    #expect(about(AgentRadio.jittered(base, unit: 7), 72))
    #expect(about(AgentRadio.jittered(base, unit: .nan), 60))
  }
}
