import BatonSystem
import Synchronization

/// A message channel that remembers when it last received anything, and
/// when a send last went out, so that a link can tell a quiet peer (or one
/// busy taking a long message from us) from one that is gone
/// (`HandoffLink.watch`).
final class WatchedChannel: MessageChannel {
  let inner: any MessageChannel
  private let last = Mutex(ContinuousClock.now)
  private let lastOut = Mutex(ContinuousClock.now)

  init(_ inner: any MessageChannel) { self.inner = inner }

  /// When the last message (frame) arrived, or when the channel was made.
  var lastReceived: ContinuousClock.Instant { last.withLock { $0 } }

  /// When the last message (frame) went out: a send that completes means
  /// the peer's side keeps taking what we send (credit-based flow control
  /// blocks sends to a peer that stopped).
  var lastSent: ContinuousClock.Instant { lastOut.withLock { $0 } }

  var maximumMessageSize: Int { inner.maximumMessageSize }
  func send(_ message: [UInt8]) async throws {
    try await inner.send(message)
    lastOut.withLock { $0 = ContinuousClock.now }
  }
  func receive() async throws -> [UInt8]? {
    let message = try await inner.receive()
    if message != nil { last.withLock { $0 = ContinuousClock.now } }
    return message
  }
  func close() async { await inner.close() }
}
