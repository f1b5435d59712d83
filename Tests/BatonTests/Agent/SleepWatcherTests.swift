import Synchronization
import Testing

@testable import BatonAgent
@testable import BatonSystem

/// `SleepWatcher` against a stand-in logind on a private bus: it owns
/// org.freedesktop.login1 and emits PrepareForSleep as logind does, true
/// before the machine sleeps and false once it has resumed.
@Suite struct SleepWatcherTests {
  final class Count: Sendable { let value = Mutex(0) }

  @Test func aResumeIsReportedAndGoingToSleepIsNot() async throws {
    let bus = try PrivateBus()
    defer { bus.stop() }
    let logind = try bus.connect()
    defer { logind.close() }
    try await logind.requestName(SleepWatcher.service)
    let resumes = Count()
    let watcher = try await SleepWatcher.start(bus: try bus.connect()) {
      resumes.value.withLock { $0 += 1 }
    }
    defer { watcher.close() }
    func prepare(_ sleeping: Bool) async throws {
      try await logind.emitSignal(
        path: SleepWatcher.path, interface: SleepWatcher.interface, member: "PrepareForSleep",
        [.boolean(sleeping)])
    }
    try await prepare(true)
    try await prepare(false)
    #expect(await eventually(10, "the resume") { resumes.value.withLock { $0 } >= 1 })
    // Signals arrive in order: after a second resume, the count is two, so
    // the first signal (going to sleep) counted for nothing.
    try await prepare(false)
    #expect(await eventually(10, "the second resume") { resumes.value.withLock { $0 } >= 2 })
    #expect(resumes.value.withLock { $0 } == 2)
  }

  /// Only logind may say so: the same signal from another client (any
  /// local user can emit one on the system bus) starts no burst.
  @Test func theSignalFromAnotherSenderIsIgnored() async throws {
    let bus = try PrivateBus()
    defer { bus.stop() }
    let logind = try bus.connect()
    defer { logind.close() }
    try await logind.requestName(SleepWatcher.service)
    let impostor = try bus.connect()
    defer { impostor.close() }
    let resumes = Count()
    let watcher = try await SleepWatcher.start(bus: try bus.connect()) {
      resumes.value.withLock { $0 += 1 }
    }
    defer { watcher.close() }
    try await impostor.emitSignal(
      path: SleepWatcher.path, interface: SleepWatcher.interface, member: "PrepareForSleep",
      [.boolean(false)])
    try await logind.emitSignal(
      path: SleepWatcher.path, interface: SleepWatcher.interface, member: "PrepareForSleep",
      [.boolean(false)])
    #expect(await eventually(10, "logind's resume") { resumes.value.withLock { $0 } >= 1 })
    // The impostor's signal went out first: had it been taken, it would
    // almost surely have been counted by now.
    #expect(resumes.value.withLock { $0 } == 1)
  }
}
