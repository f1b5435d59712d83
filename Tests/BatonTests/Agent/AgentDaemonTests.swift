import Foundation
import Synchronization
import Testing

@testable import BatonAgent
@testable import BatonCLI
@testable import BatonHandoff
@testable import BatonSystem

#if canImport(Glibc)
  import Glibc
#endif

/// A core that records what the daemon asks of it.
final class FakeCore: AgentCore {
  struct State {
    var reloads: [AgentConfiguration] = []
    /// The key handed with each reload (the one the reload closure read).
    var reloadKeys: [GroupKey] = []
    var sends: [String] = []
    var running = false
    var stoppedCleanly = false
  }
  let state = Mutex(State())
  let snapshot: AgentStatus
  /// Ignore cancellation (to test the stop deadline).
  let stubborn: Bool
  /// Fail on its own after starting.
  let failure: String?

  init(status: AgentStatus, stubborn: Bool = false, failure: String? = nil) {
    snapshot = status
    self.stubborn = stubborn
    self.failure = failure
  }

  struct Failure: Error, CustomStringConvertible { var description: String }

  func run() async throws {
    state.withLock { $0.running = true }
    if let failure { throw Failure(description: failure) }
    if stubborn {
      // Sleeps through cancellation for a long time.
      let deadline = ContinuousClock.now + .seconds(30)
      while ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(50)) }
      return
    }
    while !Task.isCancelled { try? await Task.sleep(for: .seconds(60)) }
    state.withLock { $0.stoppedCleanly = true }
  }

  func reload(_ configuration: AgentConfiguration, key: GroupKey?) async throws {
    state.withLock {
      $0.reloads.append(configuration)
      if let key { $0.reloadKeys.append(key) }
    }
  }

  func status() async -> AgentStatus { snapshot }

  func send(notePath: String) async throws -> String {
    state.withLock { $0.sends.append(notePath) }
    if notePath.hasSuffix("refused.md") { throw Failure(description: "no such note in any folder") }
    return "sent \(notePath) as org.baton.note"
  }
}

/// A daemon running in this process with a fake core and fake signals.
struct DaemonHarness {
  let directory: URL
  let socketPath: String
  let core: FakeCore
  let signals: AsyncStream<UnixSignal>.Continuation
  let finished: Task<Int32, Never>
  let reloadResult: ReloadResult

  /// What the daemon's reload closure returns next.
  final class ReloadResult: Sendable {
    let value = Mutex<Result<AgentConfiguration, ConfigurationError>>(
      .success(DaemonHarness.configuration))
    /// How many times the daemon read the configuration again (SIGHUPs handled).
    let reads = Mutex(0)
    func withLock<T>(_ body: (inout Result<AgentConfiguration, ConfigurationError>) -> T) -> T {
      value.withLock { body(&$0) }
    }
    func read() -> Result<AgentConfiguration, ConfigurationError> {
      reads.withLock { $0 += 1 }
      return value.withLock { $0 }
    }
  }

  static let key = GroupKey(bytes: Array(repeating: 7, count: 32))!

  static let configuration = AgentConfiguration(
    name: "desk", controller: .exclusive(.tcp(host: "127.0.0.1", port: 9)), keyFile: "/k",
    stateDirectory: "/s", folders: [FolderConfiguration(name: "notes", path: "/n")])

  /// `stopTimeout`: the daemon's deadline for the core to stop. Long by
  /// default, so that a loaded machine (the end-to-end suites beside these)
  /// never makes a clean stop look like a missed deadline; the test of the
  /// deadline passes its own.
  init(core: FakeCore, stopTimeout: Duration = .seconds(60)) throws {
    directory = try TestEnvironment.temporaryDirectory("baton-daemon")
    socketPath = directory.appendingPathComponent("run/control").path
    self.core = core
    let (stream, continuation) = AsyncStream<UnixSignal>.makeStream()
    signals = continuation
    let reloadResult = ReloadResult()
    self.reloadResult = reloadResult
    let daemon = AgentDaemon(
      core: core,
      settings: AgentDaemon.Settings(
        socketPath: socketPath, configuration: DaemonHarness.configuration,
        stopTimeout: stopTimeout),
      signals: stream,
      reloadConfiguration: { (try reloadResult.read().get(), DaemonHarness.key) })
    finished = Task { await daemon.run() }
  }

  /// Waits until the control socket answers.
  func waitUntilListening() async throws {
    let path = socketPath
    let listening = await eventually(60, "the control socket answers") {
      await onThread { () -> Bool in
        guard let socket = try? UnixSocket.connect(path: path) else { return false }
        socket.close()
        return true
      }
    }
    if !listening { Issue.record("the daemon did not open \(socketPath)") }
  }

