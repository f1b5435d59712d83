import Synchronization
import Testing

@testable import BatonAgent
@testable import BatonSystem

/// A channel whose sends never complete (a peer that grants no credits)
/// and whose receives end only when it is closed.
private final class StuckChannel: MessageChannel {
  private let waiters = Mutex<(closed: Bool, list: [CheckedContinuation<Void, Never>])>((false, []))
  var maximumMessageSize: Int { 100 }

  private func waitForClose() async {
    await withCheckedContinuation { continuation in
      let closed = waiters.withLock { state in
        if !state.closed { state.list.append(continuation) }
        return state.closed
      }
      if closed { continuation.resume() }
    }
  }

  func send(_ message: [UInt8]) async throws {
    await waitForClose()
    throw CancellationError()
  }

  func receive() async throws -> [UInt8]? {
    await waitForClose()
    return nil
  }

  func close() async {
    let list = waiters.withLock { state in
      state.closed = true
      defer { state.list = [] }
      return state.list
    }
    for waiter in list { waiter.resume() }
  }
}

@Suite struct DeadlineChannelTests {
  @Test func aStuckSendFailsWithExpiredAndClosesTheChannel() async throws {
    let channel = DeadlineChannel(StuckChannel(), deadline: .milliseconds(100))
    let start = ContinuousClock.now
    await #expect(throws: DeadlineChannel.Expired.self) { try await channel.send([1]) }
    #expect(ContinuousClock.now - start >= .milliseconds(100))
    // The close woke everything waiting on the channel.
    #expect(try await channel.receive() == nil)
  }
}
