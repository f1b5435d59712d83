import Synchronization

/// Builds the agent core that `baton agent` runs: the handoff agent
/// (`HandoffAgent`), which joins the notes folders, the handoff engine and
/// the BLE host. `hciLog`, when given, overrides the configuration's.
public func makeAgentCore(configuration: AgentConfiguration, key: GroupKey, hciLog: String?)
  throws -> any AgentCore
{
  var configuration = configuration
  if let hciLog { configuration.hciLog = hciLog }
  return HandoffAgent(configuration: configuration, key: key)
}

/// A core without a radio, for testing the daemon shell on its own: reports
/// its configuration in `status()`, accepts reloads, refuses `send`, and
/// otherwise sleeps without waking up until its task is cancelled.
public final class IdleAgentCore: AgentCore {
  private let state: Mutex<AgentStatus>
  private let log = Logger(label: "agent")

  public init(configuration: AgentConfiguration) {
    state = Mutex(AgentStatus(configuration: configuration))
  }

  public func run() async throws {
    log.info("placeholder core: no controller opened, no folder watched")
    // Suspends on a continuation that only cancellation resumes: no timer,
    // no wake-ups while idle.
    let (stream, continuation) = AsyncStream<Never>.makeStream()
    await withTaskCancellationHandler {
      for await _ in stream {}
    } onCancel: {
      continuation.finish()
    }
  }

  public func reload(_ configuration: AgentConfiguration) async throws {
    state.withLock { $0 = AgentStatus(configuration: configuration) }
  }

  public func status() async -> AgentStatus { state.withLock { $0 } }

  public func send(notePath: String) async throws -> String {
    throw IdleAgentCoreError.notImplemented(path: notePath)
  }
}

enum IdleAgentCoreError: Error, CustomStringConvertible {
  case notImplemented(path: String)
  var description: String {
    switch self {
    case .notImplemented(let path):
      "cannot send \(path): this build's agent core is a placeholder without a radio"
    }
  }
}
