import Foundation
import Synchronization
import Testing

@testable import BatonSystem

/// Voluntary plus involuntary context switches of this process's threads
/// whose name starts with `prefix`.
private func contextSwitches(ofThreadsNamed prefix: String) -> Int {
  let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
  var total = 0
  for tid in tasks {
    let comm = (try? String(contentsOfFile: "/proc/self/task/\(tid)/comm", encoding: .utf8)) ?? ""
    guard comm.hasPrefix(prefix),
      let status = try? String(contentsOfFile: "/proc/self/task/\(tid)/status", encoding: .utf8)
    else { continue }
    for line in status.split(separator: "\n") where line.contains("ctxt_switches") {
      total += Int(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) ?? 0
    }
  }
  return total
}

/// Blocks each caller until two have arrived.
private final class Rendezvous: @unchecked Sendable {
  private let lock = ConditionLock()
  private var count = 0
  var arrived: Int { lock.withLock { count } }
  func arrive() {
    lock.withLock {
      count += 1
      lock.broadcast()
      while count < 2 { lock.wait() }
    }
  }
}

@Suite struct PoolExecutorTests {
  @Test func oneThreadRunsJobsInOrder() async {
    let pool = PoolExecutor(threads: 1, name: "test-fifo", timers: Timers(name: "test-timers"))
    let order = LockedBox<[Int]>([])
    let tasks = (0..<500).map { index in
      Task(executorPreference: pool) { order.mutex.withLock { $0.append(index) } }
    }
    for task in tasks { await task.value }
    #expect(order.mutex.withLock { $0 } == Array(0..<500))
  }

  @Test func jobsRunOnThePoolsThreads() async {
    let pool = PoolExecutor(threads: 2, name: "test-own", timers: Timers(name: "test-timers"))
    let names = await withTaskGroup(of: String.self, returning: Set<String>.self) { group in
      for _ in 0..<50 { group.addTask(executorPreference: pool) { Threads.currentName } }
      return await group.reduce(into: Set<String>()) { $0.insert($1) }
    }
    #expect(!names.isEmpty)
    #expect(names.allSatisfy { $0.hasPrefix("test-own-") })
  }

  @Test func twoThreadsRunJobsAtTheSameTime() async {
    // Each job blocks until the other has started: only two threads that
    // really run concurrently let both finish.
    let pool = PoolExecutor(threads: 2, name: "test-pair", timers: Timers(name: "test-timers"))
    let meeting = Rendezvous()
    let first = Task(executorPreference: pool) { meeting.arrive() }
    let second = Task(executorPreference: pool) { meeting.arrive() }
    await first.value
    await second.value
    #expect(meeting.arrived == 2)
  }

  @Test func idleThreadsDoNotWake() async throws {
    let pool = PoolExecutor(threads: 2, name: "test-idle", timers: Timers(name: "test-idle-t"))
    await Task(executorPreference: pool) {}.value
    // Both threads waiting for work (a thread counts itself idle just before
    // it blocks, so the first window lets the last one fall asleep).
    while pool.idleThreads < 2 { await Task.yield() }
    try await Task.sleep(for: .milliseconds(100))
    let before = contextSwitches(ofThreadsNamed: "test-idle")
    #expect(before > 0)  // the threads exist and ran
    // A measurement window, not synchronisation: nothing is queued, so the
    // pool and its timer thread must stay asleep throughout.
    try await Task.sleep(for: .milliseconds(300))
    #expect(contextSwitches(ofThreadsNamed: "test-idle") == before)
  }
}
