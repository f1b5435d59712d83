import BatonAgent
import BatonHandoff
import BatonSystem
import FoundationEssentials

#if canImport(Glibc)
  import Glibc
#endif

/// `baton status`, `baton send`, `baton deletions`, `baton trash`,
/// `baton restore`, `baton devices` and `baton pair`: clients of the agent's
/// control socket (`baton continue` too: ContinueCommand.swift).
enum ControlCommand {
  static let socketSpec = OptionSpec(long: "socket", takesArgument: true)
  static let helpSpec = OptionSpec(long: "help", short: "h")

  static func status(_ arguments: [String]) -> Int32 {
    var exit = ExitStatus.success
    guard
      let parsed = BatonCommand.parse(
        arguments, [OptionSpec(long: "json"), OptionSpec(long: "watch"), socketSpec, helpSpec],
        command: "status", usage: Usage.status, help: Usage.statusHelp, exitStatus: &exit)
    else { return exit }
    let path = AgentCommand.socketPath(parsed, BatonPaths())
    if parsed.has("--watch") {
      guard !parsed.has("--json") else {
        return BatonCommand.usageError(
          "status: --watch shows the transfers as text; leave out --json (or --watch)",
          Usage.status)
      }
      return watch(path)
    }
    guard let response = request(.status, path, exitStatus: &exit) else { return exit }
    guard let status = response.status else {
      Console.error("the agent sent no status")
      return ExitStatus.failure
    }
    if parsed.has("--json") {
      Console.out(String(decoding: ControlCoding.encode(status), as: UTF8.self) + "\n")
    } else {
      Console.out(StatusFormatter(now: Date()).format(status))
    }
    return ExitStatus.success
  }

  /// How often `baton status --watch` asks the agent.
  static let watchInterval = 1

  /// `baton status --watch`: the transfers running, again every
  /// `watchInterval` seconds until none is (or SIGINT). On a terminal the
  /// lines are redrawn in place; otherwise each update is printed as plain
  /// lines, one per peer.
  static func watch(_ path: String) -> Int32 {
    var exit = ExitStatus.success
    let terminal = Console.outIsTerminal
    var drawn = 0
    while true {
      guard let response = request(.status, path, exitStatus: &exit) else { return exit }
      let transfers = response.status?.transfers ?? []
      var text = ""
      if terminal && drawn > 0 { text += "\u{1B}[\(drawn)A\u{1B}[J" }
      guard !transfers.isEmpty else {
        Console.out(text + "no transfer running\n")
        return ExitStatus.success
      }
      let lines = transfers.map(StatusFormatter.transferLine)
      drawn = lines.count
      Console.out(text + lines.map { $0 + "\n" }.joined())
      sleepThread(for: .seconds(watchInterval))
    }
  }

  static func send(_ arguments: [String]) -> Int32 {
    var exit = ExitStatus.success
    guard
      let parsed = BatonCommand.parse(
        arguments, [socketSpec, helpSpec], command: "send", usage: Usage.send,
        help: Usage.sendHelp, operands: 1...1, exitStatus: &exit)
    else { return exit }
    let paths = BatonPaths()
    let path = AgentCommand.socketPath(parsed, paths)
    // No agent: say so (exit 3) before looking at the file, as baton(1) says.
    do {
      try ControlClient.probe(socketPath: path)
    } catch {
      if case .notRunning = error {
        Console.error(error.description)
        return ExitStatus.notRunning
      }
    }
    guard let file = paths.absolute(parsed.operands[0]) else {
      Console.error("\(parsed.operands[0]): unknown user")
      return ExitStatus.failure
    }
    var info = stat()
    guard stat(file, &info) == 0 else {
      Console.error("\(parsed.operands[0]): \(Errno.current)")
      return ExitStatus.failure
    }
    guard info.st_mode & S_IFMT == S_IFREG else {
      Console.error("\(parsed.operands[0]): not a regular file")
      return ExitStatus.failure
    }
    guard let response = request(.send(file), path, exitStatus: &exit) else { return exit }
    Console.out((response.message?.escapedForDisplay ?? "sent \(file)") + "\n")
    return ExitStatus.success
  }

