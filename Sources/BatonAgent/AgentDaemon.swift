import BatonHandoff
import BatonSystem
import FoundationEssentials

/// Runs an `AgentCore` as a daemon, in the manner of swift-service-lifecycle:
/// the core's `run()` in a task; SIGTERM and SIGINT stop it gracefully
/// within a deadline; SIGHUP re-reads the configuration and hands a good one
/// to the core (a bad one is logged and the old one keeps running); the
/// control socket answers `baton status` and `baton send`; systemd hears
/// READY, STATUS, RELOADING and STOPPING through sd_notify.
public final class AgentDaemon: Sendable {
  /// What the daemon needs besides the core.
  public struct Settings: Sendable {
    /// The control socket's path.
    public var socketPath: String
    /// How long the core gets to stop after SIGTERM/SIGINT before the daemon
    /// gives up on it (and exits 1).
    public var stopTimeout: Duration
    /// The running configuration, for STATUS lines and reload messages.
    public var configuration: AgentConfiguration

    public init(
      socketPath: String, configuration: AgentConfiguration,
      stopTimeout: Duration = .milliseconds(1800)
    ) {
      self.socketPath = socketPath
      self.configuration = configuration
      self.stopTimeout = stopTimeout
    }
  }

  private let core: any AgentCore
  private let settings: Settings
  private let signals: AsyncStream<UnixSignal>
  private let reloadConfiguration:
    @Sendable () throws -> (configuration: AgentConfiguration, key: GroupKey?)
  private let notifier: SystemdNotifier
  private let openedServer: ControlServer?
  private let log = Logger(label: "agent")

  /// - Parameters:
  ///   - signals: the process's signals (`SignalStream.stream`); tests feed
  ///     their own.
  ///   - server: the control socket, if already opened (so that a second
  ///     agent is refused before it touches the controller); nil opens one
  ///     at `settings.socketPath`.
  ///   - reloadConfiguration: reads and validates the configuration again
  ///     (file plus command-line overrides) and reads its key file, once per
  ///     reload; its error's description is logged.
  public init(
    core: any AgentCore, settings: Settings, signals: AsyncStream<UnixSignal>,
    server: ControlServer? = nil, notifier: SystemdNotifier = SystemdNotifier(),
    reloadConfiguration:
      @escaping @Sendable () throws -> (configuration: AgentConfiguration, key: GroupKey?)
  ) {
    self.openedServer = server
    self.core = core
    self.settings = settings
    self.signals = signals
    self.notifier = notifier
    self.reloadConfiguration = reloadConfiguration
  }

  private enum Event: Sendable {
    case signal(UnixSignal)
    case coreFinished((any Error)?)
    case stopDeadline
  }

  /// Runs until stopped; returns the process exit status: 0 after a clean
  /// stop, 1 if the control socket cannot be opened, the core fails, or it
  /// does not stop in time.
  public func run() async -> Int32 {
    let server: ControlServer
    do {
      server = try openedServer ?? ControlServer(path: settings.socketPath)
    } catch {
      log.error("\(error)")
      return 1
    }
    server.start()

    let (events, eventSink) = AsyncStream<Event>.makeStream()
    let core = self.core
    let coreTask = Task {
      do {
        try await core.run()
        eventSink.yield(.coreFinished(nil))
      } catch {
        eventSink.yield(.coreFinished(error))
      }
    }
    let signalTask = Task { [signals] in
      for await signal in signals { eventSink.yield(.signal(signal)) }
    }
    let requestTask = Task { [self] in
      for await connection in server.requests {
        // One task per request, so a slow `send` does not hold up `status`.
        Task { await self.answer(connection) }
      }
    }
    defer {
      signalTask.cancel()
      requestTask.cancel()
      server.close()
    }

    var configuration = settings.configuration
    log.info(
      "started as \(configuration.name) on \(configuration.controller), \(Self.describe(configuration.folders)); control socket \(server.path)"
    )
    notifier.ready(status: Self.statusLine(configuration))

    var stopping = false
    for await event in events {
      switch event {
      case .signal(let signal) where signal == .hangUp:
        guard !stopping else { continue }
        configuration = await reload(current: configuration)
      case .signal(let signal):
        if stopping {
          log.notice("received \(signal) again; still stopping")
          continue
        }
        stopping = true
        log.info("received \(signal), stopping")
        notifier.stopping()
        server.close()
        coreTask.cancel()
        Timers.shared.schedule(after: settings.stopTimeout) { eventSink.yield(.stopDeadline) }
      case .coreFinished(let error):
        if let error, !(error is CancellationError) {
          log.error("the agent stopped: \(error)")
          return 1
        }
        if !stopping {
          log.error("the agent core returned without being asked to stop")
          return 1
        }
        log.info("stopped")
        return 0
      case .stopDeadline:
        log.error("the agent did not stop within \(settings.stopTimeout); exiting anyway")
        return 1
      }
    }
    return 1
  }

