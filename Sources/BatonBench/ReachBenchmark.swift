import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// `baton-bench reach`: how soon a peer that comes into range is linked
/// (issue 25's targets: 5 s p95 when an agent has just started, 30 s p95 in
/// steady state), for `scanning = continuous` (the agent before the
/// schedule) and `scanning = windows` (the default), in the same run.
///
/// Each sample is a fresh simulated radio with three agents: A and B link
/// and settle (their start bursts over, no link change for 15 s), then C
/// comes:
/// - `start`: C starts in range; timed from its start.
/// - `steady`: C was started out of range (radio.py --away) and has been
///   running past its own start burst for a random 0 to 30 s more (so the
///   moment falls anywhere in its and A's and B's window cycles); then the
///   radio brings it into range (SIGHUP); timed from then.
/// Each sample gives the time to C's first link and to its links with both.
/// Printed: every sample, median and p95 (the nearest rank) per mode and case.
///
/// The exclusive controllers of the simulated radio advertise connectable
/// beacons on the agents' own private addresses, so what is measured is the
/// scan schedule's share; on BlueZ with `Privacy = off` a closed beacon also
/// waits for the peer's next window (PROTOCOL.md 3.3).
///
/// Options: --samples N (default 10 per mode and case), --modes LIST
/// (default continuous,windows), --keep (leave the folders).
enum ReachBenchmark {
  static func run(_ arguments: [String]) async throws {
    var samples = 10
    var modes = ["continuous", "windows"]
    var keep = false
    var rest = arguments[...]
    while let argument = rest.popFirst() {
      switch argument {
      case "--samples": samples = max(1, Int(rest.popFirst() ?? "") ?? samples)
      case "--modes": modes = (rest.popFirst() ?? "").split(separator: ",").map(String.init)
      case "--keep": keep = true
      default: throw BenchError.usage("unknown option \(argument)")
      }
    }
    let baton = Bench.repository + "/.build/release/baton"
    guard FileManager.default.isExecutableFile(atPath: baton) else {
      throw BenchError.usage("build first: swift build -c release (no \(baton))")
    }
    print("reach benchmark: a third agent comes to a linked pair, \(samples) samples per row")
    var rows: [(String, [Double], [Double])] = []
    for mode in modes {
      for steady in [false, true] {
        var first: [Double] = []
        var both: [Double] = []
        for i in 0..<samples {
          let (f, b) = try await sample(mode: mode, steady: steady, baton: baton, keep: keep)
          first.append(f)
          both.append(b)
          print(
            String(
              format: "  %@ %@ sample %d: first link %.1f s, both %.1f s", mode,
              steady ? "steady" : "start", i + 1, f, b))
        }
        rows.append(("\(mode) \(steady ? "steady" : "start")", first, both))
      }
    }
    print("mode/case            first link: median  p95   both links: median  p95   (s)")
    for (label, first, both) in rows {
      print(
        label.padding(toLength: 20, withPad: " ", startingAt: 0)
          + String(
            format: "%18.1f %5.1f %20.1f %5.1f", percentile(first, 0.5), percentile(first, 0.95),
            percentile(both, 0.5), percentile(both, 0.95)))
    }
  }

  /// The nearest-rank percentile `p` of `values`.
  static func percentile(_ values: [Double], _ p: Double) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return .nan }
    let rank = Int((p * Double(sorted.count)).rounded(.up))
    return sorted[min(max(rank, 1), sorted.count) - 1]
  }

  /// Links up minus links down in an agent's log.
  static func links(_ home: String) -> (up: Int, changes: Int) {
    let log = (try? String(contentsOfFile: home + "/agent.log", encoding: .utf8)) ?? ""
    let lines = log.split(separator: "\n").filter { $0.contains("handoff: link with") }
    let ups = lines.filter { $0.contains(") up (") }.count
    let downs = lines.filter { $0.contains(") down: ") }.count
    return (ups - downs, lines.count)
  }

  static func sample(mode: String, steady: Bool, baton: String, keep: Bool) async throws
    -> (first: Double, both: Double)
  {
    let base = try Bench.temporaryDirectory("baton-bench-reach-\(mode)")
    defer { if !keep { try? FileManager.default.removeItem(atPath: base) } }
    let radio = try Bench.startRadio(controllers: 3, away: steady ? [2] : [], in: base)
    defer { radio.process.terminate() }
    let keyPath = base + "/group.key"
    try Bench.writeGroupKey(to: keyPath)
    var processes: [Process] = []
    defer {
      for process in processes {
        process.terminate()
        process.waitUntilExit()
      }
    }
    func start(_ index: Int, _ name: String) throws -> String {
      let home = base + "/" + name
      try Bench.makeAgentHome(home)
      processes.append(
        try Bench.spawnAgent(
          baton, name: name, home: home, port: radio.ports[index], keyPath: keyPath,
          config: "scanning = \(mode)\n"))
      return home
    }
    let a = try start(0, "A")
    let b = try start(1, "B")
    // A and B linked and settled: a link up on both, no change for 15 s.
    let began = ContinuousClock.now
    var last = [links(a), links(b)]
    var stableSince = ContinuousClock.now
    while ContinuousClock.now - stableSince < .seconds(15) || last.contains(where: { $0.up < 1 })
    {
      guard ContinuousClock.now - began < .seconds(120) else {
        throw BenchError.failed("\(mode): A and B did not settle within 120 s (\(base), --keep)")
      }
      try await Task.sleep(for: .milliseconds(250))
      let now = [links(a), links(b)]
      if now.map(\.changes) != last.map(\.changes) { stableSince = ContinuousClock.now }
      last = now
    }
    let c = try start(2, "C")
    if steady {
      // Past C's start burst (10 s), then anywhere in the window cycles.
      try await Task.sleep(for: .seconds(12) + .milliseconds(Int.random(in: 0...30_000)))
      guard links(c).up == 0 else {
        throw BenchError.failed("\(mode): C linked while out of range (\(base), --keep)")
      }
      kill(radio.process.processIdentifier, SIGHUP)
    }
    let from = ContinuousClock.now
    var first: Double?
    while true {
      let up = links(c).up
      if up >= 1 && first == nil { first = (ContinuousClock.now - from).secondsValue }
      if up >= 2 { return (first ?? 0, (ContinuousClock.now - from).secondsValue) }
      guard ContinuousClock.now - from < .seconds(180) else {
        throw BenchError.failed("\(mode): C not linked to both within 180 s (\(base), --keep)")
      }
      try await Task.sleep(for: .milliseconds(50))
    }
  }
}
