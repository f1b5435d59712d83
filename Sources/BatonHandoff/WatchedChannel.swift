import BatonSystem
import Synchronization

/// A message channel that remembers when it last received anything, so that
/// a link can tell a quiet peer from one that is gone (`HandoffLink.watch`).
final class WatchedChannel: MessageChannel {
  let inner: any MessageChannel
  private let last = Mutex(ContinuousClock.now)

  init(_ inner: any MessageChannel) { self.inner = inner }

  /// When the last message (frame) arrived, or when the channel was made.
  var lastReceived: ContinuousClock.Instant { last.withLock { $0 } }

  var maximumMessageSize: Int { inner.maximumMessageSize }
  func send(_ message: [UInt8]) async throws { try await inner.send(message) }
  func receive() async throws -> [UInt8]? {
    let message = try await inner.receive()
    if message != nil { last.withLock { $0 = ContinuousClock.now } }
    return message
  }
  func close() async { await inner.close() }
}
