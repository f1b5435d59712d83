import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// Issue 26, pairing, with real `baton` processes on one simulated radio
/// and the real commands: a third machine with no key file pairs with the
/// code a member shows and gets every note; a wrong code is refused and
/// spends the code, so the next attempt needs a new one. Every wait is on
/// a file, a log line or a command's end.
@Suite(.serialized) struct PairingEndToEndTests {
  /// `baton pair` on `member`, in the background: its output file.
  private final class ShownCode {
    let process: ChildProcess
    let output: String
    init(_ member: AgentProcess, _ tag: String) throws {
      output = member.stateDirectory.deletingLastPathComponent()
        .appendingPathComponent("pair-\(tag).out").path
      process = try ChildProcess(
        TestEnvironment.batonBinary, ["pair"], captureStdout: false, stdoutPath: output,
        stderrPath: output, environment: member.environment)
    }
    var text: String { (try? String(contentsOfFile: output, encoding: .utf8)) ?? "" }
    /// The code from "baton pair NN-NNN-NNN" in the output, once shown.
    var code: String? {
      guard let range = text.range(of: #"baton pair \d\d-\d\d\d-\d\d\d"#, options: .regularExpression)
      else { return nil }
      return String(text[range].dropFirst("baton pair ".count))
    }
  }

  /// The code with the same slot and another secret.
  private func wrong(_ code: String) -> String {
    let digits = code.filter(\.isNumber).map { Int(String($0))! }
    var secret = digits[2...].reduce(0) { $0 * 10 + $1 }
    secret = (secret + 1) % 1_000_000
    let s = String(format: "%06d", secret)
    return "\(digits[0])\(digits[1])-\(s.prefix(3))-\(s.suffix(3))"
  }

  @Test func aNewMachinePairsWithACodeAndGetsEveryNote() async throws {
    let group = try AgentGroup(count: 2, controllers: 3)
    let (a, b) = (group.agents[0], group.agents[1])
    let c = try group.makeAgent(
      2, name: "agentC", keyPath: group.base.appendingPathComponent("no.key").path)
    group.agents.append(c)
    try a.start()
    try b.start()
    let notes = ["a.md": "A\nfrom A\n", "b.md": "B\nfrom B\n"]
    try a.save("a.md", notes["a.md"]!)
    try b.save("b.md", notes["b.md"]!)
    try c.save("c.md", "C\nwritten on C before it paired\n")
    #expect(
      await eventually(90, "A and B have both notes") {
        [a, b].allSatisfy { agent in notes.allSatisfy { agent.read($0.key) == Array($0.value.utf8) } }
      }, "\(group.logs)")
    try c.start()
    #expect(
      await eventually(30, "C waits to pair") { c.log.contains("not in a group yet") },
      "\(c.log)")

    // A wrong code is refused, on both sides, and spends the member's code.
    let first = try ShownCode(a, "1")
    #expect(await eventually(30, "A shows a code") { first.code != nil }, "\(first.text)")
    let shown = first.code!
    let (refused, said) = try c.run(["pair", wrong(shown)])
    #expect(refused == 1 && said.contains("the code was wrong"), "\(said)\n\(group.logs)")
    #expect(first.process.wait() == 1, "\(first.text)")
    #expect(first.text.contains("the code was wrong"), "\(first.text)")
    // The right code, too late: A no longer offers it.
    let (again, saidAgain) = try c.run(["pair", shown])
    #expect(again == 1 && saidAgain.contains("no member showing a code"), "\(saidAgain)")
    #expect(c.read("a.md") == nil)

    // A new code: C joins, with no key file, and gets every note.
    let second = try ShownCode(a, "2")
    #expect(await eventually(30, "A shows a new code") { second.code != nil }, "\(second.text)")
    let typed = ContinuousClock.now
    let (paired, saidPaired) = try c.run(["pair", second.code!])
    #expect(paired == 0 && saidPaired.contains("paired with agentA"), "\(saidPaired)\n\(group.logs)")
    #expect(second.process.wait() == 0, "\(second.text)")
    #expect(second.text.contains("paired with agentC"), "\(second.text)")
    #expect(
      await eventually(90, "C has every note") {
        notes.allSatisfy { c.read($0.key) == Array($0.value.utf8) }
      }, "\(group.logs)")
    let elapsed = ContinuousClock.now - typed
    print("pairing: from 'baton pair CODE' to every note on C: \(elapsed)")
    #expect(!FileManager.default.fileExists(atPath: c.keyPath))
    // B learns of C from A, and takes C's notes.
    #expect(
      await eventually(90, "B has C's note") {
        b.read("c.md") == Array("C\nwritten on C before it paired\n".utf8)
      }, "\(group.logs)")
    let (_, listing) = try b.run(["devices"])
    #expect(listing.contains("  agentC "), "\(listing)")
    // Pairing again from C (a member now) is refused with what to do.
    let (twice, saidTwice) = try c.run(["pair", second.code!])
    #expect(twice == 1 && saidTwice.contains("in a group already"), "\(saidTwice)")
  }
}
