import Testing

@testable import BatonHandoff

/// Issue 28: the progress of a peer's transfer, as a value with no clock:
/// each event comes with its instant (here a fixed start plus offsets).
@Suite struct TransferProgressTests {
  let start = ContinuousClock.now

  func at(_ seconds: Double) -> ContinuousClock.Instant {
    start + .milliseconds(Int(seconds * 1000))
  }

  /// `count` notes `n0`... of `size` bytes each, wanted at the start.
  func wanting(_ count: Int, size: Int) -> TransferProgress {
    var p = TransferProgress(peerName: "laptop", start: start)
    for i in 0..<count { p.want("n\(i)", bytes: size, at: start) }
    p.allKnown(at: start)
    return p
  }

  @Test func countsNotesAndBytesDoneAndLeftUntilDone() {
    var p = wanting(4, size: 1000)
    #expect(p.notesTotal == 4 && p.bytesTotal == 4000 && !p.isFinished)
    let took1 = p.arrived("n0", bytes: 1000, at: at(1))
    #expect(took1)
    let took2 = p.arrived("n1", bytes: 1000, at: at(2))
    #expect(took2)
    #expect(p.notesDone == 2 && p.notesLeft == 2 && p.bytesDone == 2000 && p.bytesLeft == 2000)
    #expect(!p.isFinished)
    let took3 = p.arrived("n2", bytes: 1000, at: at(3))
    #expect(took3)
    let took4 = p.arrived("n3", bytes: 1000, at: at(4))
    #expect(took4)
    #expect(p.isFinished && p.notesLeft == 0 && p.bytesLeft == 0)
  }

  /// One large note moves as its frames come: the bytes on their way are
  /// shown done (never past the total), with a rate and time left, and the
  /// note's arrival replaces them.
  @Test func aLargeNoteOnItsWayShowsItsBytes() {
    var p = wanting(1, size: 1_000_000)
    p.receiving(bytes: 250_000, at: at(1))
    p.receiving(bytes: 500_000, at: at(2))
    let half = p.snapshot(at: at(2))
    #expect(half.notesDone == 0 && half.bytesDone == 500_000, "\(half)")
    #expect((half.bytesPerSecond ?? 0) >= 200_000, "\(half)")
    #expect(half.secondsLeft.map { (1...3).contains($0) } ?? false, "\(half)")
    p.receiving(bytes: 5_000_000, at: at(3))  // framing beyond the content
    #expect(p.snapshot(at: at(3)).bytesDone == 1_000_000)
    _ = p.arrived("n0", bytes: 1_000_000, at: at(4))
    let done = p.snapshot(at: at(4))
    #expect(done.notesDone == 1 && done.bytesDone == 1_000_000 && p.isFinished, "\(done)")
    // Nothing wanted: bytes on the way count for nothing.
    p.receiving(bytes: 10, at: at(5))
    #expect(p.snapshot(at: at(5)).bytesDone == 1_000_000)
  }

  /// A save pushed on a link, announced by nothing: one note of unknown
  /// size while it comes, done when it arrives.
  @Test func anUnannouncedNoteCountsAsOneUntilItArrives() {
    var p = TransferProgress(peerName: "laptop", start: start)
    p.receivingUnannounced(bytes: 0, at: at(0.5))
    #expect(!p.unannounced, "no bytes yet: nothing to show")
    p.receivingUnannounced(bytes: 300_000, at: at(1))
    p.receivingUnannounced(bytes: 600_000, at: at(2))
    let part = p.snapshot(at: at(2))
    #expect(part.notesDone == 0 && part.notesTotal == 1 && part.bytesDone == 600_000, "\(part)")
    #expect(!part.totalsFinal && !p.isFinished, "its size is not known: \(part)")
    let came = p.arrivedUnannounced(bytes: 1_000_000, at: at(3))
    #expect(came)
    let done = p.snapshot(at: at(3))
    #expect(done.notesDone == 1 && done.bytesDone == 1_000_000 && done.bytesTotal == 1_000_000)
    #expect(p.isFinished)
    let again = p.arrivedUnannounced(bytes: 5, at: at(4))
    #expect(!again, "only once")
  }

