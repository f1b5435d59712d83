import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// `baton-bench handoff --arrivals N`: peers that come into range while A
/// holds notes, each timed from its start to its first note.
///
/// First N newcomers: fresh devices, new to the group, so each first
/// contact carries the membership records both ways (PROTOCOL.md 6.3).
/// Then, on the timed radio, N members: one device that joined once (with
/// a folder of another type, so that it holds no note), started N times
/// from a copy of that state with an empty notes folder, so that its
/// records agree with A's and B's and its first contact is a member's
/// coming back. Each kind's first contacts are split and set beside the
/// model's floor (`FirstContact`).
extension HandoffBenchmark {
  struct Arrivals {
    var base: String
    var baton: String
    /// The spare controller's port on the simulated radio.
    var port: Int
    var keyPath: String
    var timing: RadioTiming
    /// The agents' advertising interval in 0.625 ms units.
    var units: Int
  }

  static func runArrivals(_ count: Int, _ o: Arrivals, into aNotes: String) async throws {
    // A's current activity, which a link pushes first (PROTOCOL.md 6.2):
    // a small note, so that an arrival's first note is one L2CAP packet.
    var current = Array("Arrivals\n".utf8)
    while current.count < 200 { current.append(UInt8(ascii: "a") + UInt8(current.count % 26)) }
    _ = FileManager.default.createFile(
      atPath: aNotes + "/.tmp-arrivals.md", contents: Data(current))
    rename(aNotes + "/.tmp-arrivals.md", aNotes + "/arrivals.md")
    try await Task.sleep(for: .seconds(1))

    var firsts: [Double] = []
    var newcomers: [FirstContact] = []
    for round in 0..<count {
      let home = o.base + "/arrival\(round)"
      try Bench.makeAgentHome(home)
      let (first, contact) = try await arrive(
        home, ["--name", "N\(round)", "--notes", home + "/notes"], o)
      firsts.append(first)
      if let contact { newcomers.append(contact) }
    }
    firsts.sort()
    print(
      String(
        format:
          "a peer coming into range (agent started) with notes to get: first note after median %.0f ms, slowest %.0f ms (%d arrivals)",
        firsts[firsts.count / 2], firsts.last!, firsts.count))
    guard o.timing.timed else { return }
    guard o.timing.scanIntervalMicroseconds == 0 else {
      print("first contact: no floor with scan windows (the model's floor hears all the time)")
      return
    }
    FirstContact.report(newcomers, of: "newcomers", timing: o.timing, units: o.units)

    // A member: joins once, holding a folder of a type nobody else has.
    let template = o.base + "/member"
    try Bench.makeAgentHome(template)
    try FileManager.default.createDirectory(
      atPath: template + "/other", withIntermediateDirectories: true)
    let otherFolder =
      "[folder other]\npath = \(template)/other\nactivity-type = org.example.bench-other\n"
    try otherFolder.write(toFile: template + "/baton.conf", atomically: true, encoding: .utf8)
    let joining = try spawn(template, ["--name", "M", "-f", template + "/baton.conf"], o)
    let deadline = ContinuousClock.now + .seconds(30)
    func linksUp() -> Int {
      let log = (try? String(contentsOfFile: template + "/agent.log", encoding: .utf8)) ?? ""
      return log.split(separator: "\n").filter {
        $0.contains("handoff: link with") && $0.contains(") up (")
      }
      .count
    }
    while linksUp() < 2 && ContinuousClock.now < deadline {
      try await Task.sleep(for: .milliseconds(50))
    }
    joining.terminate()
    joining.waitUntilExit()
    guard linksUp() >= 2 else {
      throw BenchError.failed("the member did not link with A and B within 30 s (\(template))")
    }
    var members: [FirstContact] = []
    for round in 0..<count {
      let home = o.base + "/member\(round)"
      try Bench.makeAgentHome(home)
      chmod(home + "/state", 0o700)
      try FileManager.default.copyItem(
        atPath: template + "/state/handoff.db", toPath: home + "/state/handoff.db")
      try (otherFolder + "[folder notes]\npath = \(home)/notes\n").write(
        toFile: home + "/baton.conf", atomically: true, encoding: .utf8)
      let (_, contact) = try await arrive(home, ["--name", "M", "-f", home + "/baton.conf"], o)
      if let contact { members.append(contact) }
    }
    FirstContact.report(members, of: "members coming back", timing: o.timing, units: o.units)
  }

  /// Starts an arrival in `home` on the spare controller (at a random
  /// point of A's and B's advertising cycle on the timed radio), waits for
  /// its first note, stops it: the time from its start, and on the timed
  /// radio its first contact from its HCI log.
  private static func arrive(_ home: String, _ arguments: [String], _ o: Arrivals) async throws
    -> (Double, FirstContact?)
  {
    if o.timing.timed {
      // The previous arrival's end restarted A's and B's advertising:
      // start this one at a random point of their cycle, not at the same
      // one each time.
      usleep(UInt32.random(in: 0..<UInt32(o.units * 625 + 10_000)))
    }
    let start = ContinuousClock.now
    let process = try spawn(home, arguments, o)
    var first: Duration?
    var noted = Date()
    while first == nil && ContinuousClock.now - start < .seconds(30) {
      let names = (try? FileManager.default.contentsOfDirectory(atPath: home + "/notes")) ?? []
      if names.contains(where: { $0.hasSuffix(".md") }) {
        first = ContinuousClock.now - start
        noted = Date()
      }
      usleep(1000)
    }
    process.terminate()
    process.waitUntilExit()
    guard let first else {
      throw BenchError.failed("no note reached the arrival in \(home) in 30 s")
    }
    guard o.timing.timed else { return (first.secondsValue * 1000, nil) }
    guard let contact = FirstContact(hciLog: home + "/hci.btsnoop", noted: noted) else {
      throw BenchError.failed("the HCI log in \(home) lacks its scan, connection or note")
    }
    return (first.secondsValue * 1000, contact)
  }

  /// `baton agent` in `home` on the spare controller, with `arguments`.
  private static func spawn(_ home: String, _ arguments: [String], _ o: Arrivals) throws -> Process
  {
    try Bench.spawn(
      o.baton,
      ["agent"] + arguments + [
        "--controller", "tcp:127.0.0.1:\(o.port)", "--key-file", o.keyPath, "--state-dir",
        home + "/state", "--hci-log", home + "/hci.btsnoop",
      ], log: home + "/agent.log", environment: ["XDG_RUNTIME_DIR": home + "/run"])
  }
}
