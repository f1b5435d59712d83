import BatonAgent
import BatonHandoff
import BatonSystem
import Foundation
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// `baton-bench handoff`: two real `baton agent` processes on a fresh
/// simulated radio; for notes of 200 B, 2 KB and 20 KB, saves each in A and
/// times how long until the identical file is in B's folder. Prints median and
/// 95th percentile per size, the advertising interval, and how many bytes
/// crossed HCI (both agents, from their btsnoop logs) per note byte.
///
/// Then, with --burst N, saves N notes of 200 B in A one after another, as
/// fast as the file system takes them, and prints how many reached every
/// other agent and the slowest save-to-peer time; a thread watches the
/// peers' folders during the writing, so each arrival is timed when it
/// happens.
///
/// With --arrivals N, N times over: a fresh agent comes into range (starts
/// on a spare controller) while A holds notes, and the time to its first
/// note is printed (median and slowest), then it stops. On the timed radio
/// each arrival's first contact is also split, from its HCI log, into the
/// time until connected and the protocol, each beside the model's floor
/// (`FirstContact`), with the whole one's measured/floor; then as many
/// first contacts of a member coming back (HandoffBenchmark+Arrivals.swift).
///
/// With --idle-saves N (timed radio only), N saves (of 200 B, or
/// --idle-bytes N), each once the link has slowed to its idle pace, beside
/// the floor at that pace, and the air an idle and a busy link take
/// (HandoffBenchmark+IdleLink.swift).
///
/// With --radio timed, the simulated radio runs its clock (Tests/Radio/timing.py:
/// connection events, PDUs per event, air time), set by --conn-interval MS
/// (default 40), --pdus-per-event N (6), --data-length 27|251 (251) and
/// --phy 1m|2m (1m), and --scan-interval-ms MS with --scan-window-ms MS
/// (default: the radio hears all the time); each size then also prints the model's floor and
/// measured/floor. The floor of a save is the wait for the next connection
/// event (a save comes at a random instant: half an interval at the median,
/// 0.95 of one at the 95th percentile) plus the model's time to carry, from
/// that event's anchor, the L2CAP packets B's HCI log shows it received
/// between the save and the arrival (the NOTE's frames), as PDUs of at most
/// the data length, at most N per event, each with its air time. So that a
/// save does come at a random instant of the event grid (not just after the
/// event that carried the previous note, when the next one is furthest
/// away), each save on the timed radio first waits a random part of one
/// connection interval. Then the save furthest above its own worst case (a
/// whole interval's wait plus its own carry), in connection events.
///
/// Options: --saves N (default 50), --interval MS (advertising interval,
/// default the agent's), --agents K (2 or 3; sizes are timed to B, a burst
/// to every peer), --burst N (default 0: none), --idle-saves N (default 0),
/// --idle-bytes N (200), --keep (leave the folders), --radio instant|timed
/// (default instant) and the timed radio's options.
enum HandoffBenchmark {
  static func run(_ arguments: [String]) async throws {
    var saves = 50
    var interval: Int?
    var keep = false
    var agentCount = 2
    var burst = 0
    var arrivals = 0
    var idleSaves = 0
    var idleBytes = 200
    var timing = RadioTiming()
    var rest = arguments[...]
    while let argument = rest.popFirst() {
      switch argument {
      case "--saves": saves = Int(rest.popFirst() ?? "") ?? saves
      case "--interval": interval = Int(rest.popFirst() ?? "")
      case "--keep": keep = true
      case "--agents": agentCount = min(3, max(2, Int(rest.popFirst() ?? "") ?? 2))
      case "--burst": burst = max(0, Int(rest.popFirst() ?? "") ?? 0)
      case "--arrivals": arrivals = max(0, Int(rest.popFirst() ?? "") ?? 0)
      case "--idle-saves": idleSaves = max(0, Int(rest.popFirst() ?? "") ?? 0)
      case "--idle-bytes": idleBytes = min(1_000_000, max(20, Int(rest.popFirst() ?? "") ?? 200))
      default:
        guard try timing.parse(argument, &rest) else {
          throw BenchError.usage("unknown option \(argument)")
        }
      }
    }
    try timing.validate()
    if idleSaves > 0, !timing.timed {
      throw BenchError.usage("--idle-saves needs --radio timed (the instant radio has no interval)")
    }
    let top = Bench.repository
    let baton = top + "/.build/release/baton"
    guard FileManager.default.isExecutableFile(atPath: baton) else {
      throw BenchError.usage("build first: swift build -c release (no \(baton))")
    }
    let base = try Bench.temporaryDirectory("baton-bench-handoff")
    defer { if !keep { try? FileManager.default.removeItem(atPath: base) } }

    let radio = try Bench.startRadio(
      controllers: agentCount + (arrivals > 0 ? 1 : 0), options: timing.radioArguments, in: base)
    defer { radio.process.terminate() }
    let keyPath = base + "/group.key"
    try Bench.writeGroupKey(to: keyPath)

    var agents: [(notes: String, hciLog: String, process: Process)] = []
    for (index, name) in ["A", "B", "C"].prefix(agentCount).enumerated() {
      let home = base + "/" + name
      try Bench.makeAgentHome(home)
      var args = [
        "agent", "--name", name, "--notes", home + "/notes", "--controller",
        "tcp:127.0.0.1:\(radio.ports[index])", "--key-file", keyPath, "--state-dir",
        home + "/state",
        "--hci-log", home + "/hci.btsnoop",
      ]
      if let interval {
        let config = home + "/baton.conf"
        try "[agent]\nadvertising-interval = \(interval)\n".write(
          toFile: config, atomically: true, encoding: .utf8)
        args += ["-f", config]
      }
      let process = try Bench.spawn(
        baton, args, log: home + "/agent.log", environment: ["XDG_RUNTIME_DIR": home + "/run"])
      agents.append((home + "/notes", home + "/hci.btsnoop", process))
    }
    defer {
      for agent in agents {
        agent.process.terminate()
        agent.process.waitUntilExit()
      }
    }
    // Let them come up and hear each other once, and link (PROTOCOL.md 6.1):
    // at most 30 s for every agent to show a link up with every other.
    try await Task.sleep(for: .seconds(2))
    let homes = ["A", "B", "C"].prefix(agentCount).map { base + "/" + $0 }
    func linksUp(_ home: String) -> Int {
      let log = (try? String(contentsOfFile: home + "/agent.log", encoding: .utf8)) ?? ""
      let lines = log.split(separator: "\n").filter { $0.contains("handoff: link with") }
      let ups = lines.filter { $0.contains(") up (") }.count
      return ups - lines.filter { $0.contains(" down: ") }.count
    }
    let linking = ContinuousClock.now
    while ContinuousClock.now - linking < .seconds(30),
      !homes.allSatisfy({ linksUp($0) >= agentCount - 1 })
    {
      try await Task.sleep(for: .milliseconds(50))
    }
    let waited = String(format: "%.1f", (ContinuousClock.now - linking).secondsValue)
    let counts = homes.map { "\($0.split(separator: "/").last ?? "") \(linksUp($0))" }
    print("links up: \(counts.joined(separator: ", ")) (after \(waited) s more)")

    print(
      "handoff benchmark: \(saves) saves per size, \(agentCount) agents on the simulated radio")
    let asked = interval ?? Int(AgentConfiguration.defaultAdvertisingInterval.wholeMilliseconds)
    let units = asked * 8 / 5
    if timing.timed {
      print(
        "advertising interval: \(asked) ms (\(units) units of 0.625 ms; the timed radio reads"
          + " them as a real one does and adds a random 0-10 ms each time)")
    } else {
      print(
        "advertising interval: \(asked) ms (\(units) units of 0.625 ms; the simulated radio reads"
          + " units as milliseconds, so it advertises every \(units) ms)")
    }
    if timing.timed {
      print(timing.summary)
      print(
        "floor = the wait for the next connection event (0.5 interval at the median, 0.95 at"
          + " p95) + the model's time to carry the L2CAP packets B received between save and"
          + " arrival (the median save's, the p95 save's)")
    }
    if timing.timed {
      try busyLink(
        timing: timing, from: agents[0].notes, to: agents[1].notes, peerLog: agents[1].hciLog)
    }
    var savedBytes = 0
    for size in [200, 2_000, 20_000] {
      var latencies: [Double] = []
      var windows: [(Date, Date)] = []
      for i in 0..<saves {
        let bytes = noteBytes("Note \(size)-\(i)", size: size, seed: i)
        if timing.timed { usleep(UInt32.random(in: 0..<UInt32(timing.intervalMicroseconds))) }
        let save = try timedSave(
          bytes, as: "bench-\(size)-\(i).md", from: agents[0].notes, to: agents[1].notes)
        latencies.append(save.ms)
        windows.append(save.window)
        savedBytes += bytes.count
      }
      let (median, p95) = medianAndP95(latencies)
      print(
        String(
          format: "%6d B notes: save -> identical file on the peer: median %7.1f ms, p95 %7.1f ms",
          size, median, p95))
      if timing.timed {
        printFloor(timing, windows: windows, latencies: latencies, hciLog: agents[1].hciLog)
      }
    }
    if idleSaves > 0 {
      try runIdleSaves(
        idleSaves, bytes: idleBytes, timing: timing, from: agents[0].notes, to: agents[1].notes,
        peerLog: agents[1].hciLog)
    }
    if burst > 0 {
      try await runBurst(burst, from: agents[0].notes, to: agents.dropFirst().map(\.notes))
    }
    if arrivals > 0 {
      try await runArrivals(
        arrivals,
        Arrivals(
          base: base, baton: baton, port: Int(radio.ports[agentCount]), keyPath: keyPath,
          timing: timing, units: units),
        into: agents[0].notes)
    }
    // Stop the agents so that their btsnoop logs are complete.
    for agent in agents {
      agent.process.terminate()
      agent.process.waitUntilExit()
    }
    let hciBytes = agents.map { Bench.btsnoopPayloadBytes($0.hciLog) }
    print(
      String(
        format:
          "HCI bytes per note byte: %.2f (A %d B + B %d B over %d note bytes; includes advertising, scanning and handshakes)",
        Double(hciBytes.reduce(0, +)) / Double(savedBytes), hciBytes[0], hciBytes[1], savedBytes))
  }

