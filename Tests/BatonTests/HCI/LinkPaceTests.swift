import Testing

@testable import BatonHCI
@testable import BatonHost

/// `LinkPace` with no clock: the test passes the time.
@Suite("Link pace")
struct LinkPaceTests {
  static let start = ContinuousClock.now
  static let spell = LinkPace.Schedule.standard.quietSpell

  static func at(_ seconds: Double) -> ContinuousClock.Instant { start + .seconds(seconds) }

  @Test func aQuietLinkIdlesAfterTheSpellAndTrafficBringsItBack() {
    var pace = LinkPace(schedule: .standard, madeAt: Self.at(0))
    #expect(pace.pace == .busy)
    // The connection's start arms one check, a spell later.
    #expect(pace.traffic(at: Self.at(0)) == [.check(at: Self.at(0) + Self.spell)])
    // Traffic while a check is due arms nothing more.
    #expect(pace.traffic(at: Self.at(2)) == [])
    // The check finds traffic 3 s ago: look again a spell after it.
    #expect(pace.check(at: Self.at(0) + Self.spell) == [.check(at: Self.at(2) + Self.spell)])
    #expect(pace.pace == .busy)
    // Quiet for the whole spell: idle, and no further check.
    #expect(pace.check(at: Self.at(2) + Self.spell) == [.askForPace])
    #expect(pace.pace == .idle)
    // Data again: busy at once, and a check.
    #expect(pace.traffic(at: Self.at(60)) == [.askForPace, .check(at: Self.at(60) + Self.spell)])
    #expect(pace.pace == .busy)
  }

  @Test func anIdleLinkIsNotCheckedAndTimeNeverRunsBack() {
    var pace = LinkPace(schedule: .standard, madeAt: Self.at(10))
    _ = pace.traffic(at: Self.at(10))
    // A sender's clock reading taken before the last one does not shorten
    // the spell.
    #expect(pace.traffic(at: Self.at(9)) == [])
    #expect(pace.check(at: Self.at(10) + Self.spell - .milliseconds(1)) == [
      .check(at: Self.at(10) + Self.spell)
    ])
    #expect(pace.check(at: Self.at(10) + Self.spell) == [.askForPace])
    #expect(pace.check(at: Self.at(100)) == [])
    #expect(pace.pace == .idle)
  }

  @Test func theStandardPacesAreValidAndTheIdleOneSlower() {
    let standard = LinkPace.Schedule.standard
    for parameters in [standard.busy, standard.idle] {
      // 7.5 ms to 4 s (Core 6.0, Vol 4, Part E, 7.8.18); the supervision
      // timeout longer than two intervals at the range's top.
      #expect(parameters.intervalMin >= 6 && parameters.intervalMin <= parameters.intervalMax)
      #expect(parameters.intervalMax <= 3200)
      #expect(Int(parameters.supervisionTimeout) * 10_000 > 2 * Int(parameters.intervalMax) * 1250)
    }
    #expect(standard.idle.intervalMin > standard.busy.intervalMax)
    #expect(standard.parameters(for: .busy) == standard.busy)
    #expect(standard.parameters(for: .idle) == standard.idle)
  }
}