  @Test func aNoteNotWantedOrArrivedTwiceCountsNothing() {
    var p = wanting(2, size: 10)
    let took1 = p.arrived("other", bytes: 10, at: at(1))
    #expect(!took1)
    let took2 = p.arrived("n0", bytes: 10, at: at(1))
    #expect(took2)
    let took3 = p.arrived("n0", bytes: 10, at: at(1))
    #expect(!took3)
    p.want("n1", bytes: 10, at: at(1))  // already wanted: not twice
    #expect(p.notesDone == 1 && p.notesTotal == 2 && p.bytesDone == 10 && p.bytesTotal == 20)
  }

  @Test func notFinishedWhileTheWalkStillFindsNotes() {
    var p = TransferProgress(peerName: "laptop", start: start)
    p.want("n0", bytes: 5, at: start)
    let took1 = p.arrived("n0", bytes: 5, at: at(1))
    #expect(took1)
    #expect(!p.isFinished, "every note found arrived, but the walk goes on")
    #expect(p.snapshot(at: at(1)).summary.hasPrefix("1 of 1+ notes, 5 of 5 B+"))
    p.alreadyArrived(bytes: 7, at: at(2))  // pushed before the walk came to it
    #expect(p.notesDone == 2 && p.notesTotal == 2 && p.bytesDone == 12 && p.bytesTotal == 12)
    p.allKnown(at: at(2))
    #expect(p.isFinished)
  }

  @Test func aDroppedNoteLeavesTheTotals() {
    var p = wanting(3, size: 100)
    let took1 = p.arrived("n0", bytes: 100, at: at(1))
    #expect(took1)
    p.drop("n1", at: at(1))
    #expect(p.notesTotal == 2 && p.bytesTotal == 200 && !p.isFinished)
    p.drop("n1", at: at(1))  // twice: nothing more
    #expect(p.notesTotal == 2)
    let took2 = p.arrived("n2", bytes: 100, at: at(2))
    #expect(took2)
    #expect(p.isFinished)
  }

  @Test func rateIsOverTheLastFiveSecondsAndGivesTheTimeLeft() {
    // 100 notes of 1000 bytes; 10 arrive each second for 4 s.
    var p = wanting(100, size: 1000)
    for i in 0..<40 { p.arrived("n\(i)", bytes: 1000, at: at(Double(i + 1) / 10)) }
    let s = p.snapshot(at: at(4))
    #expect(s.bytesPerSecond == 10_000)
    #expect(s.secondsLeft == 6, "60 kB left at 10 kB/s")
    #expect(s.summary == "40 of 100 notes, 40 of 100 kB, 10 kB/s, 6s left")
    // Then 5 notes a second for 10 s: the window forgets the faster start.
    for i in 40..<90 { p.arrived("n\(i)", bytes: 1000, at: at(4 + Double(i - 39) / 5)) }
    let later = p.snapshot(at: at(14))
    #expect(later.bytesPerSecond.map { (4500...5500).contains($0) } == true, "\(later)")
    #expect(later.secondsLeft.map { (2...3).contains($0) } == true, "\(later)")
  }

  @Test func noRateInTheFirstHalfSecondAndStalledWhenNothingMoves() {
    var p = wanting(10, size: 1000)
    #expect(p.snapshot(at: at(0.1)).bytesPerSecond == nil)
    #expect(p.snapshot(at: at(0.1)).secondsLeft == nil)
    #expect(p.snapshot(at: at(1)).summary == "0 of 10 notes, 0 of 10 kB, waiting")
    let took1 = p.arrived("n0", bytes: 1000, at: at(1))
    #expect(took1)
    let stalled = p.snapshot(at: at(20))
    #expect(stalled.bytesPerSecond == 0 && stalled.secondsLeft == nil)
    #expect(stalled.summary.hasSuffix(", stalled"), "\(stalled.summary)")
  }