  /// A note of `size` bytes: `title` on its first line, then letters.
  static func noteBytes(_ title: String, size: Int, seed: Int) -> [UInt8] {
    var bytes = Array((title + "\n").utf8)
    while bytes.count < size { bytes.append(UInt8(ascii: "a") + UInt8((bytes.count + seed) % 26)) }
    return bytes
  }

  /// Saves `bytes` as `name` in `source` as an editor does (written aside,
  /// then renamed into place) and waits, at most 30 s, until the identical
  /// file is in `peer`: the time it took in milliseconds and the wall-clock
  /// window (to read the HCI logs by).
  static func timedSave(
    _ bytes: [UInt8], as name: String, from source: String, to peer: String
  ) throws -> (ms: Double, window: (Date, Date)) {
    let temporary = source + "/.tmp-" + name
    _ = FileManager.default.createFile(atPath: temporary, contents: Data(bytes))
    let wallStart = Date()
    let start = ContinuousClock.now
    rename(temporary, source + "/" + name)
    let target = peer + "/" + name
    while ContinuousClock.now - start < .seconds(30) {
      if let data = FileManager.default.contents(atPath: target), Array(data) == bytes { break }
      usleep(1000)
    }
    let elapsed = ContinuousClock.now - start
    guard elapsed < .seconds(30) else {
      throw BenchError.failed("\(name) did not arrive within 30 s")
    }
    return (elapsed.secondsValue * 1000, (wallStart, Date()))
  }

