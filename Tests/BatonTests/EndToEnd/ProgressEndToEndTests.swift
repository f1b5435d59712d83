import Foundation
import Testing

/// Issue 28 end to end: while B catches up on 10,000 notes A holds, B's
/// `baton status` shows the transfer from A part done, `baton status
/// --watch` (stdout not a terminal) prints a line per update and ends once
/// the transfer has, and at the end no transfer is shown.
@Suite(.serialized) struct ProgressEndToEndTests {
  static let count = 10_000

  static func note(_ i: Int) -> (String, [UInt8]) {
    ("d\(i % 30)/n\(i).md", Array("# Note \(i)\nsome words of note \(i) to fill a line\n".utf8))
  }

  /// The transfers in a `status --json` answer, as (peer, notes done,
  /// notes total, bytes done, bytes total).
  static func transfers(_ status: [String: Any]) -> [(String, Int, Int, Int, Int)] {
    ((status["transfers"] as? [[String: Any]]) ?? []).map {
      (
        $0["peer"] as? String ?? "", $0["notesDone"] as? Int ?? -1,
        $0["notesTotal"] as? Int ?? -1, $0["bytesDone"] as? Int ?? -1,
        $0["bytesTotal"] as? Int ?? -1
      )
    }
  }

  /// A single 1 MB note: its bytes show as they come, before the note has.
  @Test func aLargeNoteShowsItsBytesAsTheyCome() async throws {
    // The instant radio moves a megabyte in about a second, faster than a
    // `baton status` process may look. While a transfer is to be watched,
    // each of A's outgoing ACL packets is held 100 ms (order kept): its
    // host sends no more than its controller's buffers hold until their
    // packets are through, so the note crawls. The faults go off once B
    // has shown the transfer part done.
    let group = try AgentGroup(
      count: 2, faults: "delay type=acl to=controller controller=0 ms=100", faultsStartOff: true)
    let (a, b) = (group.agents[0], group.agents[1])
    var large = Array("# Large\n".utf8)
    large += (0..<(1_000_000 - large.count)).map { UInt8(97 + $0 % 26) }
    try a.save("large.md", large)
    try a.start()
    #expect(try await eventually(30, "A's agent answering") { (try? a.status()) != nil })
    #expect(await Self.switchFaults(on: true, group.radio))
    try b.start()
    var partial: (String, Int, Int, Int, Int)?
    var asked = ContinuousClock.now - .seconds(1)
    // Asked every 50 ms: the note takes a few seconds.
    let seen = await eventually(120, "B shows part of the note's bytes") {
      guard ContinuousClock.now - asked >= .milliseconds(50) else { return false }
      asked = ContinuousClock.now
      guard let status = try? b.status() else { return false }
      partial = Self.transfers(status).first {
        $0.0 == "agentA" && $0.1 == 0 && $0.3 > 0 && $0.3 < $0.4
      }
      return partial != nil || b.read("large.md") == large
    }
    #expect(seen && partial != nil, "\(group.logs.suffix(20_000))")
    if let partial { print("1 MB note, part way: \(partial)") }
    #expect(await Self.switchFaults(on: false, group.radio))
    #expect(await eventually(120, "large.md on B") { b.read("large.md") == large })
    #expect(
      await eventually(20, "B shows no transfer") {
        guard let status = try? b.status() else { return false }
        return status["transfers"] == nil
      }, "\(String(describing: try? b.status()))")

