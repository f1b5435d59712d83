import BatonHandoff
import Dispatch
import FoundationEssentials
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// The exit statuses of `baton` (documented in baton(1), EXIT STATUS).
public enum ExitStatus {
  public static let success: Int32 = 0
  /// A configuration, key file or runtime error.
  public static let failure: Int32 = 1
  /// A usage error: unknown option, missing argument, wrong operands.
  public static let usage: Int32 = 2
  /// A command that asks the agent (`status`, `send`, `continue`, ...): no
  /// agent is running.
  public static let notRunning: Int32 = 3
}

/// The `baton` command line: `agent`, `check`, `keygen`, `status`, `send`,
/// `deletions`, `trash`, `restore`, `devices`, `pair`, `continue`.
/// `Sources/baton/main.swift` only calls `BatonCommand.main`.
public enum BatonCommand {
  /// `baton --version`; debian/changelog's upstream version must match it
  /// (`make deb` checks).
  public static let version = "0.1.0"

  /// What `baton --version` prints: this version and the handoff protocol
  /// version it speaks (the handshake's, PROTOCOL.md section 4).
  public static let versionLine =
    "baton \(version) (handoff protocol \(SecureChannel.handshakeVersion))\n"

  /// Options of `agent` and `check`.
  static let agentSpecs: [OptionSpec] = [
    OptionSpec(long: "config", short: "f", takesArgument: true),
    OptionSpec(long: "notes", takesArgument: true),
    OptionSpec(long: "controller", takesArgument: true),
    OptionSpec(long: "key-file", takesArgument: true),
    OptionSpec(long: "name", takesArgument: true),
    OptionSpec(long: "state-dir", takesArgument: true),
    OptionSpec(long: "hci-log", takesArgument: true),
    OptionSpec(long: "socket", takesArgument: true),
    OptionSpec(long: "verbose", short: "v"),
    OptionSpec(long: "help", short: "h"),
  ]

  /// Runs the command line `arguments` (without the program name) and
  /// returns the exit status. For `agent` it blocks the daemon signals
  /// first, so call it before any thread has been started.
  public static func main(_ arguments: [String]) -> Int32 {
    let top: ParsedOptions
    do {
      top = try OptionParser.parse(
        arguments,
        options: [OptionSpec(long: "help", short: "h"), OptionSpec(long: "version", short: "V")],
        stopAtFirstOperand: true)
    } catch {
      return usageError(error.message, Usage.top)
    }
    if top.has("--help") {
      Console.out(Usage.topHelp)
      return ExitStatus.success
    }
    if top.has("--version") {
      Console.out(versionLine)
      return ExitStatus.success
    }
    guard let command = top.operands.first else {
      return usageError("no command given", Usage.top)
    }
    let rest = Array(top.operands.dropFirst())
    switch command {
    case "agent": return AgentCommand.agent(rest)
    case "check": return AgentCommand.check(rest)
    case "keygen": return keygen(rest)
    case "status": return ControlCommand.status(rest)
    case "send": return ControlCommand.send(rest)
    case "deletions": return ControlCommand.deletions(rest)
    case "trash": return ControlCommand.trash(rest)
    case "restore": return ControlCommand.restore(rest)
    case "devices": return ControlCommand.devices(rest)
    case "pair": return ControlCommand.pair(rest)
    case "continue": return ContinueCommand.run(rest)
    case "help":
      Console.out(Usage.topHelp)
      return ExitStatus.success
    default: return usageError("unknown command '\(command)'", Usage.top)
    }
  }

  /// Prints `baton: MESSAGE` and the usage on stderr; returns 2.
  static func usageError(_ message: String, _ usage: String) -> Int32 {
    Console.err("baton: \(message)\n\(usage)")
    return ExitStatus.usage
  }

  /// Parses a subcommand's options, handling `--help` and usage errors:
  /// returns nil with `exitStatus` set when the command should stop.
  static func parse(
    _ arguments: [String], _ specs: [OptionSpec], command: String, usage: String, help: String,
    operands: ClosedRange<Int> = 0...0, exitStatus: inout Int32
  ) -> ParsedOptions? {
    let parsed: ParsedOptions
    do {
      parsed = try OptionParser.parse(arguments, options: specs, programName: "baton \(command)")
    } catch {
      exitStatus = usageError(error.message, usage)
      return nil
    }
    if parsed.has("--help") {
      Console.out(help)
      exitStatus = ExitStatus.success
      return nil
    }
    guard operands.contains(parsed.operands.count) else {
      exitStatus = usageError(
        parsed.operands.count < operands.lowerBound
          ? "\(command): missing operand"
          : "\(command): unexpected argument '\(parsed.operands[operands.upperBound])'", usage)
      return nil
    }
    return parsed
  }

  static func keygen(_ arguments: [String]) -> Int32 {
    var status = ExitStatus.success
    guard
      parse(
        arguments, [OptionSpec(long: "help", short: "h")], command: "keygen",
        usage: Usage.keygen, help: Usage.keygenHelp, exitStatus: &status) != nil
    else { return status }
    Console.out(GroupKey.generate().fileText)
    return ExitStatus.success
  }

  /// Runs async work to completion from synchronous code (the main thread
  /// waits on a semaphore; the work runs on the global executor).
  static func runBlocking(_ body: @escaping @Sendable () async -> Int32) -> Int32 {
    let result = Mutex<Int32>(ExitStatus.failure)
    let done = DispatchSemaphore(value: 0)
    Task {
      let status = await body()
      result.withLock { $0 = status }
      done.signal()
    }
    done.wait()
    return result.withLock { $0 }
  }
}
