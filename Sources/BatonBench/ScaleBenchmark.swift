import BatonHandoff
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// `baton-bench scale`: issue 14's figures, with real `baton agent`
/// processes (release build) on a fresh simulated radio for each case.
///
/// - N notes of ~100 B created at once in A: the time until all are
///   byte-identical in B, and each agent's average CPU (cores) meanwhile;
/// - the same for notes of 10 KB;
/// - with N notes in sync: one 2 KB save's latency (median of several) and
///   the HCI bytes it moved (from A's btsnoop log: ACL both directions, and
///   everything), against a folder of 10 notes;
/// - the memory (VmRSS, VmHWM) of one agent holding M notes in its index;
/// - issue 12: the HCI bytes of a 1 MB note's fresh transfer, and of its
///   rename afterwards (`mv`, which travels as a rename: no bytes again).
///
/// Options: --small N (10000), --large N (1000), --saves N (5),
/// --memory-notes N (100000), --only small|large|save|memory|rename, --keep.
enum ScaleBenchmark {
  /// One line on stdout, written at once (each figure as soon as it is measured).
  static func print(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
  }

  struct Options {
    var small = 10_000
    var large = 1_000
    var saves = 5
    var memoryNotes = 100_000
    var only: String?
    var keep = false
  }

  static func run(_ arguments: [String]) async throws {
    var o = Options()
    var rest = arguments[...]
    while let argument = rest.popFirst() {
      let value = { Int(rest.popFirst() ?? "") }
      switch argument {
      case "--small": o.small = value() ?? o.small
      case "--large": o.large = value() ?? o.large
      case "--saves": o.saves = value() ?? o.saves
      case "--memory-notes": o.memoryNotes = value() ?? o.memoryNotes
      case "--only": o.only = rest.popFirst()
      case "--keep": o.keep = true
      default: throw BenchError.usage("unknown option \(argument)")
      }
    }
    let baton = Bench.repository + "/.build/release/baton"
    guard FileManager.default.isExecutableFile(atPath: baton) else {
      throw BenchError.usage("build first: swift build -c release (no \(baton))")
    }
    print("scale benchmark: release build, agents on the simulated radio (bumble)")
    let small = o.only == nil || o.only == "small" || o.only == "save"
    if small { try await bulk(count: o.small, size: 100, limit: 30, o, then: o.saves) }
    if o.only == nil || o.only == "large" {
      try await bulk(count: o.large, size: 10_000, limit: 60, o, then: 0)
    }
    if small { try await bulk(count: 10, size: 100, limit: 30, o, then: o.saves) }
    if o.only == nil || o.only == "memory" { try await memory(notes: o.memoryNotes, o) }
    if o.only == nil || o.only == "rename" { try await renameCost(o) }
  }

  /// A 1 MB note saved in A, then renamed there (rename(2), as `mv` does):
  /// the HCI bytes A's btsnoop log shows for each, from the change to 1.5 s
  /// after B's folder shows it.
  static func renameCost(_ o: Options) async throws {
    let pair = try Pair("rename", controllers: 2, keep: o.keep)
    defer { pair.stop(keep: o.keep) }
    try pair.start(["A", "B"], ports: try readyPorts(pair.base))
    for agent in pair.agents {
      guard waitForLog(agent.notes + "/../agent.log", "advertising as", timeout: 20) else {
        throw BenchError.failed("agent \(agent.name) did not come up (see \(pair.base))")
      }
    }
    let (a, b) = (pair.agents[0], pair.agents[1])
    try await Task.sleep(for: .seconds(3))
    let bytes = note(7, size: 1_000_000)
    let temporary = a.notes + "/.tmp-big.md"
    _ = FileManager.default.createFile(atPath: temporary, contents: Data(bytes))
    var wall = Date()
    var start = ContinuousClock.now
    rename(temporary, a.notes + "/big.md")
    guard let sent = waitIdentical([("big.md", bytes)], in: b.notes, since: start, timeout: 60)
    else { throw BenchError.failed("the 1 MB note did not reach B within 60 s (see \(pair.base))") }
    try await Task.sleep(for: .milliseconds(1500))
    let fresh = hciBytes(a.hciLog, from: wall, to: Date())
    try await Task.sleep(for: .seconds(2))
    wall = Date()
    start = ContinuousClock.now
    rename(a.notes + "/big.md", a.notes + "/big-renamed.md")
    guard let moved = waitIdentical([("big-renamed.md", bytes)], in: b.notes, since: start, timeout: 60),
      !FileManager.default.fileExists(atPath: b.notes + "/big.md")
    else { throw BenchError.failed("the rename did not reach B within 60 s (see \(pair.base))") }
    try await Task.sleep(for: .milliseconds(1500))
    let renamed = hciBytes(a.hciLog, from: wall, to: Date())
    print(
      String(
        format:
          "1,000,000 B note: fresh transfer %d B of HCI (ACL %d B) in %.2f s; its rename %d B of HCI (ACL %d B) in %.3f s",
        fresh.1, fresh.0, sent.secondsValue, renamed.1, renamed.0, moved.secondsValue))
  }

