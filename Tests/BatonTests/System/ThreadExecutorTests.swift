import Foundation
import Testing

@testable import BatonSystem

/// An actor whose jobs run on a thread of ours.
private actor OnOwnThread {
  let executor: ThreadExecutor
  nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
  private var log: [Int] = []

  init(name: String) { executor = ThreadExecutor(name: name) }

  func threadName() -> String { Threads.currentName }
  func isOnItsThread() -> Bool { executor.isCurrent }
  func append(_ value: Int) { log.append(value) }
  var values: [Int] { log }
}

private struct Refused: Error, Equatable {}

@Suite struct ThreadExecutorTests {
  @Test func anActorOnItRunsOnItsThread() async {
    let actor = OnOwnThread(name: "test-own-actor")
    #expect(await actor.threadName() == "test-own-actor")
    #expect(await actor.isOnItsThread())
    #expect(!actor.executor.isCurrent)
  }

  @Test func jobsAndClosuresRunInOrder() async {
    let actor = OnOwnThread(name: "test-order")
    for value in 0..<200 { await actor.append(value) }
    let order = LockedBox<[Int]>([])
    for value in 0..<200 { actor.executor.execute { order.mutex.withLock { $0.append(value) } } }
    // `run` queues behind the closures: when it returns, all of them ran.
    let name = await actor.executor.run { Threads.currentName }
    #expect(name == "test-order")
    #expect(order.mutex.withLock { $0 } == Array(0..<200))
    #expect(await actor.values == Array(0..<200))
  }

  @Test func runReturnsTheResultOrTheError() async throws {
    let executor = ThreadExecutor(name: "test-run")
    #expect(try await executor.run { () throws(Refused) in 42 } == 42)
    await #expect(throws: Refused()) {
      try await executor.run { () throws(Refused) -> Int in throw Refused() }
    }
  }

  @Test func theThreadEndsWithItsExecutor() async throws {
    #expect(try await ThreadExecutor.run(name: "test-once") { Threads.currentName } == "test-once")
    var actor: OnOwnThread? = OnOwnThread(name: "test-ends")
    #expect(await actor?.threadName() == "test-ends")
    #expect(Threads.count(named: "test-ends") == 1)
    actor = nil
    #expect(await eventually(20, "the thread ended") { Threads.count(named: "test-ends") == 0 })
    #expect(
      await eventually(20, "the one-shot thread ended") { Threads.count(named: "test-once") == 0 })
  }

  @Test func anUnusedExecutorStartsNoThread() {
    let executor = ThreadExecutor(name: "test-unused")
    #expect(Threads.count(named: "test-unused") == 0)
    withExtendedLifetime(executor) {}
  }
}
