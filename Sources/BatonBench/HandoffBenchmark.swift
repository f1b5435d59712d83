import BatonAgent
import BatonHandoff
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// `baton-bench handoff`: two real `baton agent` processes on a fresh
/// simulated radio; for notes of 200 B, 2 KB and 20 KB, saves each in A and
/// times how long until the identical file is in B's folder. Prints median and
/// 95th percentile per size, the advertising interval, and how many bytes
/// crossed HCI (both agents, from their btsnoop logs) per note byte.
///
/// Options: --saves N (default 50), --interval MS (advertising interval,
/// default the agent's), --keep (leave the folders).
enum HandoffBenchmark {
  static func run(_ arguments: [String]) async throws {
    var saves = 50
    var interval: Int?
    var keep = false
    var rest = arguments[...]
    while let argument = rest.popFirst() {
      switch argument {
      case "--saves": saves = Int(rest.popFirst() ?? "") ?? saves
      case "--interval": interval = Int(rest.popFirst() ?? "")
      case "--keep": keep = true
      default: throw BenchError.usage("unknown option \(argument)")
      }
    }
    let top = Bench.repository
    let baton = top + "/.build/release/baton"
    guard FileManager.default.isExecutableFile(atPath: baton) else {
      throw BenchError.usage("build first: swift build -c release (no \(baton))")
    }
    let base = try Bench.temporaryDirectory("baton-bench-handoff")
    defer { if !keep { try? FileManager.default.removeItem(atPath: base) } }

    let radio = try Bench.startRadio(controllers: 2, in: base)
    defer { radio.process.terminate() }
    let keyPath = base + "/group.key"
    _ = FileManager.default.createFile(
      atPath: keyPath, contents: Data(GroupKey.generate().fileText.utf8))
    chmod(keyPath, 0o600)

    var agents: [(notes: String, hciLog: String, process: Process)] = []
    for (index, name) in ["A", "B"].enumerated() {
      let home = base + "/" + name
      for sub in ["notes", "state", "run"] {
        try FileManager.default.createDirectory(
          atPath: home + "/" + sub, withIntermediateDirectories: true)
      }
      chmod(home + "/run", 0o700)
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
    // Let both come up and hear each other once.
    try await Task.sleep(for: .seconds(2))

    print("handoff benchmark: \(saves) saves per size, two agents on the simulated radio")
    let asked = interval ?? Int(AgentConfiguration.defaultAdvertisingInterval.wholeMilliseconds)
    let units = asked * 8 / 5
    print(
      "advertising interval: \(asked) ms (\(units) units of 0.625 ms; the simulated radio reads"
        + " units as milliseconds, so it advertises every \(units) ms)")
    var noteBytes = 0
    for size in [200, 2_000, 20_000] {
      var latencies: [Double] = []
      for i in 0..<saves {
        var bytes = Array("Note \(size)-\(i)\n".utf8)
        while bytes.count < size { bytes.append(UInt8(ascii: "a") + UInt8((bytes.count + i) % 26)) }
        let name = "bench-\(size)-\(i).md"
        let temporary = agents[0].notes + "/.tmp-" + name
        _ = FileManager.default.createFile(atPath: temporary, contents: Data(bytes))
        let start = ContinuousClock.now
        rename(temporary, agents[0].notes + "/" + name)
        let target = agents[1].notes + "/" + name
        let deadline = start + .seconds(30)
        while ContinuousClock.now < deadline {
          if let data = FileManager.default.contents(atPath: target), Array(data) == bytes { break }
          usleep(1000)
        }
        let elapsed = ContinuousClock.now - start
        guard elapsed < .seconds(30) else {
          throw BenchError.failed("\(name) did not arrive within 30 s")
        }
        latencies.append(elapsed.secondsValue * 1000)
        noteBytes += bytes.count
      }
      latencies.sort()
      let median = latencies[latencies.count / 2]
      let p95 = latencies[
        min(latencies.count - 1, Int((Double(latencies.count) * 0.95).rounded(.up)) - 1)]
      print(
        String(
          format: "%6d B notes: save -> identical file on the peer: median %7.1f ms, p95 %7.1f ms",
          size, median, p95))
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
        Double(hciBytes.reduce(0, +)) / Double(noteBytes), hciBytes[0], hciBytes[1], noteBytes))
  }
}
