import Synchronization

/// Builds the agent core that `baton agent` runs.
///
/// THE SEAM: the handoff agent core (Agent/HandoffAgent.swift) replaces the
/// body of this function. Until then it returns `IdleAgentCore`, which
/// watches nothing, talks to no controller and idles until cancelled, so
/// that the daemon shell (signals, control socket, sd_notify, reload) can be
/// built and tested on its own.
public func makeAgentCore(configuration: AgentConfiguration, key: GroupKey, hciLog: String?)
  throws -> any AgentCore
{
  IdleAgentCore(configuration: configuration)
}

/// A placeholder core: reports its configuration in `status()`, accepts
/// reloads, refuses `send`, and otherwise sleeps without waking up until
/// its task is cancelled.
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