  /// The median and the 95th percentile of `values` (at least one).
  static func medianAndP95(_ values: [Double]) -> (Double, Double) {
    let sorted = values.sorted()
    let p95 = sorted[min(sorted.count - 1, Int((Double(sorted.count) * 0.95).rounded(.up)) - 1)]
    return (sorted[sorted.count / 2], p95)
  }

  /// The timed radio's floor for one size's saves (see the type's comment),
  /// beside the measured median and p95; then the save furthest above its
  /// own worst case (a whole interval's wait plus its own carry), in
  /// connection events (the target: never more than two). `latencies` are
  /// the saves' times in the order of `windows`.
  static func printFloor(
    _ timing: RadioTiming, windows: [(Date, Date)], latencies: [Double], hciLog: String
  ) {
    let measured: [(ms: Double, packets: Int, bytes: Int)] = windows.map { window in
      let lengths = Bench.receivedL2CAPLengths(hciLog, from: window.0, to: window.1)
      return (Double(timing.carryTime(lengths)) / 1000, lengths.count, lengths.reduce(0, +))
    }
    let carries = measured.sorted { $0.ms < $1.ms }
    guard !carries.isEmpty, latencies.count == carries.count else { return }
    let (median, p95) = medianAndP95(latencies)
    let middle = carries[carries.count / 2]
    let high = carries[
      min(carries.count - 1, Int((Double(carries.count) * 0.95).rounded(.up)) - 1)]
    let interval = Double(timing.firstIntervalMicroseconds) / 1000
    let floorMedian = 0.5 * interval + middle.ms
    let floorP95 = 0.95 * interval + high.ms
    print(
      String(
        format:
          "         floor (model): median %7.1f ms, p95 %7.1f ms; measured/floor: median %.2f, p95 %.2f (carry %.1f ms: %d L2CAP packets, %d B A->B)",
        floorMedian, floorP95, median / floorMedian, p95 / floorP95, middle.ms, middle.packets,
        middle.bytes))
    let above = zip(latencies, measured).map { $0 - (interval + $1.ms) }
    guard let worst = above.indices.max(by: { above[$0] < above[$1] }) else { return }
    print(
      String(
        format:
          "         the save furthest above its own worst case (an interval's wait + its"
          + " carry): %.1f ms, %.2f connection events above it (target: at most 2)",
        latencies[worst], max(0, above[worst]) / interval))
  }

