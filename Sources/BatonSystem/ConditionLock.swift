import CBatonShims

#if canImport(Glibc)
  import Glibc
#endif

/// A mutex and a condition variable on `CLOCK_MONOTONIC` (pthread's), for
/// threads the project owns: a waiter sleeps in the kernel (futex) until it
/// is signalled or its deadline passes, so an idle waiter never wakes.
/// The corresponding C types are `pthread_mutex_t` and `pthread_cond_t`.
final class ConditionLock: @unchecked Sendable {
  private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
  private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

  init() {
    pthread_mutex_init(mutex, nil)
    var attributes = pthread_condattr_t()
    pthread_condattr_init(&attributes)
    pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
    pthread_cond_init(condition, &attributes)
    pthread_condattr_destroy(&attributes)
  }

  deinit {
    pthread_cond_destroy(condition)
    pthread_mutex_destroy(mutex)
    condition.deallocate()
    mutex.deallocate()
  }

  func lock() { pthread_mutex_lock(mutex) }
  func unlock() { pthread_mutex_unlock(mutex) }

  /// Runs `body` with the mutex held.
  func withLock<T>(_ body: () throws -> T) rethrows -> T {
    lock()
    defer { unlock() }
    return try body()
  }

  /// Wakes one waiter. Call with the mutex held or not.
  func signal() { pthread_cond_signal(condition) }

  /// Wakes every waiter.
  func broadcast() { pthread_cond_broadcast(condition) }

  /// Waits (mutex held) until signalled; may return spuriously, so callers
  /// loop on their predicate.
  func wait() { pthread_cond_wait(condition, mutex) }

  /// Waits (mutex held) until signalled or until `deadline` (nanoseconds of
  /// `CLOCK_MONOTONIC`, see `MonotonicTime`); may return spuriously.
  func wait(until deadline: UInt64) {
    var time = timespec(
      tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
    pthread_cond_timedwait(condition, mutex, &time)
  }
}

/// Nanoseconds of `CLOCK_MONOTONIC` (the clock `ConditionLock` waits on).
enum MonotonicTime {
  static func now() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
  }

  /// `now() + duration`, saturating; a negative duration counts as zero.
  static func deadline(after duration: Duration) -> UInt64 {
    let (seconds, attoseconds) = duration.components
    if seconds < 0 || (seconds == 0 && attoseconds <= 0) { return now() }
    let nanoseconds = UInt64(attoseconds / 1_000_000_000)
    let (scaled, overflow1) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
    let (sum, overflow2) = scaled.addingReportingOverflow(nanoseconds)
    let (result, overflow3) = now().addingReportingOverflow(sum)
    return overflow1 || overflow2 || overflow3 ? UInt64.max / 2 : result
  }
}

/// A thread the project owns: a pthread with a name (shown in
/// /proc/PID/task/TID/comm) and a small stack, running `body` once.
package enum OwnedThread {
  /// Stack size for our threads: 512 KiB is plenty for job code (async
  /// frames live on the heap); glibc's default is 8 MiB.
  static let defaultStackSize = 512 * 1024

  private final class Start {
    let name: String
    let body: () -> Void
    init(name: String, body: @escaping () -> Void) {
      self.name = name
      self.body = body
    }
  }

  /// Starts a detached thread named `name` (at most 15 bytes are kept).
  package static func start(name: String, stackSize: Int = defaultStackSize, _ body: @escaping @Sendable () -> Void) {
    var attributes = pthread_attr_t()
    pthread_attr_init(&attributes)
    defer { pthread_attr_destroy(&attributes) }
    pthread_attr_setstacksize(&attributes, stackSize)
    pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
    let start = Unmanaged.passRetained(Start(name: name, body: body)).toOpaque()
    var thread = pthread_t()
    let result = pthread_create(
      &thread, &attributes,
      { argument in
        let start = Unmanaged<Start>.fromOpaque(argument!).takeRetainedValue()
        // Signals go to the thread that waits for them (SignalStream), never
        // to ours, whatever the mask of the thread that started this one.
        var signals = sigset_t()
        sigfillset(&signals)
        pthread_sigmask(SIG_BLOCK, &signals, nil)
        baton_set_thread_name(start.name)
        start.body()
        return nil
      }, start)
    precondition(result == 0, "pthread_create failed: \(Errno(rawValue: result))")
  }
}