  /// A request from a thread of its own: blocking socket calls must not
  /// tie up the few threads of Swift's cooperative pool that the daemon
  /// under test needs.
  func request(_ request: ControlRequest) async throws -> ControlResponse {
    let path = socketPath
    return try await onThread {
      try ControlClient.send(request, socketPath: path, timeoutSeconds: 20)
    }
  }

  func remove() { try? FileManager.default.removeItem(at: directory) }
}

/// Runs blocking work on a new thread and waits for it without blocking a
/// thread of the cooperative pool.
func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
  try await withCheckedThrowingContinuation { continuation in
    Thread { continuation.resume(with: Result { try body() }) }.start()
  }
}

func onThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
  await withCheckedContinuation { continuation in
    Thread { continuation.resume(returning: body()) }.start()
  }
}

@Suite struct AgentDaemonTests {
  static let richStatus = AgentStatus(
    name: "desk", address: "C0:11:22:33:44:55",
    folders: [AgentStatus.Folder(name: "notes", path: "/n", activityType: "org.baton.note")],
    peers: [
      AgentStatus.Peer(
        name: "laptop", address: "D1:22:33:44:55:66",
        lastSeen: Date(timeIntervalSince1970: 1_700_000_000), rssi: -50)
    ],
    currentActivity: AgentStatus.Activity(
      type: "org.baton.note", title: "Groceries", path: "groceries.md", version: "3f2a9c1b"),
    counters: AgentStatus.Counters(
      sent: 4, received: 3, declined: 2, failed: 1, conflicts: 1, sessions: 5),
    lastFailures: [
      AgentStatus.Failure(
        time: Date(timeIntervalSince1970: 1_700_000_100), activityType: "org.baton.note",
        peer: "laptop", reason: "the peer went out of range")
    ])

  @Test func answersStatusAndSendOverTheSocket() async throws {
    let harness = try DaemonHarness(core: FakeCore(status: Self.richStatus))
    defer { harness.remove() }
    try await harness.waitUntilListening()

    var info = stat()
    #expect(stat(harness.socketPath, &info) == 0)
    #expect(info.st_mode & 0o777 == 0o600)
    #expect(info.st_mode & S_IFMT == S_IFSOCK)

    let status = try await harness.request(.status)
    #expect(status.ok && status.status == Self.richStatus)

    let sent = try await harness.request(.send("/n/a.md"))
    #expect(sent == ControlResponse(ok: true, message: "sent /n/a.md as org.baton.note"))
    let refused = try await harness.request(.send("/n/refused.md"))
    #expect(refused == ControlResponse(ok: false, error: "no such note in any folder"))
    let relative = try await harness.request(.send("a.md"))
    #expect(!relative.ok)
    #expect(harness.core.state.withLock { $0.sends } == ["/n/a.md", "/n/refused.md"])
    let held = try await harness.request(.deletions(.list))
    #expect(held == ControlResponse(ok: true, deletions: []))
    #expect(ControlRequest.deletions(.reject).action == .reject)
    // trash and restore: a core with no trash lists nothing and restores
    // nothing; a relative path is refused before the core sees it.
    #expect(try await harness.request(.trash) == ControlResponse(ok: true, trash: []))
    let restored = try await harness.request(.restore("/n/a.md", day: "2026-12-02"))
    #expect(restored == ControlResponse(ok: false, error: "no version of /n/a.md in the trash"))
    let relativeRestore = try await harness.request(.restore("a.md", day: nil))
    #expect(relativeRestore.error == "restore needs the note's absolute path")

    // A malformed request gets an error answer, and the daemon goes on.
    let path = harness.socketPath
    let line = try await onThread { () throws -> [UInt8]? in
      let socket = try UnixSocket.connect(path: path)
      defer { socket.close() }
      try socket.writeAll(Array("{\"command\":\"dance\"}\n".utf8))
      return try socket.readLine()
    }
    let answer = try ControlCoding.decode(ControlResponse.self, from: try #require(line))
    #expect(!answer.ok && answer.error?.hasPrefix("bad request") == true)

    harness.signals.yield(.terminate)
    #expect(await harness.finished.value == 0)
    #expect(harness.core.state.withLock { $0.stoppedCleanly })
    #expect(access(harness.socketPath, F_OK) != 0)
  }

  @Test func reloadsAGoodConfigurationAndKeepsTheOldOneOnABadOne() async throws {
    let harness = try DaemonHarness(core: FakeCore(status: Self.richStatus))
    defer { harness.remove() }
    try await harness.waitUntilListening()

    var next = DaemonHarness.configuration
    next.folders.append(FolderConfiguration(name: "todo", path: "/t", activityType: "org.x.todo"))
    harness.reloadResult.withLock { $0 = .success(next) }
    harness.signals.yield(.hangUp)
    #expect(
      await eventually(10, "the reload") { harness.core.state.withLock { $0.reloads.count } == 1 })
    #expect(harness.core.state.withLock { $0.reloads } == [next])
    #expect(harness.core.state.withLock { $0.reloadKeys } == [DaemonHarness.key])

    harness.reloadResult.withLock {
      $0 = .failure(
        ConfigurationError([ConfigurationProblem(file: "f", line: 3, key: "name", message: "bad")]))
    }
    harness.signals.yield(.hangUp)
    // The second SIGHUP was handled (the configuration was read again), and
    // the bad configuration did not reach the core.
    #expect(
      await eventually(10, "the second read") { harness.reloadResult.reads.withLock { $0 } == 2 })
    #expect(try await harness.request(.status).ok)
    #expect(harness.core.state.withLock { $0.reloads.count } == 1)

