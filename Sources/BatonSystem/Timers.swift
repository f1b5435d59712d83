#if canImport(Glibc)
  import Glibc
#endif

/// The project's one deadline and timer facility: a thread of ours with a
/// min-heap of deadlines that sleeps (in `pthread_cond_timedwait`) exactly
/// until the earliest one, or indefinitely when there is none. No tick, no
/// polling: an idle process with no timer pending never wakes for timers.
///
/// Actions run on the timer thread and must be short and never block
/// (resume a continuation, enqueue a job); everything else belongs on the
/// executor. `BatonExecutor` schedules `Task.sleep` here too, so a sleep
/// and a `Timers.sleep` are the same thing once it is installed.
public final class Timers: @unchecked Sendable {
  /// A scheduled action; `cancel()` removes it if it has not fired.
  public struct Handle: Sendable, Hashable {
    fileprivate let id: UInt64
    fileprivate let owner: ObjectIdentifier
  }

  /// The process-wide timer thread (started on first use).
  public static let shared = Timers(name: "baton-timers")

  private struct Entry {
    let deadline: UInt64
    let id: UInt64
    let action: @Sendable () -> Void
    /// Earlier deadline first; equal deadlines in scheduling order.
    func precedes(_ other: Entry) -> Bool {
      deadline != other.deadline ? deadline < other.deadline : id < other.id
    }
  }

  private let lock = ConditionLock()
  // Guarded by `lock`.
  private var heap: [Entry] = []
  private var nextID: UInt64 = 0
  private var started = false
  private let name: String

  /// A timer facility with its own thread (tests make private ones).
  public init(name: String) { self.name = name }

  /// Number of pending (not yet fired, not cancelled) timers.
  public var pendingCount: Int { lock.withLock { heap.count } }

  /// Runs `action` on the timer thread once `delay` has passed (at once, on
  /// the timer thread, for a delay of zero or less).
  @discardableResult
  public func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> Handle {
    schedule(deadline: MonotonicTime.deadline(after: delay), action)
  }

  /// `deadline` is in nanoseconds of `CLOCK_MONOTONIC` (`MonotonicTime`).
  @discardableResult
  func schedule(deadline: UInt64, _ action: @escaping @Sendable () -> Void) -> Handle {
    lock.lock()
    nextID += 1
    let entry = Entry(deadline: deadline, id: nextID, action: action)
    push(entry)
    let isEarliest = heap[0].id == entry.id
    if !started {
      started = true
      OwnedThread.start(name: name) { [self] in run() }
    }
    lock.unlock()
    // Only a new earliest deadline changes how long the thread must sleep.
    if isEarliest { lock.signal() }
    return Handle(id: entry.id, owner: ObjectIdentifier(self))
  }

  /// Removes the timer if it is still pending; returns whether it was (false
  /// if it already fired or was cancelled). Removing the earliest deadline
  /// wakes the timer thread now, so that it does not wake later for nothing.
  @discardableResult
  public func cancel(_ handle: Handle) -> Bool {
    precondition(handle.owner == ObjectIdentifier(self), "a handle from another Timers")
    let (removed, wasEarliest) = lock.withLock { () -> (Bool, Bool) in
      guard let index = heap.firstIndex(where: { $0.id == handle.id }) else { return (false, false) }
      remove(at: index)
      return (true, index == 0)
    }
    if wasEarliest { lock.signal() }
    return removed
  }

  /// Suspends the calling task for `duration`. Cancelling the task ends the
  /// sleep at once with `CancellationError` (and removes the timer).
  public func sleep(for duration: Duration) async throws {
    let state = SleepState()
    try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
        // The handle must be known before `onCancel` may remove it.
        state.lock.lock()
        if state.cancelled {
          state.lock.unlock()
          continuation.resume(throwing: CancellationError())
          return
        }
        state.continuation = continuation
        state.handle = schedule(after: duration) { state.finish(with: nil) }
        state.lock.unlock()
      }
    } onCancel: {
      if let handle = state.finish(with: CancellationError()) { cancel(handle) }
    }
  }

  /// Suspends until `deadline` of `ContinuousClock`.
  public func sleep(until deadline: ContinuousClock.Instant) async throws {
    try await sleep(for: ContinuousClock.now.duration(to: deadline))
  }

  /// One sleep's state: resumed exactly once, by the timer or by cancellation.
  private final class SleepState: @unchecked Sendable {
    let lock = ConditionLock()
    var cancelled = false
    var continuation: CheckedContinuation<Void, any Error>?
    var handle: Handle?

    /// Resumes the continuation (if not yet resumed) with `error` or
    /// success; returns the timer handle so that a cancel can remove it.
    @discardableResult
    func finish(with error: (any Error)?) -> Handle? {
      lock.lock()
      if error != nil { cancelled = true }
      let pending = continuation
      continuation = nil
      let handle = self.handle
      lock.unlock()
      if let error { pending?.resume(throwing: error) } else { pending?.resume() }
      return handle
    }
  }

  // MARK: The thread

  private func run() {
    lock.lock()
    while true {
      guard let first = heap.first else {
        lock.wait()
        continue
      }
      let now = MonotonicTime.now()
      if first.deadline > now {
        lock.wait(until: first.deadline)
        continue
      }
      remove(at: 0)
      lock.unlock()
      first.action()
      lock.lock()
    }
  }

  // MARK: The heap (guarded by `lock`)

  private func push(_ entry: Entry) {
    heap.append(entry)
    siftUp(heap.count - 1)
  }

  private func remove(at index: Int) {
    let last = heap.count - 1
    if index != last { heap.swapAt(index, last) }
    heap.removeLast()
    if index < heap.count {
      siftDown(index)
      siftUp(index)
    }
  }

  private func siftUp(_ start: Int) {
    var child = start
    while child > 0 {
      let parent = (child - 1) / 2
      guard heap[child].precedes(heap[parent]) else { return }
      heap.swapAt(child, parent)
      child = parent
    }
  }

  private func siftDown(_ start: Int) {
    var parent = start
    while true {
      let left = 2 * parent + 1
      let right = left + 1
      var smallest = parent
      if left < heap.count && heap[left].precedes(heap[smallest]) { smallest = left }
      if right < heap.count && heap[right].precedes(heap[smallest]) { smallest = right }
      if smallest == parent { return }
      heap.swapAt(parent, smallest)
      parent = smallest
    }
  }
}