  // MARK: Two agents

  final class Pair {
    let base: String
    let radio: Process
    var agents: [(name: String, notes: String, hciLog: String, process: Process)] = []

    init(_ label: String, controllers: Int, keep: Bool) throws {
      base = try Bench.temporaryDirectory("baton-bench-scale-\(label)")
      radio = try Bench.startRadio(controllers: controllers, in: base).process
    }

    func start(_ names: [String], ports: [UInt16]) throws {
      let keyPath = base + "/group.key"
      if !FileManager.default.fileExists(atPath: keyPath) {
        try Bench.writeGroupKey(to: keyPath)
      }
      for (index, name) in names.enumerated() {
        let home = base + "/" + name
        try Bench.makeAgentHome(home)
        let process = try Bench.spawn(
          Bench.repository + "/.build/release/baton",
          [
            "agent", "--name", name, "--notes", home + "/notes", "--controller",
            "tcp:127.0.0.1:\(ports[index])", "--key-file", keyPath, "--state-dir", home + "/state",
            "--hci-log", home + "/hci.btsnoop",
          ], log: home + "/agent.log", environment: ["XDG_RUNTIME_DIR": home + "/run"])
        agents.append((name, home + "/notes", home + "/hci.btsnoop", process))
      }
    }

    func stop(keep: Bool) {
      for agent in agents where agent.process.isRunning {
        agent.process.terminate()
        agent.process.waitUntilExit()
      }
      radio.terminate()
      radio.waitUntilExit()
      if !keep { try? FileManager.default.removeItem(atPath: base) }
    }
  }

  static func note(_ i: Int, size: Int) -> [UInt8] {
    var bytes = Array("# Note \(i)\n".utf8)
    let filler = Array("words of note \(i) to fill it up; ".utf8)
    while bytes.count < size { bytes += filler.prefix(size - bytes.count) }
    return bytes
  }

  static func path(_ i: Int) -> String { "d\(i % 50)/n\(i).md" }

