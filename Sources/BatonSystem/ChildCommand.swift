import CBatonShims
import FoundationEssentials

#if canImport(Glibc)
  import Glibc
#endif

/// A program the user configured, run to its end or its timeout: the
/// folders' `accept-command` and `after-command` (baton.conf(5)); or
/// started and left to run (`launch`: the `open-command`). `run` is blocking:
/// call `run` only on a thread we own (it waits in `poll(2)` on the child's
/// pidfd, so it wakes exactly when the child exits or the time is up).
///
/// The program gets the agent's environment plus `environment`, standard
/// input from /dev/null, an empty signal mask and a process group of its
/// own; at the timeout the whole group gets SIGKILL. Never a shell, unless
/// the user's command line names one.
public enum ChildCommand {
  /// How a run ended.
  public enum Outcome: Sendable, Equatable, CustomStringConvertible {
    /// It exited with this status (0: success).
    case exited(Int32)
    /// A signal ended it.
    case signalled(Int32)
    /// It was still running at the timeout, and was killed.
    case timedOut(Duration)
    /// It could not be started (no such program, not executable, ...).
    case notStarted(Errno)

    public var description: String {
      switch self {
      case .exited(let status): "exited with status \(status)"
      case .signalled(let signal): "was ended by signal \(signal)"
      case .timedOut(let limit): "was still running after \(limit) and was killed"
      case .notStarted(let error): "could not be started: \(error)"
      }
    }
  }

  /// Runs `arguments` (the program, found in PATH unless it names a path,
  /// then its arguments) and waits for it, at most `timeout`.
  public static func run(
    _ arguments: [String], environment extra: [String: String], timeout: Duration
  ) -> Outcome {
    let pid: pid_t
    switch spawn(arguments, extra) {
    case .success(let started): pid = started
    case .failure(let error): return .notStarted(error)
    }
    let exited = waitForExit(pid, timeout: timeout)
    if !exited { _ = kill(-pid, SIGKILL) }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) == -1, Errno.current == .interrupted {}
    if !exited { return .timedOut(timeout) }
    // WIFEXITED / WEXITSTATUS / WTERMSIG, which Swift cannot import (macros).
    if status & 0x7f == 0 { return .exited((status >> 8) & 0xff) }
    return .signalled(status & 0x7f)
  }

  /// Starts `arguments` as `run` does, without waiting for it or bounding
  /// its time: the folders' `open-command`, an editor that may stay open as
  /// long as the user works. A thread of its own (`baton-opener`) waits for
  /// it, so that it leaves no zombie. Returns why it could not be started,
  /// or nil.
  public static func launch(_ arguments: [String], environment extra: [String: String])
    -> Errno?
  {
    switch spawn(arguments, extra) {
    case .failure(let error):
      return error
    case .success(let pid):
      OwnedThread.start(name: "baton-opener") {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1, Errno.current == .interrupted {}
      }
      return nil
    }
  }

  private static func spawn(_ arguments: [String], _ extra: [String: String]) -> Result<
    pid_t, Errno
  > {
    guard let program = arguments.first else { return .failure(Errno(rawValue: EINVAL)) }
    var environment = ProcessInfo.processInfo.environment
    for (name, value) in extra { environment[name] = value }
    let argv = arguments.map { strdup($0) }
    let envp = environment.map { strdup("\($0.key)=\($0.value)") }
    defer {
      for p in argv { free(p) }
      for p in envp { free(p) }
    }
    var pid: pid_t = 0
    let error = (argv + [nil]).withUnsafeBufferPointer { a in
      (envp + [nil]).withUnsafeBufferPointer { e in
        baton_spawn(program, a.baseAddress, e.baseAddress, &pid)
      }
    }
    guard error == 0 else { return .failure(Errno(rawValue: error)) }
    return .success(pid)
  }

  /// Whether `pid` exited within `timeout`: polls its pidfd.
  private static func waitForExit(_ pid: pid_t, timeout: Duration) -> Bool {
    let raw = baton_pidfd_open(pid)
    guard raw >= 0 else {
      // No pidfd (a kernel before 5.3): wait without a bound rather than
      // guess; the child is ours, and waitpid reaps it.
      return true
    }
    let fd = FileDescriptor(rawValue: raw)
    defer { fd.closeIgnoringErrors() }
    let deadline = ContinuousClock.now + timeout
    while true {
      let left = ContinuousClock.now.duration(to: deadline)
      guard left > .zero else { return false }
      let ms = Int32(clamping: left.wholeMilliseconds + 1)
      guard let ready = try? Socket.poll([(fd, Int16(POLLIN))], timeoutMilliseconds: ms) else {
        return true
      }
      if !ready.isEmpty { return true }
    }
  }
}
