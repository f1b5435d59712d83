import BatonTestSupport
import Synchronization
import Testing

@testable import BatonHandoff
@testable import BatonSystem

/// Issue 28 in a session (a peer without a link): the engine's status shows
/// the transfer from the peer while its pulls run, and none once it ended.
@Suite struct SessionProgressTests {
  /// A channel whose `pauseAt`-th received message waits for `release()`.
  final class PausingChannel: ChannelWrapper {
    let inner: any MessageChannel
    let pauseAt: Int
    private let received = Mutex(0)
    private let gate: AsyncStream<Void>
    private let opener: AsyncStream<Void>.Continuation

    init(_ inner: any MessageChannel, pauseAt: Int) {
      self.inner = inner
      self.pauseAt = pauseAt
      (gate, opener) = AsyncStream.makeStream(of: Void.self)
    }

    func release() { opener.yield() }

    func receive() async throws -> [UInt8]? {
      let count = received.withLock { n -> Int in
        n += 1
        return n
      }
      if count == pauseAt {
        for await _ in gate { break }
      }
      return try await inner.receive()
    }
  }

  @Test func aSessionsPullsShowTheirProgressUntilTheyEnd() async throws {
    let key = GroupKey.generate()
    let a = try HandoffTestAgent("alpha", key: key)
    let b = try HandoffTestAgent("bravo", key: key)
    for i in 0..<200 { await b.save("n\(i).md", "# Note \(i)\nline \(i)\n") }
    let (ca, cb) = InMemoryMessageChannel.pair(maximumMessageSize: 512)
    // A's 120th message is well into the notes (the handshake and the walk
    // take a few dozen at most).
    let paused = PausingChannel(ca, pauseAt: 120)
    async let pulled = a.engine.runSession(over: paused, initiator: true, peerAddress: "addr-b")
    async let served = b.engine.runSession(over: cb, initiator: false, peerAddress: "addr-a")

    var shown: TransferProgress.Snapshot?
    #expect(
      await eventually(20, "A shows the transfer from bravo part done") {
        shown = await a.engine.status().transfers.first
        return shown.map { $0.notesDone > 0 && $0.notesDone < $0.notesTotal } ?? false
      })
    if let shown {
      #expect(shown.peerName == "bravo")
      #expect(shown.notesTotal <= 200 && shown.bytesDone > 0 && shown.bytesDone < shown.bytesTotal)
    }
    paused.release()
    let summary = try await pulled
    _ = try await served
    #expect(summary.received.count == 200)
    #expect(await a.engine.status().transfers.isEmpty, "none once the session ended")
  }
}
