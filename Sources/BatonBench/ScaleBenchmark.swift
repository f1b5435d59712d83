import BatonHandoff
import BatonSystem
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
///   rename afterwards (`mv`, which travels as a rename: no bytes again);
/// - one note of 100 KB (--note-bytes N) saved in A over a link: the time
///   until it is identical in B.
///
/// With --radio timed (and the timed radio's options, as `baton-bench
/// handoff` takes them: RadioTiming), the radio runs its clock, and the
/// default cases are the small notes and the 100 KB note (--only runs any
/// other on it). The small notes are then a link's catch-up: they are in
/// A's folder before it starts, B starts empty once A advertises, and the
/// time runs from B's log showing the link up to every note identical in
/// B. Each of the two prints the model's floor, measured/floor, and the
/// throughput (note bytes per second) as a share of the airtime-limited
/// one (full PDUs in every event, one direction). The floor is the model's
/// time to carry the L2CAP packets B's HCI log shows it received in the
/// measured window (`RadioTiming.carryTime`) plus what the protocol cannot
/// avoid: for the catch-up, nothing (B's LINK carries its summary's root,
/// which tells A that B holds nothing, so A's walk asks for nothing:
/// PROTOCOL.md 6.2), for a save, half an interval (the wait for the next
/// connection event, at the median).
///
/// Options: --small N (10000; 2000 on the timed radio), --large N (1000),
/// --saves N (5), --memory-notes N (100000), --note-bytes N (100000),
/// --only small|large|save|memory|rename|note, --keep, --radio
/// instant|timed and the timed radio's options.
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
    var noteBytes = 100_000
    var only: String?
    var keep = false
    var timing = RadioTiming()
  }

  static func run(_ arguments: [String]) async throws {
    var o = Options()
    var smallCount: Int?
    var rest = arguments[...]
    while let argument = rest.popFirst() {
      let value = { Int(rest.popFirst() ?? "") }
      switch argument {
      case "--small": smallCount = value() ?? smallCount
      case "--note-bytes": o.noteBytes = max(1, value() ?? o.noteBytes)
      case "--large": o.large = value() ?? o.large
      case "--saves": o.saves = value() ?? o.saves
      case "--memory-notes": o.memoryNotes = value() ?? o.memoryNotes
      case "--only": o.only = rest.popFirst()
      case "--keep": o.keep = true
      default:
        guard try o.timing.parse(argument, &rest) else {
          throw BenchError.usage("unknown option \(argument)")
        }
      }
    }
    try o.timing.validate()
    o.small = smallCount ?? (o.timing.timed ? defaultTimedSmall : o.small)
    let baton = Bench.repository + "/.build/release/baton"
    guard FileManager.default.isExecutableFile(atPath: baton) else {
      throw BenchError.usage("build first: swift build -c release (no \(baton))")
    }
    print("scale benchmark: release build, agents on the simulated radio (bumble)")
    if o.timing.timed {
      print(o.timing.summary)
      print(
        String(
          format:
            "airtime-limited throughput: %.1f KB/s of L2CAP bytes one way (%d PDUs of %d B per %g ms event)",
          o.timing.airtimeLimitedBytesPerSecond / 1000, o.timing.fullPDUsPerEvent,
          o.timing.dataLength, Double(o.timing.intervalMicroseconds) / 1000))
    }
    // The timed radio's default: the small notes and the 100 KB note (the
    // others take minutes of simulated air; --only runs them).
    let all = o.only == nil && !o.timing.timed
    let small = o.only == nil || o.only == "small" || o.only == "save"
    let transfer =
      o.timing.timed
      ? catchUp(count:size:limit:_:then:) : Self.bulk(count:size:limit:_:then:)
    if small { try await transfer(o.small, 100, 30, o, o.saves) }
    if all || o.only == "large" { try await transfer(o.large, 10_000, 60, o, 0) }
    if small { try await transfer(10, 100, 30, o, o.saves) }
    if o.only == nil || o.only == "note" { try await linkNote(o) }
    if all || o.only == "memory" { try await memory(notes: o.memoryNotes, o) }
    if all || o.only == "rename" { try await renameCost(o) }
  }

  /// --small's default on the timed radio, where a catch-up of 10,000
  /// notes takes minutes of simulated air.
  static let defaultTimedSmall = 2_000

  /// One note of `o.noteBytes` saved in A once the link is up: the time
  /// until it is identical in B, and on the timed radio its floor (half an
  /// interval, then the carry time of what B received) and throughput.
  static func linkNote(_ o: Options) async throws {
    let pair = try Pair("note", controllers: 2, timing: o.timing, keep: o.keep)
    defer { pair.stop(keep: o.keep) }
    try pair.start(["A", "B"], ports: try readyPorts(pair.base))
    let (a, b) = (pair.agents[0], pair.agents[1])
    guard waitForLog(b.notes + "/../agent.log", ") up (", timeout: 60) else {
      throw BenchError.failed("no link between A and B within 60 s (see \(pair.base))")
    }
    // Let the (empty) catch-up finish.
    try await Task.sleep(for: .seconds(3))
    let bytes = note(3, size: o.noteBytes)
    let temporary = a.notes + "/.tmp-large.md"
    _ = FileManager.default.createFile(atPath: temporary, contents: Data(bytes))
    let wall = Date()
    let start = ContinuousClock.now
    rename(temporary, a.notes + "/large.md")
    guard
      let took = waitIdentical(
        [("large.md", bytes)], in: b.notes, since: start,
        timeout: timeout(60, bytes: o.noteBytes, o.timing), every: 1_000)
    else {
      throw BenchError.failed("the \(o.noteBytes) B note did not reach B (see \(pair.base))")
    }
    let end = Date()
    print(
      String(
        format: "one note of %d B saved in A over a link: identical in B after %.1f ms",
        o.noteBytes, took.secondsValue * 1000))
    if o.timing.timed {
      // B's log is complete for the window once its host got the last packet.
      let lengths = Bench.receivedL2CAPLengths(b.hciLog, from: wall, to: end)
      printFloor(
        o.timing, measured: took.secondsValue, lengths: lengths, intervals: 0.5,
        unavoidable: "half an interval (the next event)", noteBytes: o.noteBytes,
        target: "80 %")
    }
  }

  /// On the timed radio: `count` notes of `size` bytes as a link's catch-up
  /// (see the type's comment), then `saves` single saves of 2 KB.
  static func catchUp(count: Int, size: Int, limit: Double, _ o: Options, then saves: Int)
    async throws
  {
    let pair = try Pair(
      "catch-up-\(count)x\(size)", controllers: 2, timing: o.timing, keep: o.keep)
    defer { pair.stop(keep: o.keep) }
    let notes = (0..<count).map { (path($0), note($0, size: size)) }
    try write(notes, into: pair.base + "/A/notes")
    let ports = try readyPorts(pair.base)
    try pair.start(["A"], ports: ports)
    guard waitForLog(pair.base + "/A/agent.log", "advertising as", timeout: 120) else {
      throw BenchError.failed("agent A did not come up (see \(pair.base)/A/agent.log)")
    }
    try pair.start(["B"], ports: Array(ports.dropFirst()))
    let (a, b) = (pair.agents[0], pair.agents[1])
    guard waitForLog(pair.base + "/B/agent.log", ") up (", timeout: 60, every: 2_000) else {
      throw BenchError.failed("no link between A and B within 60 s (see \(pair.base))")
    }
    let wall = Date()
    let start = ContinuousClock.now
    let cpuA = cpuSeconds(a.process.processIdentifier)
    let cpuB = cpuSeconds(b.process.processIdentifier)
    let wait = timeout(limit * 4, bytes: count * size, o.timing)
    guard let took = waitIdentical(notes, in: b.notes, since: start, timeout: wait) else {
      throw BenchError.failed(
        "\(count) notes of \(size) B did not all reach B (see \(pair.base))")
    }
    let end = Date()
    let seconds = took.secondsValue
    let usedA = (cpuSeconds(a.process.processIdentifier) - cpuA) / seconds
    let usedB = (cpuSeconds(b.process.processIdentifier) - cpuB) / seconds
    print(
      String(
        format:
          "%6d notes of %5d B, a link's catch-up (in A before B started): all byte-identical in B %.2f s after the link was up (B's log, polled every 2 ms); average CPU A %.2f cores, B %.2f cores",
        count, size, seconds, usedA, usedB))
    let lengths = Bench.receivedL2CAPLengths(b.hciLog, from: wall, to: end)
    printFloor(
      o.timing, measured: seconds, lengths: lengths, intervals: 0,
      unavoidable: "nothing (B's LINK showed A an empty root)", noteBytes: count * size,
      target: "70 % for 10,000 x 100 B")
    if saves > 0 { try await singleSaves(pair, count: count, saves: saves) }
  }

  /// How long to wait for `bytes` of notes: `seconds` on the instant radio;
  /// on the timed one also 60 s plus ten times their air time (each note
  /// costs more than its bytes: frames, entries, the walk).
  static func timeout(_ seconds: Double, bytes: Int, _ timing: RadioTiming) -> Double {
    guard timing.timed else { return seconds }
    return max(seconds, 60 + 10 * Double(bytes) / timing.airtimeLimitedBytesPerSecond)
  }

  /// The timed radio's floor for one figure and the throughput's share of
  /// the airtime-limited one.
  static func printFloor(
    _ timing: RadioTiming, measured: Double, lengths: [Int], intervals: Double,
    unavoidable: String, noteBytes: Int, target: String
  ) {
    let carry = Double(timing.carryTime(lengths)) / 1_000_000
    let floor = carry + intervals * Double(timing.intervalMicroseconds) / 1_000_000
    let l2cap = lengths.reduce(0, +)
    let limit = timing.airtimeLimitedBytesPerSecond
    print(
      String(format: "  floor (model): %.3f s = ", floor) + unavoidable
        + String(
          format: " + carry %.3f s (%d L2CAP packets, %d B A->B); measured/floor %.2f", carry,
          lengths.count, l2cap, measured / floor))
    print(
      String(
        format: "  throughput: %.1f KB/s of note bytes, %.0f %% of the airtime-limited %.1f KB/s",
        Double(noteBytes) / measured / 1000, 100 * Double(noteBytes) / measured / limit,
        limit / 1000) + " (target \(target)); "
        + String(
          format: "L2CAP bytes A->B %.1f KB/s (%.0f %%), %.2f L2CAP bytes per note byte",
          Double(l2cap) / measured / 1000, 100 * Double(l2cap) / measured / limit,
          Double(l2cap) / Double(max(1, noteBytes))))
  }

  /// A 1 MB note saved in A, then renamed there (rename(2), as `mv` does):
  /// the HCI bytes A's btsnoop log shows for each, from the change to 1.5 s
  /// after B's folder shows it.
  static func renameCost(_ o: Options) async throws {
    let pair = try Pair("rename", controllers: 2, timing: o.timing, keep: o.keep)
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

    init(_ label: String, controllers: Int, timing: RadioTiming = RadioTiming(), keep: Bool)
      throws
    {
      base = try Bench.temporaryDirectory("baton-bench-scale-\(label)")
      radio = try Bench.startRadio(
        controllers: controllers, options: timing.radioArguments, in: base
      ).process
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
    timeout: Double, every pause: UInt32 = 20_000
  ) -> Duration? {
    var pending = notes[...]
    while ContinuousClock.now - start < .seconds(timeout) {
      while let (path, bytes) = pending.first,
        let data = FileManager.default.contents(atPath: folder + "/" + path), Array(data) == bytes
      {
        pending.removeFirst()
      }
      if pending.isEmpty { return ContinuousClock.now - start }
      usleep(pause)
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

  static func waitForLog(
    _ path: String, _ text: String, timeout: Double, every pause: UInt32 = 50_000
  ) -> Bool {
    let start = ContinuousClock.now
    while ContinuousClock.now - start < .seconds(timeout) {
      if let log = try? String(contentsOfFile: path, encoding: .utf8), log.contains(text) {
        return true
      }
      usleep(pause)
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
      do {
        try FileSystem.rename(staging + "/" + folder, to: a.notes + "/" + folder)
      } catch {
        throw BenchError.failed("cannot move \(folder) into A's folder: \(error) (\(error.name))")
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