  static func deletions(_ arguments: [String]) -> Int32 {
    var exit = ExitStatus.success
    guard
      let parsed = BatonCommand.parse(
        arguments, [OptionSpec(long: "json"), socketSpec, helpSpec], command: "deletions",
        usage: Usage.deletions, help: Usage.deletionsHelp, operands: 0...1, exitStatus: &exit)
    else { return exit }
    var action = DeletionAction.list
    if let word = parsed.operands.first {
      guard let given = DeletionAction(rawValue: word), given != .list else {
        return BatonCommand.usageError(
          "deletions: unknown action '\(word)'; expected apply or reject", Usage.deletions)
      }
      action = given
    }
    let path = AgentCommand.socketPath(parsed, BatonPaths())
    guard let response = request(.deletions(action), path, exitStatus: &exit) else { return exit }
    let held = response.deletions ?? []
    if parsed.has("--json") {
      Console.out(String(decoding: ControlCoding.encode(response), as: UTF8.self) + "\n")
      return ExitStatus.success
    }
    var lines: [String] = []
    if let message = response.message { lines.append(message.escapedForDisplay) }
    if held.isEmpty {
      if action == .list { lines.append("no deletions held") }
    } else {
      let formatter = StatusFormatter(now: Date())
      lines.append("\(held.count) deletions held:")
      for d in held {
        let side = d.peer.map { "deleted on \($0.escapedForDisplay)" } ?? "deleted here"
        lines.append(
          "  \(formatter.timestamp(d.since))  \(d.activityType.escapedForDisplay)"
            + "  \(d.path.escapedForDisplay)  \(side)")
      }
      lines.append("'baton deletions apply' makes them, 'baton deletions reject' undoes them")
    }
    Console.out(lines.joined(separator: "\n") + "\n")
    return ExitStatus.success
  }

  static func trash(_ arguments: [String]) -> Int32 {
    var exit = ExitStatus.success
    guard
      let parsed = BatonCommand.parse(
        arguments, [OptionSpec(long: "json"), socketSpec, helpSpec], command: "trash",
        usage: Usage.trash, help: Usage.trashHelp, exitStatus: &exit)
    else { return exit }
    let path = AgentCommand.socketPath(parsed, BatonPaths())
    guard let response = request(.trash, path, exitStatus: &exit) else { return exit }
    if parsed.has("--json") {
      Console.out(String(decoding: ControlCoding.encode(response), as: UTF8.self) + "\n")
      return ExitStatus.success
    }
    let versions = response.trash ?? []
    guard !versions.isEmpty else {
      Console.out("the trash is empty\n")
      return ExitStatus.success
    }
    let total = versions.reduce(0) { $0 &+ $1.size }
    let count = versions.count == 1 ? "1 version" : "\(versions.count) versions"
    var lines = ["\(count) in the trash, \(total) bytes:"]
    let width = versions.map { String($0.size).count }.max() ?? 1
    for v in versions {
      let size = String(repeating: " ", count: max(0, width - String(v.size).count)) + "\(v.size)"
      let reason = v.reason == "deleted" ? "deleted    " : "overwritten"
      lines.append(
        "  \(v.day.escapedForDisplay)  \(size) bytes  \(reason)  \(v.path.escapedForDisplay)")
    }
    lines.append("'baton restore FILE [DAY]' puts the newest version of FILE (of DAY) back")
    Console.out(lines.joined(separator: "\n") + "\n")
    return ExitStatus.success
  }

  static func restore(_ arguments: [String]) -> Int32 {
    var exit = ExitStatus.success
    guard
      let parsed = BatonCommand.parse(
        arguments, [socketSpec, helpSpec], command: "restore", usage: Usage.restore,
        help: Usage.restoreHelp, operands: 1...2, exitStatus: &exit)
    else { return exit }
    var day: String?
    if parsed.operands.count == 2 {
      let given = parsed.operands[1]
      let bytes = Array(given.utf8)
      guard
        bytes.count == 10,
        bytes.enumerated().allSatisfy({ i, b in
          i == 4 || i == 7 ? b == UInt8(ascii: "-") : (b >= 0x30 && b <= 0x39)
        })
      else {
        return BatonCommand.usageError(
          "restore: '\(given)' is not a day; expected yyyy-mm-dd, as 'baton trash' shows",
          Usage.restore)
      }
      day = given
    }
    let paths = BatonPaths()
    guard let file = paths.absolute(parsed.operands[0]) else {
      Console.error("\(parsed.operands[0]): unknown user")
      return ExitStatus.failure
    }
    let path = AgentCommand.socketPath(parsed, paths)
    guard let response = request(.restore(file, day: day), path, exitStatus: &exit) else {
      return exit
    }
    Console.out((response.message?.escapedForDisplay ?? "restored \(file)") + "\n")
    return ExitStatus.success
  }

