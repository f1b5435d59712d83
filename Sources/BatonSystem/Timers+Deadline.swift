import Synchronization

extension Timers {
  /// Runs `operation` under a deadline: if it is still running `timeout`
  /// from now, `onExpiry` runs, once, on a task of its own, and must make it
  /// end (fail the continuation it waits on, close the channel it reads
  /// from). The deadline is cancelled when `operation` returns, and
  /// `onExpiry` never starts after that.
  ///
  /// The one way baton bounds a wait for a peer or a controller: a command's
  /// answer, a signalling response, a connection, a message. `operation`
  /// runs in the caller's isolation; nothing is cancelled, so an operation
  /// whose waits ignore cancellation (continuations) ends all the same.
  public func withDeadline<T>(
    _ timeout: Duration, isolation: isolated (any Actor)? = #isolation,
    onExpiry: @escaping @Sendable () async -> Void,
    _ operation: () async throws -> T
  ) async rethrows -> T {
    let phase = DeadlinePhase()
    let handle = schedule(after: timeout) {
      if phase.expire() { Task { await onExpiry() } }
    }
    defer {
      phase.finish()
      cancel(handle)
    }
    return try await operation()
  }
}

/// Whether an operation under a deadline finished first or the deadline
/// passed first (whichever comes first wins; the other is a no-op).
private final class DeadlinePhase: Sendable {
  private let finished = Mutex<Bool?>(nil)

  /// True when the deadline passed while the operation still ran.
  func expire() -> Bool {
    finished.withLock { state in
      guard state == nil else { return false }
      state = false
      return true
    }
  }

  func finish() {
    finished.withLock { state in if state == nil { state = true } }
  }
}
