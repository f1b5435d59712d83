import Synchronization

/// How a send or receive bounded by `MessageChannel.withinDeadline` ended.
public enum DeadlineOutcome<Value> {
  /// It finished in time, with this value.
  case finished(Value)
  /// It failed in time, for this reason (the channel closed, a violation).
  case failed(any Error)
  /// The deadline passed first: the channel was closed, which ended it.
  case expired
}

extension MessageChannel {
  /// Runs `operation`, a send or a receive on this channel, and closes the
  /// channel if it has not ended within `limit`: the close ends a send
  /// waiting for credits or a receive waiting for a message, and the
  /// outcome says the deadline, not the error the close caused, ended it.
  ///
  /// The one deadline wrapper for a channel's sends and receives (the
  /// sessions', the links' and the pairing exchange's), over
  /// `Timers.withDeadline`; each caller says in its own layer's error what
  /// an expired deadline means.
  public func withinDeadline<Value>(
    _ limit: Duration, isolation: isolated (any Actor)? = #isolation,
    _ operation: () async throws -> Value
  ) async -> DeadlineOutcome<Value> {
    let passed = Mutex(false)
    let outcome: DeadlineOutcome<Value>
    do {
      outcome = .finished(
        try await Timers.shared.withDeadline(
          limit,
          onExpiry: {
            passed.withLock { $0 = true }
            await self.close()
          }, operation))
    } catch {
      outcome = .failed(error)
    }
    return passed.withLock { $0 } ? .expired : outcome
  }
}