  static func devices(_ arguments: [String]) -> Int32 {
    var exit = ExitStatus.success
    guard
      let parsed = BatonCommand.parse(
        arguments, [OptionSpec(long: "json"), socketSpec, helpSpec], command: "devices",
        usage: Usage.devices, help: Usage.devicesHelp, operands: 0...2, exitStatus: &exit)
    else { return exit }
    var remove: String?
    switch parsed.operands.count {
    case 0: break
    case 2 where parsed.operands[0] == "remove": remove = parsed.operands[1]
    default:
      return BatonCommand.usageError(
        "devices: expected nothing or 'remove NAME', not '\(parsed.operands.joined(separator: " "))'",
        Usage.devices)
    }
    let path = AgentCommand.socketPath(parsed, BatonPaths())
    guard let response = request(.devices(remove: remove), path, exitStatus: &exit) else {
      return exit
    }
    if parsed.has("--json") {
      Console.out(String(decoding: ControlCoding.encode(response), as: UTF8.self) + "\n")
      return ExitStatus.success
    }
    var lines: [String] = []
    if let message = response.message { lines.append(message.escapedForDisplay) }
    let devices = response.devices ?? []
    let width = devices.map { $0.name.escapedForDisplay.count }.max() ?? 4
    for d in devices {
      let name = d.name.escapedForDisplay
      let state: String
      if d.thisDevice {
        state = "this device"
      } else if !d.member {
        state = "removed" + (d.removedBy.map { " by \($0)" } ?? "")
      } else if d.linked {
        state = "linked (in range)"
      } else if let seen = d.lastSeen {
        state = "last seen " + StatusFormatter(now: Date()).ago(seen)
      } else {
        state = "not seen yet"
      }
      lines.append(
        "  \(name)\(String(repeating: " ", count: max(0, width - name.count)))  \(d.id)"
          + "  \(d.fingerprint)  \(state)")
    }
    Console.out(lines.joined(separator: "\n") + "\n")
    return ExitStatus.success
  }

  /// How long `baton pair` waits for the agent: a member's code lives 5
  /// minutes, then its attempt may take 5 messages of 20 s each; a new
  /// device looks for the member 30 s, then pairs.
  static let memberPairingWait = 300 + 120
  static let newcomerPairingWait = 180

  static func pair(_ arguments: [String]) -> Int32 {
    var exit = ExitStatus.success
    guard
      let parsed = BatonCommand.parse(
        arguments, [socketSpec, helpSpec], command: "pair", usage: Usage.pair,
        help: Usage.pairHelp, operands: 0...1, exitStatus: &exit)
    else { return exit }
    let path = AgentCommand.socketPath(parsed, BatonPaths())
    if let code = parsed.operands.first {
      guard
        let response = request(
          .pair(code: code), path, timeoutSeconds: newcomerPairingWait, exitStatus: &exit)
      else { return exit }
      Console.out(lines(response.message ?? "paired"))
      return ExitStatus.success
    }
    guard let shown = request(.pair(), path, exitStatus: &exit) else { return exit }
    Console.out(lines((shown.message ?? shown.code ?? "") + "\nwaiting for the new device..."))
    guard
      let ended = request(
        .pair(wait: true), path, timeoutSeconds: memberPairingWait, exitStatus: &exit)
    else { return exit }
    Console.out(lines(ended.message ?? "paired"))
    return ExitStatus.success
  }

  /// The agent's text, each line escaped for the terminal.
  private static func lines(_ text: String) -> String {
    text.split(separator: "\n").map { String($0).escapedForDisplay + "\n" }.joined()
  }

  /// Sends a request; on failure prints why and sets the exit status.
  static func request(
    _ request: ControlRequest, _ path: String, timeoutSeconds: Int = 15, exitStatus: inout Int32
  )
    -> ControlResponse?
  {
    do {
      let response = try ControlClient.send(
        request, socketPath: path, timeoutSeconds: timeoutSeconds)
      guard response.ok else {
        Console.error(response.error?.escapedForDisplay ?? "the agent refused the request")
        exitStatus = ExitStatus.failure
        return nil
      }
      return response
    } catch {
      Console.error(error.description)
      if case .notRunning = error {
        exitStatus = ExitStatus.notRunning
      } else {
        exitStatus = ExitStatus.failure
      }
      return nil
    }
  }
}

/// The human summary printed by `baton status`.
public struct StatusFormatter: Sendable {
  public var now: Date

  public init(now: Date) { self.now = now }

