import Synchronization
import Testing

@testable import BatonAgent
@testable import BatonRadio

/// The controller supervisor over fake hosts, with its waits recorded
/// instead of slept and a made-up clock: which first failures are fatal,
/// and the back-off between reopenings.
@Suite struct ControllerSupervisorTests {
  struct Refused: Error, Equatable { var retry: Bool }

  /// What a supervisor did: the delays it waited, the hosts it served.
  final class Record: Sendable {
    let delays = Mutex<[Duration]>([])
    let served = Mutex<[FakeRadioHost]>([])
  }

  /// A supervisor whose opens go through `open` and whose waits are recorded;
  /// the `stopAfter`th wait cancels the run.
  func supervisor(
    _ record: Record, stopAfter: Int, now: @escaping @Sendable () -> ContinuousClock.Instant = {
      .now
    },
    open: @escaping @Sendable () async throws -> any RadioHost
  ) -> ControllerSupervisor {
    var supervisor = ControllerSupervisor(
      spec: "fake", open: open, mayRetry: { ($0 as? Refused)?.retry ?? false })
    supervisor.sleep = { delay in
      let count = record.delays.withLock {
        $0.append(delay)
        return $0.count
      }
      if count >= stopAfter { withUnsafeCurrentTask { $0?.cancel() } }
    }
    supervisor.now = now
    return supervisor
  }

  /// Runs `supervisor` in a task of its own: the last wait cancels that
  /// task, not the test's.
  func run(
    _ supervisor: ControllerSupervisor,
    serve: @escaping @Sendable (any RadioHost) async -> String
  ) async throws {
    try await Task { try await supervisor.run(serve: serve) }.value
  }

  @Test func aFirstOpenThatCannotSucceedIsFatal() async {
    let record = Record()
    let supervisor = supervisor(record, stopAfter: 1) { throw Refused(retry: false) }
    await #expect(throws: AgentError.self) {
      try await run(supervisor) { _ in "served" }
    }
    #expect(record.delays.withLock { $0 }.isEmpty)
  }

  @Test func aFirstOpenWhoseBringUpFailedIsRetried() async throws {
    let record = Record()
    let opens = Mutex(0)
    let supervisor = supervisor(record, stopAfter: 3) {
      let n = opens.withLock {
        $0 += 1
        return $0
      }
      if n <= 2 { throw Refused(retry: true) }
      return FakeRadioHost()
    }
    try await run(supervisor) { host in
      record.served.withLock { $0.append(host as! FakeRadioHost) }
      return "lost"
    }
    #expect(record.delays.withLock { $0 } == [.seconds(1), .seconds(2), .seconds(5)])
    #expect(record.served.withLock { $0.count } == 1)
  }

  @Test func aControllerLostAgainAndAgainIsReopenedEverMoreSlowly() async throws {
    let record = Record()
    let supervisor = supervisor(record, stopAfter: 7) { FakeRadioHost() }
    try await run(supervisor) { host in
      record.served.withLock { $0.append(host as! FakeRadioHost) }
      return "lost"
    }
    #expect(
      record.delays.withLock { $0 } == [
        .seconds(1), .seconds(2), .seconds(5), .seconds(10), .seconds(30), .seconds(30),
        .seconds(30),
      ])
    // A fresh host at every open; and once opened, a failed open is retried.
    let served = record.served.withLock { $0 }
    #expect(served.count == 7)
    #expect(Set(served.map { ObjectIdentifier($0) }).count == 7)
  }

  @Test func aControllerThatRanAWhileStartsTheBackOffOver() async throws {
    let record = Record()
    // Each serve takes 1 s on the made-up clock, the third a whole minute.
    let clock = LockedBox(ContinuousClock.now)
    let supervisor = supervisor(record, stopAfter: 5, now: { clock.mutex.withLock { $0 } }) {
      FakeRadioHost()
    }
    try await run(supervisor) { _ in
      let served = record.served.withLock { $0.count }
      record.served.withLock { $0.append(FakeRadioHost()) }
      clock.mutex.withLock {
        $0 += served == 2 ? ControllerSupervisor.steadyRun + .seconds(1) : .seconds(1)
      }
      return "lost"
    }
    #expect(
      record.delays.withLock { $0 } == [
        .seconds(1), .seconds(2), .seconds(1), .seconds(2), .seconds(5),
      ])
  }

  @Test func aLostFirstOpenAfterOneSuccessIsRetriedNotFatal() async throws {
    let record = Record()
    let opens = Mutex(0)
    let supervisor = supervisor(record, stopAfter: 3) {
      let n = opens.withLock {
        $0 += 1
        return $0
      }
      if n > 1 { throw Refused(retry: false) }
      return FakeRadioHost()
    }
    try await run(supervisor) { _ in "lost" }
    #expect(record.delays.withLock { $0 } == [.seconds(1), .seconds(2), .seconds(5)])
  }
}
