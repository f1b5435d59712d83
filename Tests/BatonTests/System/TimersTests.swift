import Foundation
import Synchronization
import Testing

@testable import BatonSystem

/// Resumes a waiter once `count` events were recorded (a positive signal,
/// no polling).
private final class Countdown: @unchecked Sendable {
  private let state: Mutex<(left: Int, waiter: CheckedContinuation<Void, Never>?)>
  init(_ count: Int) { state = Mutex((count, nil)) }
  func tick() {
    let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
      s.left -= 1
      guard s.left == 0 else { return nil }
      defer { s.waiter = nil }
      return s.waiter
    }
    waiter?.resume()
  }
  func wait() async {
    await withCheckedContinuation { continuation in
      let done = state.withLock { s -> Bool in
        if s.left <= 0 { return true }
        s.waiter = continuation
        return false
      }
      if done { continuation.resume() }
    }
  }
}

@Suite struct TimersTests {
  @Test func firesInDeadlineOrderAndNeverEarly() async {
    let timers = Timers(name: "test-timers")
    var generator = SplitMix64(seed: 7)
    let base = MonotonicTime.now() + 20_000_000
    // Deadlines within 40 ms, with repeats: equal deadlines fire in the
    // order they were scheduled.
    let deadlines = (0..<300).map { _ in base + (generator.next() % 40) * 1_000_000 }
    let fired = LockedBox<[Int]>([])
    let early = LockedBox(0)
    let countdown = Countdown(deadlines.count)
    // The timer thread is held (in an action due now) until every timer is
    // in: on a loaded machine scheduling may take longer than 20 ms, and a
    // deadline that passed before a smaller one was added fires first.
    let held = ConditionLock()
    held.lock()
    timers.schedule(after: .zero) { held.withLock {} }
    for (index, deadline) in deadlines.enumerated() {
      timers.schedule(deadline: deadline) {
        if MonotonicTime.now() < deadline { early.mutex.withLock { $0 += 1 } }
        fired.mutex.withLock { $0.append(index) }
        countdown.tick()
      }
    }
    held.unlock()
    await countdown.wait()
    let expected = deadlines.indices.sorted { (deadlines[$0], $0) < (deadlines[$1], $1) }
    #expect(fired.mutex.withLock { $0 } == expected)
    #expect(early.mutex.withLock { $0 } == 0)
    #expect(timers.pendingCount == 0)
  }

  @Test func cancelledTimersNeverFire() async {
    let timers = Timers(name: "test-timers")
    let fired = LockedBox(0)
    // Deadlines 2 s ahead leave time to cancel on a loaded machine.
    let base = MonotonicTime.now() + 2_000_000_000
    let handles = (0..<1000).map { index in
      timers.schedule(deadline: base + UInt64(index % 50) * 1_000_000) {
        fired.mutex.withLock { $0 += 1 }
      }
    }
    #expect(timers.pendingCount == 1000)
    for handle in handles { #expect(timers.cancel(handle)) }
    for handle in handles.prefix(10) { #expect(!timers.cancel(handle)) }
    #expect(timers.pendingCount == 0)
    // A later timer fires after every cancelled deadline passed; none of them ran.
    let countdown = Countdown(1)
    timers.schedule(deadline: base + 80_000_000) { countdown.tick() }
    await countdown.wait()
    #expect(fired.mutex.withLock { $0 } == 0)
  }

  @Test func manyTimersEachFireOnce() async {
    let timers = Timers(name: "test-timers")
    let count = 10_000
    let fired = LockedBox([Int](repeating: 0, count: count))
    let countdown = Countdown(count)
    var generator = SplitMix64(seed: 11)
    for index in 0..<count {
      timers.schedule(after: .microseconds(Int64(generator.next() % 100_000))) {
        fired.mutex.withLock { $0[index] += 1 }
        countdown.tick()
      }
    }
    await countdown.wait()
    #expect(fired.mutex.withLock { $0.allSatisfy { $0 == 1 } })
    #expect(timers.pendingCount == 0)
  }

  @Test func sleepLastsAtLeastItsDuration() async throws {
    let timers = Timers(name: "test-timers")
    let start = ContinuousClock.now
    try await timers.sleep(for: .milliseconds(30))
    #expect(ContinuousClock.now - start >= .milliseconds(30))
    try await timers.sleep(for: .zero)
    try await timers.sleep(for: .milliseconds(-5))
  }

  @Test func cancelledSleepThrowsAtOnceAndRemovesItsTimer() async {
    let timers = Timers(name: "test-timers")
    let started = Countdown(1)
    let sleeper = Task {
      // The timer exists once pendingCount says so; started tells the test
      // the task is running.
      started.tick()
      try await timers.sleep(for: .seconds(600))
    }
    await started.wait()
    let start = ContinuousClock.now
    sleeper.cancel()
    let result = await sleeper.result
    #expect(ContinuousClock.now - start < .seconds(5))
    #expect(throws: CancellationError.self) { try result.get() }
    #expect(timers.pendingCount == 0)
  }

  @Test func sleepInACancelledTaskThrowsWithoutScheduling() async {
    let timers = Timers(name: "test-timers")
    let task = Task {
      withUnsafeCurrentTask { $0?.cancel() }
      try await timers.sleep(for: .seconds(600))
    }
    await #expect(throws: CancellationError.self) { try await task.value }
    #expect(timers.pendingCount == 0)
  }

  @Test func anOperationPastItsDeadlineIsEndedByTheExpiry() async {
    let timers = Timers(name: "test-deadline")
    let expired = Countdown(1)
    let ended = LockedBox(false)
    let start = ContinuousClock.now
    // The operation waits for a signal only the expiry gives.
    let expire: @Sendable () async -> Void = { expired.tick() }
    await timers.withDeadline(.milliseconds(50), onExpiry: expire) {
      await expired.wait()
      ended.mutex.withLock { $0 = true }
    }
    #expect(ended.mutex.withLock { $0 })
    #expect(ContinuousClock.now - start >= .milliseconds(50))
    #expect(timers.pendingCount == 0)
  }

  @Test func anOperationThatEndsFirstCancelsItsDeadline() async throws {
    let timers = Timers(name: "test-deadline")
    let expiries = LockedBox(0)
    let count: @Sendable () async -> Void = { expiries.mutex.withLock { $0 += 1 } }
    let value = try await timers.withDeadline(.seconds(600), onExpiry: count) {
      () throws -> Int in 42
    }
    #expect(value == 42)
    #expect(timers.pendingCount == 0)
    struct Failed: Error {}
    await #expect(throws: Failed.self) {
      try await timers.withDeadline(.seconds(600), onExpiry: count) { throw Failed() }
    }
    #expect(timers.pendingCount == 0)
    #expect(expiries.mutex.withLock { $0 } == 0)
  }

  @Test func theOperationRunsInTheCallersIsolation() async {
    actor Counter {
      var value = 0
      func bump(_ timers: Timers) async {
        let nothing: @Sendable () async -> Void = {}
        await timers.withDeadline(.seconds(600), onExpiry: nothing) {
          value += 1  // actor state, no hop: the closure is isolated to self
          await Task.yield()
          value += 1
        }
      }
    }
    let counter = Counter()
    await counter.bump(Timers(name: "test-deadline"))
    #expect(await counter.value == 2)
  }
}