  public func format(_ status: AgentStatus) -> String {
    var lines: [String] = []
    let handedOver = status.handedOver ?? []
    let transfers = status.transfers ?? []
    lines.append("agent: \(status.name)" + (status.address.map { " (address \($0))" } ?? ""))
    if let scanning = status.scanning { lines.append("scanning: \(scanning)") }
    lines.append("folders:")
    for folder in status.folders {
      lines.append(
        "  \(folder.name.escapedForDisplay)  \(folder.path.escapedForDisplay)"
          + "  \(folder.activityType.escapedForDisplay)")
    }
    if status.folders.isEmpty { lines.append("  (none)") }
    lines.append("peers in range:")
    for peer in status.peers {
      let rssi = peer.rssi.map { "  RSSI \($0) dBm" } ?? ""
      lines.append(
        "  \(peer.name.escapedForDisplay)  \(peer.address.escapedForDisplay)"
          + "  link \(peer.link ?? "none")  last seen \(ago(peer.lastSeen))\(rssi)")
      if let note = handedOver.first(where: { $0.peer == peer.name }) {
        lines.append("    on \(describe(note))")
      }
      if let transfer = transfers.first(where: { $0.peer == peer.name }) {
        lines.append("    receiving: \(transfer.snapshot.summary)")
      }
    }
    if status.peers.isEmpty { lines.append("  (none)") }
    // A transfer from a peer the radio does not list by that name.
    let listed = Set(status.peers.map(\.name))
    for transfer in transfers where !listed.contains(transfer.peer) {
      lines.append("  " + Self.transferLine(transfer))
    }
    // Peers out of range whose activity arrived earlier: still continuable.
    let inRange = Set(status.peers.map(\.name))
    var away: Set<String> = []
    for note in handedOver where !inRange.contains(note.peer) && away.insert(note.peer).inserted {
      lines.append("  \(note.peer.escapedForDisplay) (out of range) was on \(describe(note))")
    }
    if let activity = status.currentActivity {
      lines.append(
        "current activity: \(activity.type.escapedForDisplay)"
          + " \"\(activity.title.escapedForDisplay)\" (\(activity.path.escapedForDisplay),"
          + " version \(activity.version))")
    } else {
      lines.append("current activity: none")
    }
    let c = status.counters
    lines.append(
      "activities: \(c.sent) sent, \(c.received) received, \(c.declined) declined, \(c.failed) failed"
        + " (\(c.conflicts) conflicts); \(c.sessions) sessions"
        + (c.trashed + c.renamed > 0 ? "; \(c.trashed) trashed, \(c.renamed) renamed" : ""))
    if let held = status.heldDeletions, held > 0 {
      lines.append(
        "deletions held: \(held), not sent or applied; 'baton deletions' lists them, then"
          + " 'apply' or 'reject'")
    }
    if !status.lastFailures.isEmpty {
      lines.append("last failures:")
      for failure in status.lastFailures {
        lines.append(
          "  \(timestamp(failure.time))  \(failure.activityType.escapedForDisplay)"
            + "  \(failure.peer.escapedForDisplay)  \(failure.reason.escapedForDisplay)")
      }
    }
    return lines.joined(separator: "\n") + "\n"
  }

  /// `from PEER: 1200 of 10000 notes, 1.2 of 9.8 MB, 85 kB/s, 1m40s left`,
  /// as the agent logs it.
  static func transferLine(_ transfer: AgentStatus.Transfer) -> String {
    "from \(transfer.peer.escapedForDisplay): \(transfer.snapshot.summary)"
  }

  /// A peer's current activity: `"Title" (/abs/path.md), 5 s ago`.
  func describe(_ note: AgentStatus.HandedOver) -> String {
    "\"\(note.title.escapedForDisplay)\" (\((note.file ?? note.path).escapedForDisplay)),"
      + " handed over \(ago(note.time))"
  }

  /// "5 s ago", "3 min ago", "2 h ago".
  func ago(_ date: Date) -> String {
    let seconds = max(0, Int(now.timeIntervalSince(date)))
    if seconds < 120 { return "\(seconds) s ago" }
    if seconds < 7200 { return "\(seconds / 60) min ago" }
    return "\(seconds / 3600) h ago"
  }

  func timestamp(_ date: Date) -> String {
    var time = time_t(date.timeIntervalSince1970)
    var parts = tm()
    localtime_r(&time, &parts)
    var buffer = [CChar](repeating: 0, count: 32)
    let count = strftime(&buffer, buffer.count, "%Y-%m-%d %H:%M:%S", &parts)
    return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }
}
