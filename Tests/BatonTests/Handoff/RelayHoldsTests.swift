import Testing

@testable import BatonHandoff
@testable import BatonSystem

/// Relays held back (`RelayHolds`, PROTOCOL.md 6.2): a plain value, no
/// actor, no clock.
@Suite struct RelayHoldsTests {
  final class Link {}
  let from = Link()
  let other = Link()
  let start = ContinuousClock.now
  let hash = ContentHash(of: Array("# Note\n".utf8))

  @Test func aNoteIsHeldFromTheOtherLinksUntilItsHoldIsOver() {
    var holds = RelayHolds()
    holds.received("t\0n.md", hash: hash, over: ObjectIdentifier(from), at: start)
    let until = start + RelayHolds.hold
    #expect(holds.heldUntil("t\0n.md", hash: hash, for: ObjectIdentifier(other), at: start) == until)
    #expect(
      holds.heldUntil(
        "t\0n.md", hash: hash, for: ObjectIdentifier(other), at: until - .milliseconds(1)) == until)
    #expect(holds.heldUntil("t\0n.md", hash: hash, for: ObjectIdentifier(other), at: until) == nil)
  }

  @Test func notFromItsOwnLinkNorForAnotherContent() {
    var holds = RelayHolds()
    holds.received("t\0n.md", hash: hash, over: ObjectIdentifier(from), at: start)
    #expect(holds.heldUntil("t\0n.md", hash: hash, for: ObjectIdentifier(from), at: start) == nil)
    let edited = ContentHash(of: Array("# Note\nedited\n".utf8))
    #expect(holds.heldUntil("t\0n.md", hash: edited, for: ObjectIdentifier(other), at: start) == nil)
    #expect(holds.heldUntil("t\0m.md", hash: hash, for: ObjectIdentifier(other), at: start) == nil)
  }

  @Test func aNoteReceivedAgainIsHeldAgainFromItsNewSender() {
    var holds = RelayHolds()
    holds.received("t\0n.md", hash: hash, over: ObjectIdentifier(from), at: start)
    let later = start + .seconds(1)
    holds.received("t\0n.md", hash: hash, over: ObjectIdentifier(other), at: later)
    #expect(
      holds.heldUntil("t\0n.md", hash: hash, for: ObjectIdentifier(from), at: later)
        == later + RelayHolds.hold)
    #expect(holds.heldUntil("t\0n.md", hash: hash, for: ObjectIdentifier(other), at: later) == nil)
  }

  @Test func holdsOverAreDroppedPastTheLimit() {
    var holds = RelayHolds()
    for i in 0...RelayHolds.limit {
      holds.received("k\(i)", hash: hash, over: ObjectIdentifier(from), at: start)
    }
    #expect(holds.count == RelayHolds.limit + 1)
    // The next note, once those are over, leaves only itself.
    let later = start + RelayHolds.hold
    holds.received("next", hash: hash, over: ObjectIdentifier(from), at: later)
    #expect(holds.count == 1)
    #expect(holds.heldUntil("next", hash: hash, for: ObjectIdentifier(other), at: later) != nil)
  }
}
