import BatonSystem
import Synchronization

/// A message channel whose every send and receive must finish within
/// `deadline`; otherwise the channel is closed (which wakes the stuck
/// operation) and the operation fails with `DeadlineChannel.Expired`.
///
/// A peer that vanishes without disconnecting (a killed agent whose
/// controller keeps the link up, or one gone out of range before the
/// supervision timeout) would otherwise leave a sender waiting for L2CAP
/// credits that never come.
final class DeadlineChannel: MessageChannel {
  struct Expired: Error, CustomStringConvertible {
    let operation: String
    let seconds: Int64
    var description: String {
      "the peer did not take part for \(seconds) s (\(operation)); the channel was closed"
    }
  }

  let inner: any MessageChannel
  let deadline: Duration
  private let expired = Mutex<String?>(nil)
  private let armed = Mutex(true)

  init(_ inner: any MessageChannel, deadline: Duration) {
    self.inner = inner
    self.deadline = deadline
  }

  var maximumMessageSize: Int { inner.maximumMessageSize }

  func send(_ message: [UInt8]) async throws {
    try await guarded("sending") { try await self.inner.send(message) }
  }

  func receive() async throws -> [UInt8]? {
    try await guarded("receiving") { try await self.inner.receive() }
  }

  func close() async { await inner.close() }

  /// No deadline from now on: a link's reader waits as long as the peer is
  /// quiet (the link's own keep-alive tells a quiet peer from a dead one).
  func disarm() { armed.withLock { $0 = false } }

  private func guarded<T: Sendable>(_ operation: String, _ body: @Sendable () async throws -> T)
    async throws -> T
  {
    guard armed.withLock({ $0 }) else { return try await body() }
    let watchdog = Task {
      try await Timers.shared.sleep(for: self.deadline)
      self.expired.withLock { $0 = operation }
      await self.inner.close()
    }
    defer { watchdog.cancel() }
    do {
      let value = try await body()
      if let what = expired.withLock({ $0 }) {
        throw Expired(operation: what, seconds: deadline.components.seconds)
      }
      return value
    } catch {
      if let what = expired.withLock({ $0 }) {
        throw Expired(operation: what, seconds: deadline.components.seconds)
      }
      throw error
    }
  }
}
