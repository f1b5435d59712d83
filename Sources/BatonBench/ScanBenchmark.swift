import BatonSystem
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// `baton-bench scan`: what scanning costs a linked pair (issue 25), for
/// `scanning = continuous` (what the agent did before the schedule) and
/// `scanning = windows` (the default), one after the other in the same run,
/// each on a fresh simulated radio with two real agents.
///
/// For each mode: once both agents show the link up and the start burst is
/// over, A's own HCI log (btsnoop, every LE Set Scan Enable it sent) gives
/// the share of `--seconds` it scanned, its longest single scan and how
/// many scans it started; /proc gives A's wake-ups per second (context
/// switches of all its threads, and per minute for each thread name) and
/// CPU; then 10 saves of 200 B in A are
/// timed to B's folder (median), so the link's latency sits beside the
/// scan figures.
///
/// The simulated radio has no airtime: what it shows is what the agent
/// asks of the controller, not what a real radio then does.
///
/// With `--strangers N`, N more devices on the radio advertise every 100 ms
/// with data that change each time (a busy room; Tests/Radio/strangers.py),
/// and the link is let settle (the strangers slow the Python radio down) so
/// the figures are of the linked, idle pair.
///
/// Options: --seconds N (default 300 per mode), --strangers N (default 0),
/// --keep (leave the folders).
enum ScanBenchmark {
  struct Figures {
    var linkedAfter: Double
    var duty: Double
    var longest: Double
    var scans: Int
    var wakeups: Double
    /// Wake-ups per minute of each thread name (threads of one name added).
    var perThread: [String: Double]
    var cpu: Double
    var median: Double
  }

  static func run(_ arguments: [String]) async throws {
    var seconds = 300
    var keep = false
    var strangers = 0
    var rest = arguments[...]
    while let argument = rest.popFirst() {
      switch argument {
      case "--seconds": seconds = max(10, Int(rest.popFirst() ?? "") ?? seconds)
      case "--keep": keep = true
      case "--strangers": strangers = max(0, Int(rest.popFirst() ?? "") ?? 0)
      default: throw BenchError.usage("unknown option \(argument)")
      }
    }
    let baton = Bench.repository + "/.build/release/baton"
    guard FileManager.default.isExecutableFile(atPath: baton) else {
      throw BenchError.usage("build first: swift build -c release (no \(baton))")
    }
    print(
      "scan benchmark: a linked pair on the simulated radio, \(seconds) s per mode, "
        + "\(strangers) strangers")
    var results: [(String, Figures)] = []
    for mode in ["continuous", "windows"] {
      let figures = try await measure(
        mode: mode, seconds: seconds, strangers: strangers, baton: baton, keep: keep)
      results.append((mode, figures))
    }
    print(
      "mode        linked after  scan duty  longest scan  scans  wake-ups/s  CPU    save median")
    for (mode, f) in results {
      print(
        mode.padding(toLength: 11, withPad: " ", startingAt: 0)
          + String(
          format: "%9.1f s   %7.2f %%  %10.1f s  %5d  %10.2f  %5.2f %%  %8.1f ms",
          f.linkedAfter, f.duty * 100, f.longest, f.scans, f.wakeups,
          f.cpu * 100, f.median))
    }
    for (mode, f) in results {
      let threads = f.perThread.sorted { $0.value > $1.value }
        .map { "\($0.key) \(String(format: "%.1f", $0.value))" }
      print("\(mode) wake-ups per minute by thread: " + threads.joined(separator: ", "))
    }
  }