  /// Writes notes straight into a folder (as a sync tool or `cp -r` would).
  static func write(_ notes: [(String, [UInt8])], into folder: String) throws {
    for (path, bytes) in notes {
      let url = URL(fileURLWithPath: folder + "/" + path)
      try FileManager.default.createDirectory(
        at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
      try Data(bytes).write(to: url)
    }
  }

  /// Waits until every note is in `folder` with exactly its bytes; the time
  /// it took, or nil after `timeout` seconds.
  static func waitIdentical(
    _ notes: [(String, [UInt8])], in folder: String, since start: ContinuousClock.Instant,
    timeout: Double
  ) -> Duration? {
    var pending = notes[...]
    while ContinuousClock.now - start < .seconds(timeout) {
      while let (path, bytes) = pending.first,
        let data = FileManager.default.contents(atPath: folder + "/" + path), Array(data) == bytes
      {
        pending.removeFirst()
      }
      if pending.isEmpty { return ContinuousClock.now - start }
      usleep(20_000)
    }
    return nil
  }

  /// User + system CPU seconds of a process so far.
  static func cpuSeconds(_ pid: Int32) -> Double {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
      let close = text.lastIndex(of: ")")
    else { return 0 }
    let fields = text[text.index(after: close)...].split(separator: " ")
    // After the name: state is field 3, so utime (14) and stime (15) are at 11 and 12.
    guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else {
      return 0
    }
    return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
  }

  /// VmRSS (all resident pages, the program's own included), RssAnon (the
  /// process's own memory: heap, stacks) and VmHWM (the peak), in MB.
  static func memory(of pid: Int32) -> String {
    String(
      format: "VmRSS %.1f MB (RssAnon %.1f MB, RssFile %.1f MB), VmHWM %.1f MB",
      Double(status(pid, "VmRSS")) / 1024, Double(status(pid, "RssAnon")) / 1024,
      Double(status(pid, "RssFile")) / 1024, Double(status(pid, "VmHWM")) / 1024)
  }

  static func status(_ pid: Int32, _ key: String) -> Int {
    let text = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
    let line = text.split(separator: "\n").first { $0.hasPrefix(key + ":") } ?? ""
    return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
  }

  static func waitForLog(_ path: String, _ text: String, timeout: Double) -> Bool {
    let start = ContinuousClock.now
    while ContinuousClock.now - start < .seconds(timeout) {
      if let log = try? String(contentsOfFile: path, encoding: .utf8), log.contains(text) {
        return true
      }
      usleep(50_000)
    }
    return false
  }

  // MARK: Cases

  /// `count` notes of `size` bytes created at once in A; then `saves` single
  /// saves of 2 KB once they are in sync.
  static func bulk(count: Int, size: Int, limit: Double, _ o: Options, then saves: Int)
    async throws
  {
    let pair = try Pair("\(count)x\(size)", controllers: 2, keep: o.keep)
    defer { pair.stop(keep: o.keep) }
    let ports = try readyPorts(pair.base)
    try pair.start(["A", "B"], ports: ports)
    for agent in pair.agents {
      guard waitForLog(agent.notes + "/../agent.log", "advertising as", timeout: 20) else {
        throw BenchError.failed("agent \(agent.name) did not come up (see \(agent.notes)/../agent.log)")
      }
    }
    let notes = (0..<count).map { (path($0), note($0, size: size)) }
    let (a, b) = (pair.agents[0], pair.agents[1])
    // Written first in a staging folder on the same file system, then its
    // folders renamed into A's: the notes appear at once, and the time the
    // bench takes to write files (slow on a loaded disk) is not counted.
    let staging = pair.base + "/staging"
    try write(notes, into: staging)
    let cpuA = cpuSeconds(a.process.processIdentifier)
    let cpuB = cpuSeconds(b.process.processIdentifier)
    let start = ContinuousClock.now
    for folder in try FileManager.default.contentsOfDirectory(atPath: staging) {
      guard rename(staging + "/" + folder, a.notes + "/" + folder) == 0 else {
        throw BenchError.failed("cannot move \(folder) into A's folder: errno \(errno)")
      }
    }
    let written = ContinuousClock.now - start
    guard let took = waitIdentical(notes, in: b.notes, since: start, timeout: limit * 4) else {
      throw BenchError.failed(
        "\(count) notes of \(size) B did not all reach B within \(Int(limit * 4)) s (see \(pair.base))")
    }
    let seconds = took.secondsValue
    let usedA = (cpuSeconds(a.process.processIdentifier) - cpuA) / seconds
    let usedB = (cpuSeconds(b.process.processIdentifier) - cpuB) / seconds
    print(
      String(
        format:
          "%6d notes of %5d B created at once in A: all byte-identical in B after %.1f s (target %.0f s; moving them in took %.2f s); average CPU A %.2f cores, B %.2f cores",
        count, size, seconds, limit, written.secondsValue, usedA, usedB))
    if saves > 0 { try await singleSaves(pair, count: count, saves: saves) }
  }

  /// One 2 KB save at a time in A: latency until identical in B, and the HCI
  /// bytes of the exchange (A's btsnoop log, from the save to 1.5 s after arrival).
  static func singleSaves(_ pair: Pair, count: Int, saves: Int) async throws {
    let (a, b) = (pair.agents[0], pair.agents[1])
    // Let both sides settle (beacons equal, no session running).
    try await Task.sleep(for: .seconds(3))
    var latencies: [Double] = []
    var acl: [Int] = []
    var all: [Int] = []
    for s in 0..<saves {
      let bytes = note(1_000_000 + s, size: 2_000)
      let name = "saved-\(s).md"
      let temporary = a.notes + "/.tmp-" + name
      _ = FileManager.default.createFile(atPath: temporary, contents: Data(bytes))
      let wall = Date()
      let start = ContinuousClock.now
      rename(temporary, a.notes + "/" + name)
      guard let took = waitIdentical([(name, bytes)], in: b.notes, since: start, timeout: 30) else {
        throw BenchError.failed("\(name) did not reach B within 30 s")
      }
      latencies.append(took.secondsValue * 1000)
      try await Task.sleep(for: .milliseconds(1500))
      let (aclBytes, allBytes) = hciBytes(a.hciLog, from: wall, to: Date())
      acl.append(aclBytes)
      all.append(allBytes)
      try await Task.sleep(for: .milliseconds(500))
    }
    latencies.sort()
    acl.sort()
    all.sort()
    print(
      String(
        format:
          "  one 2,000 B save with %d notes in sync: median %.1f ms (min %.1f, max %.1f) over %d saves; HCI from A's btsnoop log per save: ACL (both directions) median %d B, all HCI packets median %d B",
        count, latencies[latencies.count / 2], latencies.first!, latencies.last!, saves,
        acl[acl.count / 2], all[all.count / 2]))
  }

  /// Bytes of the btsnoop records between two times: ACL packets (H4 type 2)
  /// and all packets.
  static func hciBytes(_ path: String, from: Date, to: Date) -> (Int, Int) {
    guard let data = FileManager.default.contents(atPath: path), data.count >= 16 else {
      return (0, 0)
    }
    let bytes = [UInt8](data)
    let offset: Int64 = 0x00DC_DDB3_0F2F_8000
    let lower = Int64(from.timeIntervalSince1970 * 1e6) + offset
    let upper = Int64(to.timeIntervalSince1970 * 1e6) + offset
    var i = 16
    var (acl, all) = (0, 0)
    func u32(_ at: Int) -> Int {
      Int(bytes[at]) << 24 | Int(bytes[at + 1]) << 16 | Int(bytes[at + 2]) << 8 | Int(bytes[at + 3])
    }
    while i + 24 <= bytes.count {
      let included = u32(i + 4)
      let stamp = Int64(u32(i + 16)) << 32 | Int64(u32(i + 20))
      if i + 24 + included > bytes.count { break }
      if stamp >= lower && stamp <= upper {
        all += included
        if included > 0 && bytes[i + 24] == 0x02 { acl += included }
      }
      i += 24 + included
    }
    return (acl, all)
  }

  static func readyPorts(_ base: String) throws -> [UInt16] {
    let text = (try? String(contentsOfFile: base + "/radio.out", encoding: .utf8)) ?? ""
    guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("READY ") }) else {
      throw BenchError.failed("the simulated radio did not start")
    }
    return line.split(separator: " ").dropFirst().compactMap { UInt16($0) }
  }

  /// One agent whose folder holds `notes` notes: its memory once it has
  /// indexed them all.
  static func memory(notes count: Int, _ o: Options) async throws {
    let pair = try Pair("memory", controllers: 1, keep: o.keep)
    defer { pair.stop(keep: o.keep) }
    let home = pair.base + "/M"
    try FileManager.default.createDirectory(
      atPath: home + "/notes", withIntermediateDirectories: true)
    try write((0..<count).map { (path($0), note($0, size: 100)) }, into: home + "/notes")
    let start = ContinuousClock.now
    try pair.start(["M"], ports: try readyPorts(pair.base))
    let agent = pair.agents[0]
    guard waitForLog(home + "/agent.log", "advertising as", timeout: 600) else {
      throw BenchError.failed("the agent did not come up with \(count) notes (see \(home)/agent.log)")
    }
    let startup = ContinuousClock.now - start
    try await Task.sleep(for: .seconds(2))
    print(
      "agent holding \(count) notes in its index, after its first start: "
        + "\(memory(of: agent.process.processIdentifier)) (target VmRSS < 64 MB); first start"
        + " (index built, every note new) \(String(format: "%.1f", startup.secondsValue)) s")
    // A second start on the same folder and state: nothing changed.
    agent.process.terminate()
    agent.process.waitUntilExit()
    pair.agents = []
    let log = home + "/agent.log"
    try? FileManager.default.removeItem(atPath: log)
    let again = ContinuousClock.now
    try pair.start(["M"], ports: try readyPorts(pair.base))
    guard waitForLog(log, "advertising as", timeout: 600) else {
      throw BenchError.failed("the agent did not come up again (see \(log))")
    }
    let restart = ContinuousClock.now - again
    try await Task.sleep(for: .seconds(2))
    print(
      "  restart on the same \(count) notes (none changed): up and advertising after"
        + " \(String(format: "%.1f", restart.secondsValue)) s; "
        + memory(of: pair.agents[0].process.processIdentifier))
  }
}