  /// Re-reads the configuration for SIGHUP; returns the one now running.
  private func reload(current: AgentConfiguration) async -> AgentConfiguration {
    log.info("received SIGHUP, reloading the configuration")
    notifier.reloading()
    let next: AgentConfiguration
    let key: GroupKey?
    do {
      (next, key) = try reloadConfiguration()
    } catch {
      for line in "\(error)".split(separator: "\n") { log.error("\(line)") }
      log.error("reload failed; the running configuration stays in force")
      notifier.ready(status: Self.statusLine(current))
      return current
    }
    do {
      try await core.reload(next, key: key)
    } catch {
      log.error(
        "the agent refused the new configuration: \(error); the running configuration stays in force"
      )
      notifier.ready(status: Self.statusLine(current))
      return current
    }
    log.info("reloaded: \(next.name) on \(next.controller), \(Self.describe(next.folders))")
    notifier.ready(status: Self.statusLine(next))
    return next
  }

  /// Answers one control request.
  private func answer(_ connection: ControlServer.Connection) async {
    switch connection.request {
    case .failure(let error):
      log.warning("control: \(error)")
      connection.reply(.failure("\(error)"))
    case .success(let request):
      switch request.command {
      case .status:
        connection.reply(ControlResponse(ok: true, status: await core.status()))
      case .send:
        guard let path = request.path, path.hasPrefix("/") else {
          connection.reply(.failure("send needs the note's absolute path"))
          return
        }
        do {
          let message = try await core.send(notePath: path)
          connection.reply(ControlResponse(ok: true, message: message))
        } catch {
          connection.reply(.failure("\(error)"))
        }
      case .deletions:
        do {
          let (message, held) = try await core.deletions(request.action ?? .list)
          connection.reply(ControlResponse(ok: true, message: message, deletions: held))
        } catch {
          connection.reply(.failure("\(error)"))
        }
      case .trash:
        do {
          connection.reply(ControlResponse(ok: true, trash: try await core.trash()))
        } catch {
          connection.reply(.failure("\(error)"))
        }
      case .restore:
        guard let path = request.path, path.hasPrefix("/") else {
          connection.reply(.failure("restore needs the note's absolute path"))
          return
        }
        do {
          let message = try await core.restore(notePath: path, day: request.day)
          connection.reply(ControlResponse(ok: true, message: message))
        } catch {
          connection.reply(.failure("\(error)"))
        }
      case .devices:
        do {
          let (message, devices) = try await core.devices(remove: request.remove)
          connection.reply(ControlResponse(ok: true, message: message, devices: devices))
        } catch {
          connection.reply(.failure("\(error)"))
        }
      case .pair:
        do {
          if request.wait == true {
            connection.reply(ControlResponse(ok: true, message: try await core.pairingResult()))
          } else {
            let (code, message) = try await core.pair(code: request.code)
            connection.reply(ControlResponse(ok: true, message: message, code: code))
          }
        } catch {
          connection.reply(.failure("\(error)"))
        }
      }
    }
  }

  static func describe(_ folders: [FolderConfiguration]) -> String {
    folders.count == 1
      ? "watching \(folders[0].path)" : "watching \(folders.count) folders"
  }

  /// The `STATUS=` line for `systemctl status`.
  static func statusLine(_ configuration: AgentConfiguration) -> String {
    "Running as \(configuration.name) on \(configuration.controller), \(describe(configuration.folders))"
  }
}
