import BatonSystem
import Synchronization

/// A message channel that remembers when it last received anything, and
/// when a send last went out, so that a link can tell a quiet peer (or one
/// busy taking a long message from us) from one that is gone
/// (`HandoffLink.watch`).
final class WatchedChannel: ChannelWrapper {
  let inner: any MessageChannel
  private let last = Mutex(ContinuousClock.now)
  private let lastOut = Mutex(ContinuousClock.now)
  /// Who to tell when a send starts on an idle channel. A struct, not a
  /// bare closure in the tuple: `Mutex.withLock` hands its value to the body
  /// as a generic `inout`, and a function inside a tuple there is
  /// reabstracted on the way in and out, two thunks more at every send
  /// (after a few thousand sends, calling it overflowed the stack).
  private struct StartAction: Sendable {
    let call: @Sendable () -> Void
  }
  /// Sends under way, and who to tell when one starts on an idle channel.
  private let sending = Mutex<(count: Int, onStart: StartAction?)>((0, nil))

  init(_ inner: any MessageChannel) { self.inner = inner }

  /// Whether a send is under way (it may be waiting for the peer's flow
  /// control).
  var isSending: Bool { sending.withLock { $0.count > 0 } }

  /// Calls `action` whenever a send starts while none was under way.
  func onSendStart(_ action: @escaping @Sendable () -> Void) {
    sending.withLock { $0.onStart = StartAction(call: action) }
  }

  /// When the last message (frame) arrived, or when the channel was made.
  var lastReceived: ContinuousClock.Instant { last.withLock { $0 } }

  /// When the last message (frame) went out: a send that completes means
  /// the peer's side keeps taking what we send (credit-based flow control
  /// blocks sends to a peer that stopped).
  var lastSent: ContinuousClock.Instant { lastOut.withLock { $0 } }

  func send(_ message: [UInt8]) async throws {
    let started = sending.withLock { s -> StartAction? in
      s.count += 1
      return s.count == 1 ? s.onStart : nil
    }
    started?.call()
    defer { sending.withLock { $0.count -= 1 } }
    try await inner.send(message)
    lastOut.withLock { $0 = ContinuousClock.now }
  }
  func receive() async throws -> [UInt8]? {
    let message = try await inner.receive()
    if message != nil { last.withLock { $0 = ContinuousClock.now } }
    return message
  }
}
