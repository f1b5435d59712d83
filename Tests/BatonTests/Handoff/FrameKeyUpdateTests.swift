import BatonTestSupport
import Testing

@testable import BatonHandoff
@testable import BatonSystem

/// Key updates of the frame layer (PROTOCOL.md section 5, "Key updates";
/// issue 31): each side seals with a new key at least every hour, on the
/// clock the test moves, and frames sealed in the phase before still open
/// when they are sent again.
struct FrameKeyUpdateTests {
  typealias Pair = FrameRecoveryTests.Pair
  static let hour = FrameRecovery.keyUpdateInterval

  @Test func eachSideMovesToANewKeyEveryHourAndFramesStillFlow() throws {
    var pair = Pair()
    pair.send("one")
    pair.deliver()
    #expect(pair.b.keyPhases.receive == 0)
    pair.wait(Self.hour)
    pair.send("two")
    // Phase 1 in the marker's high bits, sealed with the next key.
    let frame = try #require(pair.toB.last)
    #expect(frame[0] == FrameRecovery.dataMarker | 1 << 6)
    #expect(FrameRecovery.open(frame, key: FrameRecovery.nextKey(FrameRecoveryTests.ab)) != nil)
    #expect(FrameRecovery.open(frame, key: FrameRecoveryTests.ab) == nil)
    pair.deliver()
    #expect(FrameRecoveryTests.text(pair.atB) == ["one", "two"])
    #expect(pair.a.keyPhases.send == 1 && pair.b.keyPhases.receive == 1)
    // The other direction moves on its own clock.
    #expect(pair.b.keyPhases.send == 0)
    for hour in 2...5 {
      pair.wait(Self.hour)
      pair.send("\(hour)")
      pair.deliver()
    }
    #expect(pair.a.keyPhases.send == 5 && pair.b.keyPhases.receive == 5)
    #expect(FrameRecoveryTests.text(pair.atB) == ["one", "two", "2", "3", "4", "5"])
  }

  /// A frame lost before the update is sent again in its own phase, which
  /// the receiver still opens with the key before.
  /// Keys forgotten are zeroed: a frame sealed with them before no longer
  /// opens, and what is sealed after is sealed with zeros, not the key.
  @Test func forgottenKeysAreGone() throws {
    var pair = Pair()
    pair.send("one")
    let sealed = try #require(pair.toB.last)
    pair.b.forgetKeys()
    pair.a.forgetKeys()
    pair.deliver()
    #expect(pair.atB.isEmpty)
    pair.send("two")
    let after = try #require(pair.toB.last)
    #expect(FrameRecovery.open(after, key: FrameRecoveryTests.ab) == nil)
    #expect(FrameRecovery.open(sealed, key: FrameRecoveryTests.ab) != nil)
  }

  @Test func aFrameSealedBeforeTheUpdateOpensWhenSentAgain() {
    var pair = Pair()
    pair.send("lost")
    pair.deliver { _ in false }
    pair.wait(Self.hour)
    pair.toB.removeAll()  // its timed repeat is lost too
    pair.send("after")
    pair.deliver()
    #expect(pair.a.keyPhases.send == 1)
    #expect(FrameRecoveryTests.text(pair.atB) == ["lost", "after"])
  }

  /// No second update while something sealed two phases back could still
  /// come: the receiver keeps only the key before its current one.
  @Test func noUpdateWhileThePhaseBeforeIsUnacknowledged() {
    var pair = Pair()
    pair.send("zero")
    pair.deliver { _ in false }
    pair.wait(Self.hour)
    pair.send("one")
    pair.deliver { _ in false }
    #expect(pair.a.keyPhases.send == 1)
    pair.wait(Self.hour)
    pair.send("still one")
    #expect(pair.a.keyPhases.send == 1, "frame 0, of phase 0, is not acknowledged")
    pair.wait(Self.hour)
    pair.deliver()
    #expect(FrameRecoveryTests.text(pair.atB) == ["zero", "one", "still one"])
    pair.wait(Self.hour)
    pair.send("two")
    pair.deliver()
    #expect(pair.a.keyPhases.send == 2 && pair.b.keyPhases.receive == 2)
    #expect(FrameRecoveryTests.text(pair.atB).last == "two")
  }

  /// A phase two ahead, or one behind the key before, never opens: a
  /// receiver derives only the next key.
  @Test func aPhaseTooFarAheadDoesNotOpen() {
    var pair = Pair()
    let twoAhead = FrameRecovery.nextKey(FrameRecovery.nextKey(FrameRecoveryTests.ab))
    let frame = FrameRecovery.seal(
      Array("far".utf8),
      header: FrameRecovery.Header(
        marker: FrameRecovery.dataMarker, phase: 2, number: 0, ack: 0,
        report: FrameRecoveryTests.none, flags: 0),
      key: twoAhead)
    let actions = pair.b.receive(frame, report: FrameRecoveryTests.none, now: pair.now)
    #expect(actions.deliver.isEmpty)
    #expect(pair.b.counts.dropped == 1 && pair.b.keyPhases.receive == 0)
  }
}
