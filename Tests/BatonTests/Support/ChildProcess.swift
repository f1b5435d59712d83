import BatonSystem
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// A child process started with posix_spawn, for tests: the simulated radio,
/// `baton` itself, test peers. Foundation's `Process` is avoided because its
/// Linux implementation blocked reading a pipe in these tests.
final class ChildProcess: @unchecked Sendable {
  let pid: pid_t
  /// Write end of the child's stdin (closing it tells the radio to stop).
  let stdinFD: Int32
  /// Read end of the child's stdout, when captured.
  let stdoutFD: Int32?
  private var exitStatus: Int32?

  /// Starts `path` with `arguments`; stderr is inherited unless `stderrPath`.
  init(
    _ path: String, _ arguments: [String], captureStdout: Bool = true,
    stdoutPath: String? = nil, stderrPath: String? = nil, environment: [String: String]? = nil
  ) throws {
    var inPipe: [Int32] = [0, 0]
    var outPipe: [Int32] = [0, 0]
    guard pipe(&inPipe) == 0, pipe(&outPipe) == 0 else {
      throw Errno.current
    }
    for fd in inPipe + outPipe { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_adddup2(&actions, inPipe[0], 0)
    if let stdoutPath {
      posix_spawn_file_actions_addopen(
        &actions, 1, stdoutPath, O_WRONLY | O_CREAT | O_APPEND, 0o644)
    } else if captureStdout {
      posix_spawn_file_actions_adddup2(&actions, outPipe[1], 1)
    }
    if let stderrPath {
      posix_spawn_file_actions_addopen(
        &actions, 2, stderrPath, O_WRONLY | O_CREAT | O_APPEND, 0o644)
    }
    let argv = ([path] + arguments).map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    let env =
      (environment ?? ProcessInfo.processInfo.environment).map { strdup("\($0.key)=\($0.value)") }
      + [nil]
    defer { env.forEach { free($0) } }
    var child: pid_t = 0
    let rc = posix_spawn(&child, path, &actions, nil, argv, env)
    close(inPipe[0])
    close(outPipe[1])
    guard rc == 0 else {
      close(inPipe[1])
      close(outPipe[0])
      throw Errno(rawValue: rc)
    }
    pid = child
    stdinFD = inPipe[1]
    if captureStdout && stdoutPath == nil {
      stdoutFD = outPipe[0]
    } else {
      close(outPipe[0])
      stdoutFD = nil
    }
  }

  /// Reads one line of the child's stdout (without the newline); nil at EOF.
  func readLine() -> String? {
    guard let fd = stdoutFD else { return nil }
    var line = [UInt8]()
    var byte: UInt8 = 0
    while true {
      let n = read(fd, &byte, 1)
      if n == 1 {
        if byte == UInt8(ascii: "\n") { return String(decoding: line, as: UTF8.self) }
        line.append(byte)
      } else if n == 0 || errno != EINTR {
        return line.isEmpty ? nil : String(decoding: line, as: UTF8.self)
      }
    }
  }

  func signal(_ sig: Int32) { kill(pid, sig) }

  /// Waits for exit; returns the wait status decoded as exit code, or
  /// 128+signal for a signalled child.
  @discardableResult
  func wait() -> Int32 {
    if let exitStatus { return exitStatus }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
    let code = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    exitStatus = code
    close(stdinFD)
    if let stdoutFD { close(stdoutFD) }
    return code
  }

  /// Non-blocking: has it exited?
  var hasExited: Bool {
    if exitStatus != nil { return true }
    var status: Int32 = 0
    if waitpid(pid, &status, WNOHANG) == pid {
      exitStatus = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
      close(stdinFD)
      if let stdoutFD { close(stdoutFD) }
      return true
    }
    return false
  }

  /// SIGTERM, then SIGKILL after `grace` seconds.
  func stop(grace: Double = 3) {
    guard !hasExited else { return }
    kill(pid, SIGTERM)
    let deadline = Date().addingTimeInterval(grace)
    while !hasExited && Date() < deadline { usleep(10_000) }
    if !hasExited {
      kill(pid, SIGKILL)
      wait()
    }
  }

  deinit { stop() }
}