    harness.signals.yield(.interrupt)
    #expect(await harness.finished.value == 0)
  }

  @Test func givesUpOnACoreThatDoesNotStop() async throws {
    let harness = try DaemonHarness(
      core: FakeCore(status: Self.richStatus, stubborn: true), stopTimeout: .milliseconds(200))
    defer { harness.remove() }
    try await harness.waitUntilListening()
    let start = ContinuousClock.now
    harness.signals.yield(.terminate)
    #expect(await harness.finished.value == 1)
    // The stubborn core would take 30 s; the daemon gives up after its
    // 0.2 s deadline. (The bound is loose: other tests may keep the
    // cooperative pool busy; bench-idle.sh measures real stop times.)
    #expect(ContinuousClock.now - start < .seconds(15))
  }

  @Test func exitsOneWhenTheCoreFails() async throws {
    let harness = try DaemonHarness(
      core: FakeCore(status: Self.richStatus, failure: "controller gone"))
    defer { harness.remove() }
    #expect(await harness.finished.value == 1)
  }

  @Test func refusesToRunTwiceAndReplacesAStaleSocket() async throws {
    let harness = try DaemonHarness(core: FakeCore(status: Self.richStatus))
    defer { harness.remove() }
    try await harness.waitUntilListening()
    #expect(throws: ControlServerError.alreadyRunning(path: harness.socketPath)) {
      try ControlServer(path: harness.socketPath)
    }
    harness.signals.yield(.terminate)
    #expect(await harness.finished.value == 0)

    // A socket file nobody listens on (an agent killed with SIGKILL).
    let stale = try UnixSocket.listen(path: harness.socketPath)
    stale.close()
    #expect(access(harness.socketPath, F_OK) == 0)
    await #expect(throws: ControlClientError.notRunning(path: harness.socketPath, stale: true)) {
      try await harness.request(.status)
    }
    let server = try ControlServer(path: harness.socketPath)
    server.close()
    #expect(access(harness.socketPath, F_OK) != 0)
    await #expect(throws: ControlClientError.notRunning(path: harness.socketPath, stale: false)) {
      try await harness.request(.status)
    }
  }
}

@Suite struct StatusFormatterTests {
  @Test func summarisesEverything() {
    let formatter = StatusFormatter(now: Date(timeIntervalSince1970: 1_700_000_012))
    let text = formatter.format(AgentDaemonTests.richStatus)
    let lines = text.split(separator: "\n").map(String.init)
    #expect(lines[0] == "agent: desk (address C0:11:22:33:44:55)")
    #expect(lines[2] == "  notes  /n  org.baton.note")
    #expect(lines[4] == "  laptop  D1:22:33:44:55:66  link none  last seen 12 s ago  RSSI -50 dBm")
    #expect(
      lines[5] == "current activity: org.baton.note \"Groceries\" (groceries.md, version 3f2a9c1b)")
    #expect(
      lines[6] == "activities: 4 sent, 3 received, 2 declined, 1 failed (1 conflicts); 5 sessions")
    #expect(lines[7] == "last failures:")
    #expect(lines[8].hasSuffix("  org.baton.note  laptop  the peer went out of range"))
    let empty = formatter.format(AgentStatus(name: "x"))
    #expect(empty.contains("peers in range:\n  (none)\n"))
    #expect(empty.contains("current activity: none\n"))
    #expect(!empty.contains("deletions held"))
    var holding = AgentStatus(name: "x")
    holding.heldDeletions = 15
    #expect(
      formatter.format(holding).contains(
        "deletions held: 15, not sent or applied; 'baton deletions' lists them, then 'apply' or"
          + " 'reject'\n"))
  }
}