  static func measure(mode: String, seconds: Int, strangers: Int, baton: String, keep: Bool)
    async throws
    -> Figures
  {
    let base = try Bench.temporaryDirectory("baton-bench-scan-\(mode)")
    defer { if !keep { try? FileManager.default.removeItem(atPath: base) } }
    let radio = try Bench.startRadio(controllers: 2, strangers: strangers, in: base)
    defer { radio.process.terminate() }
    let keyPath = base + "/group.key"
    try Bench.writeGroupKey(to: keyPath)
    var agents: [(home: String, process: Process)] = []
    for (index, name) in ["A", "B"].enumerated() {
      let home = base + "/" + name
      try Bench.makeAgentHome(home)
      let process = try Bench.spawnAgent(
        baton, name: name, home: home, port: radio.ports[index], keyPath: keyPath,
        config: "scanning = \(mode)\n")
      agents.append((home, process))
    }
    defer {
      for agent in agents {
        agent.process.terminate()
        agent.process.waitUntilExit()
      }
    }
    let started = ContinuousClock.now
    func linked(_ home: String) -> Bool {
      let log = (try? String(contentsOfFile: home + "/agent.log", encoding: .utf8)) ?? ""
      return log.contains("handoff: link with") && log.contains(") up (")
    }
    while !agents.allSatisfy({ linked($0.home) }) {
      guard ContinuousClock.now - started < .seconds(60) else {
        throw BenchError.failed("\(mode): no link within 60 s (see \(base), --keep)")
      }
      try await Task.sleep(for: .milliseconds(50))
    }
    let linkedAfter = (ContinuousClock.now - started).secondsValue
    // The start burst (10 s) is not steady state, nor is a link that still
    // comes and goes: wait until both logs have shown no link change for
    // 15 s with a link up.
    func changes(_ home: String) -> (ups: Int, downs: Int) {
      let log = (try? String(contentsOfFile: home + "/agent.log", encoding: .utf8)) ?? ""
      let lines = log.split(separator: "\n").filter { $0.contains("handoff: link with") }
      return (lines.filter { $0.contains(") up (") }.count, lines.filter { $0.contains(") down: ") }.count)
    }
    var last = agents.map { changes($0.home) }
    var stableSince = ContinuousClock.now
    while ContinuousClock.now - stableSince < .seconds(15) {
      guard ContinuousClock.now - started < .seconds(300) else {
        throw BenchError.failed("\(mode): the link did not settle within 300 s (see \(base), --keep)")
      }
      try await Task.sleep(for: .milliseconds(500))
      let now = agents.map { changes($0.home) }
      if now.map(\.ups) != last.map(\.ups) || now.map(\.downs) != last.map(\.downs)
        || now.contains(where: { $0.ups <= $0.downs })
      {
        stableSince = ContinuousClock.now
      }
      last = now
    }
    let pid = agents[0].process.processIdentifier
    let from = (Date(), switches(pid), cpuTicks(pid), threadSwitches(pid))
    try await Task.sleep(for: .seconds(seconds))
    let to = (Date(), switches(pid), cpuTicks(pid), threadSwitches(pid))
    let elapsed = to.0.timeIntervalSince(from.0)
    let scan = scanTimeline(agents[0].home + "/hci.btsnoop", from: from.0, to: to.0)
    let hertz = Double(sysconf(Int32(_SC_CLK_TCK)))
    var latencies: [Double] = []
    for i in 0..<10 {
      let name = "scan-bench-\(i).md"
      let bytes = Array(("Note \(i)\n" + String(repeating: "a", count: 190)).utf8)
      let temporary = agents[0].home + "/notes/.tmp-" + name
      _ = FileManager.default.createFile(atPath: temporary, contents: Data(bytes))
      let start = ContinuousClock.now
      rename(temporary, agents[0].home + "/notes/" + name)
      let target = agents[1].home + "/notes/" + name
      while FileManager.default.contents(atPath: target).map(Array.init) != bytes {
        guard ContinuousClock.now - start < .seconds(30) else {
          throw BenchError.failed("\(mode): \(name) did not arrive within 30 s")
        }
        usleep(1000)
      }
      latencies.append((ContinuousClock.now - start).secondsValue * 1000)
    }
    latencies.sort()
    return Figures(
      linkedAfter: linkedAfter, duty: scan.on / elapsed, longest: scan.longest,
      scans: scan.starts, wakeups: Double(to.1 - from.1) / elapsed,
      perThread: perName(from: from.3, to: to.3, seconds: elapsed),
      cpu: Double(to.2 - from.2) / hertz / elapsed, median: latencies[latencies.count / 2])
  }