  /// Saves `count` notes of 200 B in `source`, one after another, while a
  /// thread of its own watches every folder of `peers` (inotify), so an
  /// arrival is timed when it happens, not after the writing;
  /// waits at most 120 s until each note is identical in every peer folder,
  /// then prints how many arrived and the slowest save-to-arrival time.
  static func runBurst(_ count: Int, from source: String, to peers: [String]) async throws {
    let notes: [(name: String, bytes: [UInt8])] = (0..<count).map { i in
      ("burst-\(i).md", noteBytes("Burst \(i)", size: 200, seed: i))
    }
    let clock = BurstClock(notes: count, peers: peers.count)
    // inotify on the peers' folders, so watching costs nothing between
    // arrivals (a note is written to a temporary name, then renamed).
    let inotify = try Inotify(nonBlocking: true)
    var watches: [Inotify.Watch: Int] = [:]
    for (p, peer) in peers.enumerated() {
      watches[try inotify.addWatch(peer, mask: [.movedTo, .closeWrite])] = p
    }
    let byName = Dictionary(uniqueKeysWithValues: notes.enumerated().map { ($1.name, $0) })
    let watcher = Thread { [watches] in
      defer { inotify.descriptor.closeIgnoringErrors() }
      var pending = Set(0..<(count * peers.count))
      var buffer = [UInt8](repeating: 0, count: 64 * 1024)
      func check(_ i: Int, _ p: Int) {
        guard pending.contains(p * count + i),
          let data = FileManager.default.contents(atPath: peers[p] + "/" + notes[i].name),
          Array(data) == notes[i].bytes
        else { return }
        clock.arrived(note: i, peer: p, at: ContinuousClock.now)
        pending.remove(p * count + i)
      }
      let deadline = ContinuousClock.now + .seconds(120)
      var sweep = ContinuousClock.now
      while !pending.isEmpty && ContinuousClock.now < deadline {
        _ = try? Socket.poll([(inotify.descriptor, Int16(POLLIN))], timeoutMilliseconds: 100)
        for event in (try? inotify.readEvents(into: &buffer)) ?? [] {
          guard let p = watches[event.watch], let i = byName[event.name] else { continue }
          check(i, p)
        }
        // A lost event (queue overflow) must not hide an arrival: look at
        // every pending note once a second.
        if ContinuousClock.now - sweep > .seconds(1) {
          sweep = ContinuousClock.now
          for k in pending.sorted() { check(k % count, k / count) }
        }
      }
      clock.finish()
    }
    watcher.start()
    let start = ContinuousClock.now
    for (i, note) in notes.enumerated() {
      let temporary = source + "/.tmp-" + note.name
      _ = FileManager.default.createFile(atPath: temporary, contents: Data(note.bytes))
      clock.saved(note: i, at: ContinuousClock.now)
      rename(temporary, source + "/" + note.name)
    }
    let wrote = ContinuousClock.now - start
    while !clock.isFinished { try await Task.sleep(for: .milliseconds(10)) }
    let (arrived, slowest) = clock.result
    print(
      String(
        format:
          "burst of %d saves in a row (written in %.0f ms) to %d peer(s): %d of %d arrived; slowest save -> identical file on a peer: %.0f ms",
        count, wrote.secondsValue * 1000, peers.count, arrived, count * peers.count,
        slowest.secondsValue * 1000))
    if arrived < count * peers.count {
      throw BenchError.failed("\(count * peers.count - arrived) notes did not arrive within 120 s")
    }
  }
}

/// The save and arrival instants of a burst, shared by the writer and the
/// watcher thread.
private final class BurstClock: Sendable {
  private struct State {
    var saved: [ContinuousClock.Instant?]
    var arrived: [ContinuousClock.Instant?]
    var finished = false
  }
  private let state: Mutex<State>
  private let count: Int

  init(notes: Int, peers: Int) {
    count = notes
    state = Mutex(State(saved: Array(repeating: nil, count: notes),
      arrived: Array(repeating: nil, count: notes * peers)))
  }

  func saved(note: Int, at instant: ContinuousClock.Instant) {
    state.withLock { $0.saved[note] = instant }
  }
  func arrived(note: Int, peer: Int, at instant: ContinuousClock.Instant) {
    state.withLock { $0.arrived[peer * count + note] = instant }
  }
  func finish() { state.withLock { $0.finished = true } }
  var isFinished: Bool { state.withLock { $0.finished } }

  /// How many arrived, and the longest time from a save to its arrival.
  var result: (arrived: Int, slowest: Duration) {
    state.withLock { s in
      var slowest = Duration.zero
      var arrived = 0
      for (k, instant) in s.arrived.enumerated() {
        guard let instant, let saved = s.saved[k % count] else { continue }
        arrived += 1
        slowest = max(slowest, instant - saved)
      }
      return (arrived, slowest)
    }
  }
}
