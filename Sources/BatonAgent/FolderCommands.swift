import BatonHandoff
import BatonSystem
import FoundationEssentials
import Synchronization

/// A folder's `accept-command` and `after-command` (baton.conf(5)), as the
/// engine's gate for that folder: Handoff's `willContinueUserActivity`
/// (asked before an incoming note is written; a non-zero exit declines it)
/// and `restoreUserActivityState` (told after).
///
/// The engine asks without waiting: the first time a note (path and
/// content) is met, the answer is `pending` and the command is queued; it
/// runs on a thread of its own (at most `maxRunning` at once), under the
/// folder's `command-timeout`. The answer is kept, and `decided` is called,
/// after which the engine applies the notes it kept waiting. A
/// command that hangs holds back only the note it was asked about, until
/// its timeout declines it.
final class FolderCommands: IncomingGate {
  private struct Key: Hashable {
    var path: String
    var hash: ContentHash
  }

  private enum Job {
    case ask(IncomingActivity)
    case tell(IncomingActivity)
  }

  private struct State {
    /// Answers given (accept or decline), by note content.
    var decisions: [Key: IncomingDecision] = [:]
    /// Asked and not answered yet (queued or running).
    var asking: Set<Key> = []
    var queue: [Job] = []
    var running = 0
    var decided: (@Sendable () -> Void)?
    var warned: Set<String> = []
  }

  /// Commands run at once, per folder.
  static let maxRunning = 2
  /// Commands waiting their turn; past it a note stays pending (it is
  /// asked about when offered again) and a written note's after-command is
  /// skipped, with a warning.
  static let maxQueued = 256
  /// Answers kept; past it they are forgotten, and asked again.
  static let maxDecisions = 4096

  let folderName: String
  let root: String
  let accept: [String]
  let after: [String]
  let timeout: Duration
  private let state = Mutex(State())
  private let log = Logger(label: "commands")

  /// The folder's commands, or nil when it has neither.
  init?(_ folder: FolderConfiguration) {
    guard !folder.acceptCommand.isEmpty || !folder.afterCommand.isEmpty else { return nil }
    folderName = folder.name
    root = folder.path
    accept = folder.acceptCommand
    after = folder.afterCommand
    timeout = folder.commandTimeout
  }

  /// Sets what to call when answers arrived (the engine's `incomingDecided`).
  func onDecided(_ body: @escaping @Sendable () -> Void) {
    state.withLock { $0.decided = body }
  }

  func decision(for activity: IncomingActivity) -> IncomingDecision {
    guard !accept.isEmpty else { return .accept }
    let key = Key(path: activity.path, hash: activity.hash)
    let (answer, start) = state.withLock { s -> (IncomingDecision, Bool) in
      if let known = s.decisions[key] { return (known, false) }
      guard !s.asking.contains(key) else { return (.pending, false) }
      guard s.queue.count < Self.maxQueued else { return (.pending, false) }
      s.asking.insert(key)
      s.queue.append(.ask(activity))
      return (.pending, Self.claimRunner(&s))
    }
    if start { startRunner() }
    return answer
  }

  func written(_ activity: IncomingActivity) {
    guard !after.isEmpty else { return }
    let (start, full) = state.withLock { s -> (Bool, Bool) in
      guard s.queue.count < Self.maxQueued else { return (false, true) }
      s.queue.append(.tell(activity))
      return (Self.claimRunner(&s), false)
    }
    if full {
      warnOnce(
        "after-command of [folder \(folderName)]: more than \(Self.maxQueued) waiting; not run for \(activity.path)"
      )
    }
    if start { startRunner() }
  }

  /// Takes a runner slot if one is free and work waits (lock held).
  private static func claimRunner(_ s: inout State) -> Bool {
    guard s.running < maxRunning, !s.queue.isEmpty else { return false }
    s.running += 1
    return true
  }

  private func startRunner() {
    OwnedThread.start(name: "baton-command") { [self] in
      while let job = nextJob() { run(job) }
    }
  }

  /// The next job, or nil (and the slot given back) when none waits.
  private func nextJob() -> Job? {
    state.withLock { s in
      guard !s.queue.isEmpty else {
        s.running -= 1
        return nil
      }
      return s.queue.removeFirst()
    }
  }

  private func run(_ job: Job) {
    switch job {
    case .ask(let activity):
      let outcome = ChildCommand.run(
        accept, environment: environment(activity), timeout: timeout)
      let answer: IncomingDecision
      switch outcome {
      case .exited(0):
        answer = .accept
      case .exited:
        answer = .decline("the accept-command of [folder \(folderName)] \(outcome)")
      case .signalled, .timedOut, .notStarted:
        warnOnce("accept-command of [folder \(folderName)] (\(accept[0])) \(outcome); the notes it was asked about are declined")
        answer = .decline("the accept-command of [folder \(folderName)] \(outcome)")
      }
      log.debug("accept-command for \(activity.path) from \(activity.peer): \(outcome)")
      let announce = state.withLock { s -> (@Sendable () -> Void)? in
        let key = Key(path: activity.path, hash: activity.hash)
        s.asking.remove(key)
        if s.decisions.count >= Self.maxDecisions { s.decisions.removeAll() }
        s.decisions[key] = answer
        // Every answer, at once: one still to come must not hold this
        // note back. Answers that come while a link resyncs cost it one
        // more resync, not one each (`HandoffLink.resyncNow`).
        return s.decided
      }
      announce?()
    case .tell(let activity):
      let outcome = ChildCommand.run(after, environment: environment(activity), timeout: timeout)
      if outcome != .exited(0) {
        warnOnce("after-command of [folder \(folderName)] (\(after[0])) \(outcome)")
      }
      log.debug("after-command for \(activity.path) from \(activity.peer): \(outcome)")
    }
  }

  /// What a command is told of the note, in its environment.
  private func environment(_ activity: IncomingActivity) -> [String: String] {
    [
      "BATON_FOLDER": folderName,
      "BATON_ACTIVITY_TYPE": activity.activityType,
      "BATON_PATH": activity.path,
      "BATON_FILE": root + "/" + activity.path,
      "BATON_PEER": activity.peer,
      "BATON_ORIGIN": activity.origin,
      "BATON_SIZE": String(activity.size),
    ]
  }

  /// Warns once per distinct message (a broken command would otherwise
  /// warn for every note), then logs at debug.
  private func warnOnce(_ message: String) {
    let first = state.withLock { $0.warned.count < 64 && $0.warned.insert(message).inserted }
    if first { log.warning(message) } else { log.debug(message) }
  }
}
