import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// A running `baton agent` is not dumpable (CoreDumps, baton(1)
/// ENVIRONMENT): no core file, no same-user debugger. Seen from outside
/// the way the kernel shows it: the files in /proc/PID of a process that
/// is not dumpable belong to root, whoever runs it. So the agents run as
/// another user (65534), one as it starts and one with BATON_DUMPABLE=1,
/// which must still show its own user (the check can fail).
@Suite(.serialized) struct AgentDumpableEndToEndTests {
  static let user: uid_t = 65534

  @Test(.enabled(if: getuid() == 0, "running the agent as another user needs root"))
  func aRunningAgentIsNotDumpable() async throws {
    let radio = try SimulatedRadio(controllers: 2)
    defer { radio.stop() }
    let base = try TestEnvironment.temporaryDirectory("baton-dumpable")
    defer { try? FileManager.default.removeItem(at: base) }
    #expect(chown(base.path, Self.user, Self.user) == 0)
    chmod(base.path, 0o755)
    var agents: [(ChildProcess, String, String)] = []
    defer { for (agent, _, _) in agents { agent.stop(grace: 5) } }
    for (index, dumpable) in [false, true].enumerated() {
      let home = base.appendingPathComponent("agent\(index)").path
      for directory in ["", "/notes", "/state", "/run", "/config"] {
        #expect(mkdir(home + directory, 0o700) == 0)
        #expect(chown(home + directory, Self.user, Self.user) == 0)
      }
      var environment = ProcessInfo.processInfo.environment
      environment["XDG_RUNTIME_DIR"] = home + "/run"
      environment["XDG_CONFIG_HOME"] = home + "/config"
      environment["HOME"] = home
      environment["BATON_DUMPABLE"] = dumpable ? "1" : nil
      let socket = home + "/run/control"
      let agent = try ChildProcess(
        "/usr/bin/setpriv",
        [
          "--reuid=\(Self.user)", "--regid=\(Self.user)", "--clear-groups",
          TestEnvironment.batonBinary, "agent", "--notes", home + "/notes", "--controller",
          radio.spec(index), "--key-file", home + "/none.key", "--state-dir", home + "/state",
          "--socket", socket, "--name", "agent\(index)",
        ], captureStdout: false, stdoutPath: home + "/agent.log", stderrPath: home + "/agent.log",
        environment: environment)
      agents.append((agent, socket, home + "/agent.log"))
    }
    let logs = { agents.map { (try? String(contentsOfFile: $0.2, encoding: .utf8)) ?? "" } }
    // The socket is made after the prctl, before the controller is opened.
    for (agent, socket, _) in agents {
      #expect(
        await eventually(30, "\(socket)") { access(socket, F_OK) == 0 && !agent.hasExited },
        "\(logs())")
    }
    for (index, (agent, _, _)) in agents.enumerated() {
      var info = stat()
      #expect(stat("/proc/\(agent.pid)/status", &info) == 0)
      let status = (try? String(contentsOfFile: "/proc/\(agent.pid)/status", encoding: .utf8)) ?? ""
      #expect(status.contains("\nUid:\t\(Self.user)\t"), "\(status)")
      #expect(info.st_uid == (index == 0 ? 0 : Self.user), "agent \(index): \(logs())")
    }
  }
}
