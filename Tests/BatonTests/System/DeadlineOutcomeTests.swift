import Testing

@testable import BatonSystem
import BatonTestSupport

/// `MessageChannel.withinDeadline`, the one deadline wrapper for a
/// channel's sends and receives.
@Suite struct DeadlineOutcomeTests {
  /// A receive that nothing answers ends when the deadline closes the
  /// channel, and says it expired, not that the channel closed.
  @Test func aReceiveNothingAnswersExpiresAndClosesTheChannel() async throws {
    let (mine, theirs) = InMemoryMessageChannel.pair()
    let outcome = await mine.withinDeadline(.milliseconds(50)) { try await mine.receive() }
    guard case .expired = outcome else {
      Issue.record("expected expiry, got \(outcome)")
      return
    }
    // The close reached the other end too.
    #expect(try await theirs.receive() == nil)
  }

  /// What arrives in time is returned, and the channel stays open.
  @Test func aMessageInTimeIsReturned() async throws {
    let (mine, theirs) = InMemoryMessageChannel.pair()
    try await theirs.send([1, 2, 3])
    let outcome = await mine.withinDeadline(.seconds(30)) { try await mine.receive() }
    guard case .finished(let message) = outcome else {
      Issue.record("expected a message, got \(outcome)")
      return
    }
    #expect(message == [1, 2, 3])
    try await theirs.send([4])
    #expect(try await mine.receive() == [4])
  }

  /// An error in time is the operation's own.
  @Test func anErrorInTimeIsTheOperations() async {
    struct Refused: Error {}
    let (mine, _) = InMemoryMessageChannel.pair()
    let outcome: DeadlineOutcome<Int> = await mine.withinDeadline(.seconds(30)) { throw Refused() }
    guard case .failed(let error) = outcome else {
      Issue.record("expected the operation's error, got \(outcome)")
      return
    }
    #expect(error is Refused)
  }
}
