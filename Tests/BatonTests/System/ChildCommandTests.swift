import BatonSystem
import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// `ChildCommand`, which runs the folders' accept- and after-commands.
@Suite struct ChildCommandTests {
  @Test func reportsTheExitStatusAndPassesTheEnvironment() throws {
    let dir = try TestEnvironment.temporaryDirectory("child-command")
    defer { try? FileManager.default.removeItem(at: dir) }
    let out = dir.appendingPathComponent("out").path
    let outcome = ChildCommand.run(
      ["sh", "-c", "printf '%s' \"$BATON_TEST_VALUE\" > '\(out)'; exit 7"],
      environment: ["BATON_TEST_VALUE": "a b"], timeout: .seconds(60))
    #expect(outcome == .exited(7))
    #expect(try String(contentsOfFile: out, encoding: .utf8) == "a b")
    #expect(ChildCommand.run(["true"], environment: [:], timeout: .seconds(60)) == .exited(0))
    #expect(
      ChildCommand.run(["sh", "-c", "exit 7"], environment: [:], timeout: .seconds(60))
        == .exited(7))
  }

  @Test func aProgramThatIsMissingIsNotStarted() {
    let outcome = ChildCommand.run(
      ["/nonexistent/baton-ask"], environment: [:], timeout: .seconds(60))
    #expect(outcome == .notStarted(.noEntry), "\(outcome)")
    #expect(ChildCommand.run([], environment: [:], timeout: .seconds(1)) != .exited(0))
  }

  /// At the timeout the command and what it started are killed.
  @Test func aCommandPastItsTimeoutIsKilledWithItsChildren() async throws {
    let dir = try TestEnvironment.temporaryDirectory("child-command")
    defer { try? FileManager.default.removeItem(at: dir) }
    let pidFile = dir.appendingPathComponent("pid").path
    let outcome = ChildCommand.run(
      ["sh", "-c", "sleep 600 & echo $! > '\(pidFile)'; wait"], environment: [:],
      timeout: .milliseconds(500))
    #expect(outcome == .timedOut(.milliseconds(500)), "\(outcome)")
    let text = try String(contentsOfFile: pidFile, encoding: .utf8)
    let grandchild = try #require(Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)))
    // Gone, or a zombie waiting for whoever reaps orphans here.
    #expect(
      await eventually(10, "the grandchild killed") {
        guard let stat = try? String(contentsOfFile: "/proc/\(grandchild)/stat", encoding: .utf8)
        else { return true }
        return stat.split(separator: ")").last?.trimmingCharacters(in: .whitespaces).hasPrefix("Z")
          ?? true
      })
  }

  /// `launch` returns at once; the program runs, and is reaped when it ends.
  @Test func aLaunchedProgramRunsOnAndLeavesNoZombie() async throws {
    let dir = try TestEnvironment.temporaryDirectory("child-command")
    defer { try? FileManager.default.removeItem(at: dir) }
    let release = dir.appendingPathComponent("release").path
    let pidFile = dir.appendingPathComponent("pid").path
    // Whatever fails below, the program ends (it holds the test's output open).
    defer { _ = FileManager.default.createFile(atPath: release, contents: nil) }
    let error = ChildCommand.launch(
      ["sh", "-c", "echo $$ > '\(pidFile)'; while [ ! -e '\(release)' ]; do sleep 0.05; done", "x"],
      environment: ["BATON_FILE": "/x"])
    #expect(error == nil)
    // The shell creates the file before it writes its pid into it.
    func written() -> Int32? {
      (try? String(contentsOfFile: pidFile, encoding: .utf8)).flatMap {
        Int32($0.trimmingCharacters(in: .whitespacesAndNewlines))
      }
    }
    #expect(await eventually(10, "it started") { written() != nil })
    let pid = try #require(written())
    #expect(kill(pid, 0) == 0, "still running while nobody waits for it")
    _ = FileManager.default.createFile(atPath: release, contents: nil)
    #expect(
      await eventually(10, "reaped") {
        !FileManager.default.fileExists(atPath: "/proc/\(pid)")
      }, "a zombie stays in /proc until reaped")
    #expect(ChildCommand.launch(["/nonexistent/opener"], environment: [:]) == .noEntry)
  }
}
