import Synchronization

/// A counting semaphore for async code: `acquire()` suspends while the count
/// is zero, waiters are served first in, first out, and `fail(_:)` wakes every
/// waiter (now and later) with an error. Used for L2CAP credits and to keep
/// one sender per channel or one connection attempt at a time.
package final class AsyncGate: Sendable {
  private struct State {
    var count: Int
    var waiters: [(id: UInt64, continuation: CheckedContinuation<Void, any Error>)] = []
    var nextID: UInt64 = 0
    var failure: (any Error)?
  }
  private let state: Mutex<State>

  package init(count: Int) { state = Mutex(State(count: count)) }

  package var available: Int { state.withLock { $0.count } }

  /// Takes one unit, suspending until one is free.
  package func acquire() async throws {
    let id = state.withLock { s -> UInt64 in
      s.nextID += 1
      return s.nextID
    }
    try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation {
        (continuation: CheckedContinuation<Void, any Error>) in
        let outcome: Result<Void, any Error>? = state.withLock { s in
          if let failure = s.failure { return .failure(failure) }
          if Task.isCancelled { return .failure(CancellationError()) }
          if s.count > 0 && s.waiters.isEmpty {
            s.count -= 1
            return .success(())
          }
          s.waiters.append((id, continuation))
          return nil
        }
        if let outcome { continuation.resume(with: outcome) }
      }
    } onCancel: {
      let waiter = state.withLock { s -> CheckedContinuation<Void, any Error>? in
        guard let index = s.waiters.firstIndex(where: { $0.id == id }) else { return nil }
        return s.waiters.remove(at: index).continuation
      }
      waiter?.resume(throwing: CancellationError())
    }
  }

  /// Returns `n` units, waking waiters.
  package func release(_ n: Int = 1) {
    let woken = state.withLock { s -> [CheckedContinuation<Void, any Error>] in
      s.count += n
      var out: [CheckedContinuation<Void, any Error>] = []
      while s.count > 0 && !s.waiters.isEmpty {
        s.count -= 1
        out.append(s.waiters.removeFirst().continuation)
      }
      return out
    }
    for continuation in woken { continuation.resume() }
  }

  /// Fails every waiter, and every later `acquire()`, with `error`.
  package func fail(_ error: any Error) {
    let waiters = state.withLock { s -> [CheckedContinuation<Void, any Error>] in
      if s.failure == nil { s.failure = error }
      defer { s.waiters.removeAll() }
      return s.waiters.map(\.continuation)
    }
    for continuation in waiters { continuation.resume(throwing: error) }
  }
}
