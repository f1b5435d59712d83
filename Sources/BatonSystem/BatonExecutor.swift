@_spi(ExperimentalCustomExecutors) @_spi(ExperimentalScheduling) import _Concurrency

#if canImport(Glibc)
  import Glibc
#endif

// MARK: The concurrency contract
//
// - Swift concurrency runs on `BatonExecutor`: a small fixed pool of threads
//   the project owns ("baton-pool-N"), installed as Swift's global executor
//   by the executables before anything else runs (`BatonExecutor.install()`).
//   Idle pool threads block on a condition variable: an idle agent wakes 0
//   times. libdispatch's global queues are never used, so its 1 Hz manager
//   timer (`_dispatch_workq_monitor_pools`) never starts.
// - Time: `Timers.shared` is the one deadline facility (a thread with a
//   deadline heap that sleeps exactly until the next deadline). A wait that
//   needs a bound (a command's answer, a connection, a peer's message) runs
//   under `Timers.shared.withDeadline(_:onExpiry:_:)`, whose expiry ends it;
//   a delay is `Timers.shared.sleep`; an action later is `schedule(after:)`.
//   With the executor installed, `Task.sleep` is scheduled there as well.
// - Blocking calls (a write that may stall, fsync, SQLite, connect, poll,
//   sigwait) never run on the pool: the pool has as few threads as the
//   machine has cores, and one parked thread halves it. They run on threads
//   of their own: a loop on an `OwnedThread` (HCI reader, inotify, accept,
//   sigwait), or a `ThreadExecutor`, a serial executor on one owned thread,
//   used as an actor's executor (the handoff engine: SQLite, fsync) or as a
//   queue of closures (the HCI writer, the control socket's replies), or
//   `ThreadExecutor.run(name:)` for a rare one-off call (opening a
//   controller or the state database). Code must not wait on the pool for
//   work that needs another pool thread (no semaphores in async code): the
//   pool does not grow.
// - Nothing may start a thread or a task before `install()` (main's first
//   line); what does not install it (tests) runs on Swift's default executor.
// - The risk: `install()` rests on underscored, experimental SPI of the
//   standard library (`_createExecutors`, `@_spi(ExperimentalCustomExecutors)`
//   and `@_spi(ExperimentalScheduling)`, Swift 6.2's custom global executors),
//   which a later toolchain may rename or change without notice. Then this
//   file stops compiling: nothing fails silently at run time. The fallback
//   is to call nothing: without `install()` every async job runs on Swift's
//   default executor (libdispatch), which the whole test suite already does,
//   so behaviour is the same; what is lost is the idle figure (libdispatch's
//   1 Hz pool monitor wakes an idle agent, and its pool may grow) and the
//   thread names. Nothing else may depend on this executor being installed.

/// Installs the project's executors (see the contract above).
public enum BatonExecutor {
  /// Installs `PoolExecutor` (and `MainRunLoopExecutor`) as Swift's
  /// executors. Call first thing in `main`, before any task or thread
  /// exists; at most once per process.
  public static func install() {
    _createExecutors(factory: BatonExecutorFactory.self)
  }

  /// Pool width for the global executor: the processors, at least 2, at
  /// most 4 (the agent's work is small; more threads cost memory).
  public static var defaultThreadCount: Int {
    let processors = Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))
    return min(max(processors, 2), 4)
  }
}

/// Swift's global executor on threads the project owns: a fixed pool taking
/// jobs first in, first out, and a scheduler (`Task.sleep`) on `Timers`.
final class PoolExecutor: TaskExecutor, SchedulingExecutor, @unchecked Sendable {
  private let lock = ConditionLock()
  // Guarded by `lock`: a ring of pending jobs.
  private var jobs: [UnownedJob?]
  private var head = 0
  private var count = 0
  private var idle = 0
  private let timers: Timers

  /// The number of pool threads.
  let threadCount: Int

  /// Starts `threads` pool threads named `name-0`, `name-1`, ...
  init(threads: Int, name: String = "baton-pool", timers: Timers = .shared) {
    precondition(threads > 0)
    self.threadCount = threads
    self.timers = timers
    self.jobs = Array(repeating: nil, count: 64)
    for index in 0..<threads {
      OwnedThread.start(name: "\(name)-\(index)") { [self] in work() }
    }
  }

  func enqueue(_ job: consuming ExecutorJob) {
    push(UnownedJob(job))
  }

  func enqueue<C: Clock>(
    _ job: consuming ExecutorJob, after delay: C.Duration, tolerance: C.Duration?, clock: C
  ) {
    let job = UnownedJob(job)
    let delay = (delay as? Duration) ?? .zero
    timers.schedule(after: delay) { [self] in push(job) }
  }

  func enqueue<C: Clock>(
    _ job: consuming ExecutorJob, at instant: C.Instant, tolerance: C.Duration?, clock: C
  ) {
    let job = UnownedJob(job)
    let delay = (clock.now.duration(to: instant) as? Duration) ?? .zero
    timers.schedule(after: delay) { [self] in push(job) }
  }

  private func push(_ job: UnownedJob) {
    lock.lock()
    if count == jobs.count { grow() }
    jobs[(head + count) % jobs.count] = job
    count += 1
    let wake = idle > 0
    lock.unlock()
    if wake { lock.signal() }
  }

  /// Threads waiting for a job (blocked, or about to block, on the lock).
  var idleThreads: Int { lock.withLock { idle } }

  /// Doubles the ring, keeping order (lock held).
  private func grow() {
    var bigger = [UnownedJob?](repeating: nil, count: jobs.count * 2)
    for offset in 0..<count { bigger[offset] = jobs[(head + offset) % jobs.count] }
    jobs = bigger
    head = 0
  }

  private func work() {
    let executor = asUnownedTaskExecutor()
    while true {
      lock.lock()
      while count == 0 {
        idle += 1
        lock.wait()
        idle -= 1
      }
      let job = jobs[head]!
      jobs[head] = nil
      head = (head + 1) % jobs.count
      count -= 1
      lock.unlock()
      job.runSynchronously(on: executor)
    }
  }
}

/// The main actor's executor: jobs queue up until the main thread calls
/// `run()`, which drains them in order (an async `main` does; `baton`'s
/// synchronous main never uses the main actor).
final class MainRunLoopExecutor: MainExecutor, @unchecked Sendable {
  private let lock = ConditionLock()
  private var jobs: [UnownedJob] = []
  private var stopped = false

  init() {}

  func enqueue(_ job: consuming ExecutorJob) {
    let job = UnownedJob(job)
    lock.withLock { jobs.append(job) }
    lock.signal()
  }

  func run() throws {
    try runUntil { false }
  }

  func runUntil(_ condition: () -> Bool) throws {
    let executor = asUnownedSerialExecutor()
    while !condition() {
      lock.lock()
      while jobs.isEmpty && !stopped { lock.wait() }
      if stopped {
        stopped = false
        lock.unlock()
        return
      }
      let batch = jobs
      jobs.removeAll(keepingCapacity: true)
      lock.unlock()
      for job in batch { job.runSynchronously(on: executor) }
    }
  }

  func stop() {
    lock.withLock { stopped = true }
    lock.signal()
  }
}

/// What `BatonExecutor.install()` hands to the runtime.
struct BatonExecutorFactory: ExecutorFactory {
  static let mainExecutor: any MainExecutor = MainRunLoopExecutor()
  static let defaultExecutor: any TaskExecutor = PoolExecutor(
    threads: BatonExecutor.defaultThreadCount)
}