    // Linked now: a new large save is pushed, announced by nothing, and
    // shows while it comes too.
    #expect(await linked(b, to: ["agentA"]), "\(group.logs)")
    var second = Array("# Second\n".utf8)
    second += (0..<(1_000_000 - second.count)).map { UInt8(65 + $0 % 26) }
    #expect(await Self.switchFaults(on: true, group.radio))
    try a.save("second.md", second)
    partial = nil
    let pushed = await eventually(120, "B shows the pushed note's bytes") {
      guard ContinuousClock.now - asked >= .milliseconds(50) else { return false }
      asked = ContinuousClock.now
      guard let status = try? b.status() else { return false }
      partial = Self.transfers(status).first { $0.0 == "agentA" && $0.1 == 0 && $0.3 > 0 }
      return partial != nil || b.read("second.md") == second
    }
    #expect(pushed && partial != nil, "\(group.logs.suffix(20_000))")
    if let partial { print("1 MB push over the link, part way: \(partial)") }
    #expect(await Self.switchFaults(on: false, group.radio))
    #expect(await eventually(120, "second.md on B") { b.read("second.md") == second })
    #expect(
      await eventually(20, "B shows no transfer after the push") {
        guard let status = try? b.status() else { return false }
        return status["transfers"] == nil
      }, "\(String(describing: try? b.status()))")
  }

  /// Switches the radio's faults and waits until its fault log says it has.
  static func switchFaults(on: Bool, _ radio: SimulatedRadio) async -> Bool {
    let before = radio.faultSwitches.count
    if on { radio.faultsOn() } else { radio.faultsOff() }
    return await eventually(10, "the radio's faults \(on ? "on" : "off")") {
      radio.faultSwitches.count > before && radio.faultSwitches.last == on
    }
  }

  @Test func catchUpShowsItsProgressUntilDone() async throws {
    let group = try AgentGroup(count: 2)
    let (a, b) = (group.agents[0], group.agents[1])
    let notes = (0..<Self.count).map(Self.note)
    for (path, bytes) in notes { try a.save(path, bytes) }
    let bytes = notes.reduce(0) { $0 + $1.1.count }
    try a.start()
    #expect(try await eventually(30, "A's agent answering") { (try? a.status()) != nil })
    let start = Date()
    try b.start()

    // A snapshot part way: some of A's notes arrived, not all.
    // Asked at most every 200 ms: each `baton status` is a process, and a
    // busy loop of them would slow the catch-up it watches on 2 cores.
    var partial: (String, Int, Int, Int, Int)?
    var asked = ContinuousClock.now - .seconds(1)
    let seen = await eventually(120, "B shows a transfer from agentA part done") {
      guard ContinuousClock.now - asked >= .milliseconds(200) else { return false }
      asked = ContinuousClock.now
      guard let status = try? b.status() else { return false }
      partial = Self.transfers(status).first {
        $0.0 == "agentA" && $0.1 > 0 && $0.1 < $0.2
      }
      return partial != nil
    }
    #expect(seen, "\(group.logs.suffix(20_000))")
    if let (_, done, total, bytesDone, bytesTotal) = partial {
      #expect(total <= Self.count && bytesTotal <= bytes, "\(partial!)")
      #expect(bytesDone > 0 && bytesDone < bytesTotal, "\(partial!)")
      _ = done
    }

    // `--watch` with its output in a file: a plain line per update, then the end.
    let out = group.base.appendingPathComponent("watch.out").path
    let watch = try ChildProcess(
      TestEnvironment.batonBinary, ["status", "--watch"], captureStdout: false,
      stdoutPath: out, stderrPath: out, environment: b.environment)

    var pending = notes[...]
    let arrived = await eventually(240, "\(Self.count) notes in B") {
      while let (path, content) = pending.first, b.read(path) == content { pending.removeFirst() }
      return pending.isEmpty
    }
    let elapsed = Date().timeIntervalSince(start)
    print("B caught up on \(Self.count) notes (\(bytes) bytes) in \(elapsed) s")
    #expect(arrived, "\(pending.count) missing\n\(group.logs.suffix(20_000))")

    // Done: no transfer shown any more.
    #expect(
      await eventually(20, "B shows no transfer") {
        guard let status = try? b.status() else { return false }
        return status["transfers"] == nil
      }, "\(String(describing: try? b.status()))")
    #expect(await eventually(20, "--watch ends") { watch.hasExited })
    #expect(watch.wait() == 0)
    let printed = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
    let lines = printed.split(separator: "\n").map(String.init)
    #expect(lines.last == "no transfer running", "\(printed)")
    #expect(!printed.contains("\u{1B}["), "no terminal redraws in a file: \(printed)")
    let updates = lines.filter { $0.hasPrefix("from agentA: ") && $0.contains(" notes, ") }
    #expect(!updates.isEmpty, "started while a transfer ran: \(printed)")
    print("--watch printed \(updates.count) updates; the first: \(updates.first ?? "none")")
    // A transfer watched for 7 updates (6 s or more) logged its progress.
    if updates.count >= 7 {
      #expect(b.log.contains("from agentA: "), "\(b.log.suffix(5_000))")
    }
  }
}
