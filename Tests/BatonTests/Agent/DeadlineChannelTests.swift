import Synchronization
import Testing

@testable import BatonAgent
@testable import BatonHandoff
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

/// A channel with flow control of its own, recording what the frame layer
/// asks of it.
private final class CreditChannel: MessageChannel {
  let asked = Mutex<[String]>([])
  var maximumMessageSize: Int { 2048 }
  var preferredMessageSize: Int { 1000 }
  var closedByPeer: Bool { false }
  var flowReport: FlowReport? { FlowReport(framesSent: 7, creditsGranted: 70) }
  var sendWouldWait: Bool { true }
  func send(_ message: [UInt8]) async throws {}
  func receive() async throws -> [UInt8]? { nil }
  func close() async {}
  func repairFlow(peer: FlowReport) { asked.withLock { $0.append("repair \(peer.framesSent)") } }
  func tolerateLoss() { asked.withLock { $0.append("tolerate") } }
  func grantSpare() { asked.withLock { $0.append("spare") } }
}

/// Every wrapper between the frame layer and the L2CAP channel passes its
/// members through (`ChannelWrapper`): one that did not would turn fault
/// recovery off without a word.
@Test func wrappersPassTheFrameLayersMembersThrough() {
  let inner = CreditChannel()
  let wrapped: any MessageChannel = WatchedChannel(DeadlineChannel(inner, deadline: .seconds(5)))
  #expect(wrapped.flowReport == FlowReport(framesSent: 7, creditsGranted: 70))
  #expect(wrapped.preferredMessageSize == 1000)
  #expect(wrapped.sendWouldWait)
  #expect(!wrapped.closedByPeer)
  wrapped.tolerateLoss()
  wrapped.repairFlow(peer: FlowReport(framesSent: 3, creditsGranted: 4))
  wrapped.grantSpare()
  #expect(inner.asked.withLock { $0 } == ["tolerate", "repair 3", "spare"])
}
