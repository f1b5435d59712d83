import BatonAgent
import BatonHandoff
import Foundation
import Testing

/// Issue 28: `baton status --watch` against a stand-in agent whose answers
/// show a transfer going on, then none: on a terminal (a pty) the lines
/// are redrawn in place, and the watch ends when no transfer runs.
@Suite(.serialized) struct StatusWatchTests {
  /// A status answer with one transfer from laptop, `done` of 3 notes
  /// (nil: no transfer).
  func answer(_ done: Int?) -> String {
    var status = AgentStatus(name: "desk")
    if let done {
      status.transfers = [
        AgentStatus.Transfer(
          TransferProgress.Snapshot(
            peerName: "laptop", notesDone: done, notesTotal: 3, bytesDone: done * 100,
            bytesTotal: 300, totalsFinal: true, bytesPerSecond: nil, secondsLeft: nil))
      ]
    }
    return String(
      decoding: ControlCoding.encode(ControlResponse(ok: true, status: status)), as: UTF8.self)
  }

  /// A stand-in agent answering the requests in turn with `answers` (the
  /// last one again after that); connections closed without a request
  /// (the client's probe) are passed over.
  func fakeAgent(at socketPath: String, answers: [String]) throws -> ChildProcess {
    let script = """
      import socket, sys
      answers = sys.argv[2:]
      s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
      s.bind(sys.argv[1]); s.listen(4)
      print("ready", flush=True)
      n = 0
      while True:
          c, _ = s.accept()
          if c.recv(65536):
              c.sendall(answers[min(n, len(answers) - 1)].encode() + b"\\n")
              n += 1
          c.close()
      """
    let child = try ChildProcess("/usr/bin/python3", ["-c", script, socketPath] + answers)
    #expect(child.readLine() == "ready")
    return child
  }

  /// SIGKILL: the stand-in may have inherited a blocked SIGTERM from the
  /// test process.
  func end(_ agent: ChildProcess) {
    agent.signal(SIGKILL)
    agent.wait()
  }

  @Test func onATerminalTheLinesAreRedrawnUntilNoTransferRuns() throws {
    let sandbox = try BatonSandbox()
    let socketPath = sandbox.path + "/fake.sock"
    let agent = try fakeAgent(at: socketPath, answers: [answer(1), answer(2), answer(nil)])
    defer { end(agent) }
    let out = sandbox.path + "/watch.out"
    // Python's pty.spawn runs baton on a pseudo-terminal and copies what it prints.
    let watch = try ChildProcess(
      "/usr/bin/python3",
      [
        "-c", "import pty, sys; sys.exit(pty.spawn(sys.argv[1:]) >> 8)",
        TestEnvironment.batonBinary, "status", "--watch", "--socket", socketPath,
      ], captureStdout: false, stdoutPath: out, environment: sandbox.environment)
    #expect(watch.wait() == 0)
    let printed = ((try? String(contentsOfFile: out, encoding: .utf8)) ?? "")
      .replacingOccurrences(of: "\r", with: "")
    let up = "\u{1B}[1A\u{1B}[J"
    #expect(
      printed
        == "from laptop: 1 of 3 notes, 100 of 300 B\n" + up
        + "from laptop: 2 of 3 notes, 200 of 300 B\n" + up + "no transfer running\n",
      "\(printed.debugDescription)")
  }

  @Test func withNoTransferItSaysSoAndEnds() throws {
    let sandbox = try BatonSandbox()
    let socketPath = sandbox.path + "/fake.sock"
    let agent = try fakeAgent(at: socketPath, answers: [answer(nil)])
    defer { end(agent) }
    let result = try sandbox.run(["status", "--watch", "--socket", socketPath])
    #expect(result.status == 0)
    #expect(result.stdout == "no transfer running\n", "\(result)")
  }
}