  /// Context switches, voluntary and not, of every thread of `pid`.
  static func switches(_ pid: Int32) -> Int {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
    var total = 0
    for task in tasks {
      let status =
        (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/status", encoding: .utf8)) ?? ""
      for line in status.split(separator: "\n") where line.contains("ctxt_switches") {
        total += Int(line.split(separator: "\t").last ?? "") ?? 0
      }
    }
    return total
  }

  /// Context switches, voluntary and not, of each thread of `pid`, by
  /// thread id, with the thread's name.
  static func threadSwitches(_ pid: Int32) -> [String: (name: String, switches: Int)] {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
    var found: [String: (name: String, switches: Int)] = [:]
    for task in tasks {
      let status =
        (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/status", encoding: .utf8)) ?? ""
      var name = "?"
      var total = 0
      for line in status.split(separator: "\n") {
        if line.hasPrefix("Name:") {
          name = String(line.dropFirst(5).trimmingCharacters(in: .whitespaces))
        } else if line.contains("ctxt_switches") {
          total += Int(line.split(separator: "\t").last ?? "") ?? 0
        }
      }
      found[task] = (name, total)
    }
    return found
  }

  /// Wake-ups per minute by thread name between two `threadSwitches`; a
  /// thread that started meanwhile counts from zero.
  static func perName(
    from: [String: (name: String, switches: Int)], to: [String: (name: String, switches: Int)],
    seconds: Double
  ) -> [String: Double] {
    var byName: [String: Double] = [:]
    for (task, now) in to {
      let before = from[task]?.switches ?? 0
      byName[now.name, default: 0] += Double(now.switches - before) * 60 / max(seconds, 1)
    }
    return byName
  }

  /// utime + stime of `pid`, in clock ticks.
  static func cpuTicks(_ pid: Int32) -> Int {
    let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
    // Fields after the command name's closing parenthesis: state is field 3.
    guard let close = stat.lastIndex(of: ")") else { return 0 }
    let fields = stat[stat.index(after: close)...].split(separator: " ")
    guard fields.count > 12 else { return 0 }
    return (Int(fields[11]) ?? 0) + (Int(fields[12]) ?? 0)
  }

  /// From a btsnoop log: how long the scan was on between `from` and `to`,
  /// the longest single scan (clipped to the span), and the scans started.
  static func scanTimeline(_ path: String, from: Date, to: Date) -> (
    on: Double, longest: Double, starts: Int
  ) {
    guard let data = FileManager.default.contents(atPath: path), data.count >= 16 else {
      return (0, 0, 0)
    }
    let bytes = [UInt8](data)
    func u32(_ at: Int) -> UInt64 {
      bytes[at..<at + 4].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
    }
    // btsnoop: microseconds since 0000-01-01; Unix epoch at 0x00DCDDB30F2F8000.
    let epoch: UInt64 = 0x00DC_DDB3_0F2F_8000
    let start = from.timeIntervalSince1970
    let end = to.timeIntervalSince1970
    var on: Double = 0
    var longest: Double = 0
    var starts = 0
    var since: Double?
    var offset = 16
    func close(at time: Double) {
      guard let began = since else { return }
      let a = max(began, start)
      let b = min(time, end)
      if b > a {
        on += b - a
        longest = max(longest, b - a)
      }
      since = nil
    }
    while offset + 24 <= bytes.count {
      let length = Int(u32(offset + 4))
      let packet = offset + 24
      guard packet + length <= bytes.count else { break }
      let stamp = u32(offset + 16) << 32 | u32(offset + 20)
      let time = Double(stamp &- epoch) / 1_000_000
      if length >= 5, bytes[packet] == 0x01, bytes[packet + 1] == 0x0C, bytes[packet + 2] == 0x20 {
        if bytes[packet + 4] != 0 {
          if since == nil {
            since = time
            if time >= start && time < end { starts += 1 }
          }
        } else {
          close(at: time)
        }
      }
      offset = packet + length
    }
    close(at: end)
    return (on, longest, starts)
  }
}
