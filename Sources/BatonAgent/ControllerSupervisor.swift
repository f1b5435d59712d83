import BatonSystem
import BatonRadio

/// Keeps a controller open for the radio: opens the `RadioHost`, hands it
/// to `serve` until it is lost, and opens it again with back-off
/// (`reopenDelays`), until cancelled. The first open failing is fatal (the
/// message says what to do) unless the controller was reached and only its
/// bring-up failed (`mayRetry`, `RadioHostOpener.mayRetry`); that, and a
/// controller lost later, is retried. A controller that fails again right
/// after opening must not make us spin: the back-off grows unless the last
/// one ran for `steadyRun`.
struct ControllerSupervisor: Sendable {
  /// Back-off between attempts to reopen a lost controller.
  static let reopenDelays: [Duration] = [
    .seconds(1), .seconds(2), .seconds(5), .seconds(10), .seconds(30),
  ]
  /// How long a controller must have served for the back-off to start over.
  static let steadyRun: Duration = .seconds(60)

  /// The controller's spec, for the log and the fatal error.
  let spec: String
  /// Opens the host (a fresh one at every call).
  let open: @Sendable () async throws -> any RadioHost
  /// Whether a failed first open is worth another try.
  let mayRetry: @Sendable (any Error) -> Bool
  /// Waits out a back-off (`Timers`; a test's own).
  var sleep: @Sendable (Duration) async -> Void = { try? await Timers.shared.sleep(for: $0) }
  /// The time (a test's own).
  var now: @Sendable () -> ContinuousClock.Instant = { .now }

  private let log = Logger(label: "radio")

  init(
    spec: String, open: @escaping @Sendable () async throws -> any RadioHost,
    mayRetry: @escaping @Sendable (any Error) -> Bool
  ) {
    self.spec = spec
    self.open = open
    self.mayRetry = mayRetry
  }

  /// The `failures`th delay in a row (the last one repeats).
  static func delay(after failures: Int) -> Duration {
    reopenDelays[min(max(failures, 0), reopenDelays.count - 1)]
  }

  /// Opens the controller and runs `serve` on it until cancelled; `serve`
  /// returns when the host is lost (or the task is cancelled), saying why.
  /// Throws `AgentError.controller` when the first open fails for good.
  func run(serve: (any RadioHost) async -> String) async throws {
    // (failures counts both failed opens and controllers lost soon after.)
    var failures = 0
    var everOpened = false
    while !Task.isCancelled {
      let host: any RadioHost
      do {
        host = try await open()
      } catch {
        if Task.isCancelled { return }
        if !everOpened && !mayRetry(error) {
          throw AgentError.controller(spec: spec, reason: "\(error)")
        }
        let delay = Self.delay(after: failures)
        failures += 1
        log.warning(
          "cannot \(everOpened ? "reopen" : "bring up") the controller \(spec): \(error); trying again in \(delay)"
        )
        await sleep(delay)
        continue
      }
      everOpened = true
      let started = now()
      let reason = await serve(host)
      if Task.isCancelled { return }
      if now() - started > Self.steadyRun { failures = 0 }
      let delay = Self.delay(after: failures)
      failures += 1
      log.error("lost the controller \(spec): \(reason); reopening it in \(delay)")
      await sleep(delay)
    }
  }
}