  @Test func emptyNotesAreTimedByTheirCount() {
    var p = wanting(10, size: 0)
    for i in 0..<5 { p.arrived("n\(i)", bytes: 0, at: at(Double(i + 1) / 5)) }
    #expect(p.snapshot(at: at(1)).secondsLeft == 1, "5 notes left at 5 a second")
  }

  @Test func theTotalTakesTheLengthThatCameNotTheSizeClaimed() {
    var p = wanting(2, size: 100)
    let took1 = p.arrived("n0", bytes: 300, at: at(1))  // the index said 100
    #expect(took1)
    #expect(p.bytesTotal == 400 && p.bytesDone == 300 && p.bytesLeft == 100)
    let took2 = p.arrived("n1", bytes: 0, at: at(2))
    #expect(took2)
    #expect(p.bytesTotal == 300 && p.bytesDone == 300 && p.isFinished)
  }

  @Test func sizesFromThePeerSaturateRatherThanTrap() {
    var p = TransferProgress(peerName: "hostile", start: start)
    p.want("a", bytes: Int.max, at: start)
    p.want("b", bytes: Int.max, at: start)
    p.want("c", bytes: -5, at: start)
    #expect(p.bytesTotal == Int.max && p.notesTotal == 3)
    let took1 = p.arrived("a", bytes: Int.max, at: at(1))
    #expect(took1)
    let took2 = p.arrived("b", bytes: Int.max, at: at(1))
    #expect(took2)
    let took3 = p.arrived("c", bytes: -1, at: at(1))
    #expect(took3)
    #expect(p.bytesDone == Int.max && p.bytesTotal == Int.max && p.bytesLeft == 0)
    p.alreadyArrived(bytes: Int.max, at: at(2))
    let s = p.snapshot(at: at(2))
    #expect(s.bytesDone == Int.max && s.notesDone == 4)
    #expect(s.bytesPerSecond.map { $0 > 0 } == true)
    _ = s.summary  // formats without trapping
    #expect(TransferProgress.clamped(.nan) == 0 && TransferProgress.clamped(1e300) == Int.max)
  }

  @Test func logsAtMostEveryFiveSecondsAndNoneForAShortTransfer() {
    var p = wanting(3, size: 10)
    let early = (p.logDue(at: at(1)), p.logDue(at: at(4.9)))
    #expect(!early.0 && !early.1)
    #expect(!p.logged)
    let due1 = p.logDue(at: at(5))
    #expect(due1)
    let due2 = p.logDue(at: at(9))
    #expect(!due2)
    let again = p.logDue(at: at(10.5))
    #expect(again && p.logged)
    #expect(p.logLine(at: at(10.5)).hasPrefix("from laptop: 0 of 3 notes, 0 of 30 B"))
  }

  @Test func staleAfterTheIdleLimit() {
    var p = wanting(3, size: 10)
    let took1 = p.arrived("n0", bytes: 10, at: at(10))
    #expect(took1)
    #expect(!p.isStale(at: at(39), idle: .seconds(30)))
    #expect(p.isStale(at: at(40), idle: .seconds(30)))
  }

  @Test func wording() {
    typealias S = TransferProgress.Snapshot
    #expect(S.size(512) == "512 B" && S.size(85_400) == "85 kB" && S.size(1_234_567) == "1.2 MB")
    #expect(S.size(2_500_000_000) == "2.5 GB" && S.size(1_200_000, unitOf: 9_800_000) == "1.2 MB")
    #expect(S.size(300, unitOf: 9_800_000) == "0.0 MB")
    #expect(S.duration(45) == "45s" && S.duration(100) == "1m40s" && S.duration(7500) == "2h05m")
    let s = S(
      peerName: "laptop", notesDone: 1200, notesTotal: 10000, bytesDone: 1_200_000,
      bytesTotal: 9_800_000, totalsFinal: true, bytesPerSecond: 85_000, secondsLeft: 100)
    #expect(s.summary == "1200 of 10000 notes, 1.2 of 9.8 MB, 85 kB/s, 1m40s left")
  }
}
