#if canImport(Glibc)
  import Glibc
#endif

/// A serial executor on one thread the project owns, for code that blocks:
/// an actor whose `unownedExecutor` is one of these runs every job on that
/// thread, so its SQLite writes, fsyncs and blocking writes park that thread
/// and never a thread of the pool (`BatonExecutor`). Plain closures can be
/// queued on it too (`execute(_:)`, `run(_:)`), in order with the jobs: the
/// HCI writer and the control socket's replies work that way.
///
/// The thread starts with the first job and ends once the executor is gone
/// and its queue is empty, so an executor that is never used costs nothing
/// and one that is dropped leaves no thread behind. An idle thread blocks on
/// a condition variable: it never wakes.
///
/// For an actor:
/// ```swift
/// let executor = ThreadExecutor(name: "baton-engine")
/// nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
/// ```
package final class ThreadExecutor: SerialExecutor, @unchecked Sendable {
  /// The thread's name (at most 15 bytes are kept).
  package let name: String
  private let queue: WorkQueue

  package init(name: String) {
    self.name = name
    queue = WorkQueue()
  }

  // The thread finishes what is queued, then ends.
  deinit { queue.close() }

  package func enqueue(_ job: consuming ExecutorJob) {
    push(.job(UnownedJob(job)))
  }

  package func asUnownedSerialExecutor() -> UnownedSerialExecutor {
    UnownedSerialExecutor(ordinary: self)
  }

  /// Traps unless called on this executor's thread (Swift's isolation
  /// checks ask when a job's executor is not known to be this one).
  package func checkIsolated() {
    precondition(isCurrent, "not on the thread of \(name)")
  }

  /// Whether the calling thread is this executor's thread.
  package var isCurrent: Bool { queue.isCurrentThread }

  /// Runs `body` on the thread, after what is already queued; returns at once.
  package func execute(_ body: @escaping @Sendable () -> Void) {
    push(.call(body))
  }

  /// Runs `body` on the thread and returns its result: how async code makes
  /// a blocking call without blocking the thread it runs on. Not
  /// cancellable: a call that has started is waited for.
  package func run<T: Sendable, Failure: Error>(
    _ body: @escaping @Sendable () throws(Failure) -> T
  ) async throws(Failure) -> T {
    let result = await withCheckedContinuation {
      (continuation: CheckedContinuation<Result<T, Failure>, Never>) in
      execute {
        do throws(Failure) {
          continuation.resume(returning: .success(try body()))
        } catch {
          continuation.resume(returning: .failure(error))
        }
      }
    }
    return try result.get()
  }

  /// Runs one blocking call on a thread of its own that ends with it: for
  /// rare calls such as opening a controller or the state database.
  package static func run<T: Sendable, Failure: Error>(
    name: String, _ body: @escaping @Sendable () throws(Failure) -> T
  ) async throws(Failure) -> T {
    try await ThreadExecutor(name: name).run(body)
  }

  private func push(_ work: WorkQueue.Work) {
    if queue.push(work) {
      let queue = self.queue
      // Unowned: a job exists only while its actor, which holds this
      // executor, does; closures do not use it.
      let executor = asUnownedSerialExecutor()
      OwnedThread.start(name: name) { queue.serve(on: executor) }
    }
  }
}

/// The queue between `ThreadExecutor` and its thread.
private final class WorkQueue: @unchecked Sendable {
  enum Work {
    case job(UnownedJob)
    case call(@Sendable () -> Void)
  }

  private let lock = ConditionLock()
  // Guarded by `lock`.
  private var items: [Work] = []
  private var head = 0
  private var started = false
  private var closed = false
  private var thread: pthread_t?

  /// Queues `work`; returns true when the thread must be started.
  func push(_ work: Work) -> Bool {
    lock.lock()
    items.append(work)
    let start = !started
    started = true
    lock.unlock()
    lock.signal()
    return start
  }

  func close() {
    lock.withLock { closed = true }
    lock.signal()
  }

  var isCurrentThread: Bool {
    lock.withLock { thread.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
  }

  /// The thread's loop: runs work in order until closed and drained.
  func serve(on executor: UnownedSerialExecutor) {
    lock.lock()
    thread = pthread_self()
    while true {
      while head == items.count && !closed { lock.wait() }
      if head == items.count {
        lock.unlock()
        return
      }
      let work = items[head]
      head += 1
      if head == items.count {
        items.removeAll(keepingCapacity: items.count <= 64)
        head = 0
      }
      lock.unlock()
      switch work {
      case .job(let job): job.runSynchronously(on: executor)
      case .call(let body): body()
      }
      lock.lock()
    }
  }
}
