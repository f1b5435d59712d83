import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// `--idle-saves N` on the timed radio: what an idle link costs and what it
/// costs a save. N times, the benchmark waits until B's HCI log shows the
/// link slowed down (LE Connection Update Complete to a longer interval than
/// the radio's: the central's `LinkPace` idled it after its quiet spell),
/// then for the radio's switch at the update's instant (six events of the
/// busy interval), then a random part of one idle interval; then it saves a
/// note of --idle-bytes N (default 200) in A and times its arrival in B's
/// folder. It prints the median and p95 beside the floor: the wait for the
/// next event at the idle interval (half an interval at the median, 0.95 of
/// one at p95), then the NOTE's carry, its first five events at the idle
/// interval (the save's data asks for the busy pace, which takes effect
/// six events after the one under way), the rest at the busy one; and the air
/// an empty connection event takes per second at each pace: two empty PDUs
/// and the space between them (80 + 150 + 80 us on 1M), at each interval
/// the log shows.
extension HandoffBenchmark {
  /// The interval (microseconds) a connection had from each time on, as B's
  /// host was told: LE (Enhanced) Connection Complete, then each LE
  /// Connection Update Complete, status 0 both.
  static func intervalChanges(_ hciLog: String) -> [(at: Date, micros: Int)] {
    intervalLog(hciLog).changes
  }

  /// `intervalChanges`, and whether the log's host was the central of the
  /// last connection it made (LE Connection Complete's role, 0).
  static func intervalLog(_ hciLog: String) -> (changes: [(at: Date, micros: Int)], central: Bool) {
    var central = false
    var changes: [(at: Date, micros: Int)] = []
    for record in Bench.btsnoopRecords(hciLog) where record.received {
      let bytes = record.packet
      let p = bytes.startIndex
      guard bytes.count >= 5, bytes[p] == 0x04, bytes[p + 1] == 0x3E, bytes[p + 4] == 0 else {
        continue
      }
      // The interval's offset: after status, handle, role, peer address
      // type and address (and the enhanced event's two RPAs); after status
      // and handle in an update.
      let offset: Int
      switch bytes[p + 3] {
      case 0x01: offset = 15
      case 0x0A: offset = 27
      case 0x03: offset = 7
      default: continue
      }
      guard bytes.count >= offset + 2 else { continue }
      if bytes[p + 3] != 0x03 { central = bytes[p + 7] == 0 }
      let units = Int(bytes[p + offset]) | Int(bytes[p + offset + 1]) << 8
      changes.append((record.stamp, units * 1250))
    }
    return (changes, central)
  }

  /// Brings the link to the busy pace before saves are timed on it: it
  /// may have idled since it came up. When B's HCI log shows it idle, saves
  /// one untimed note, waits until the log shows the busy pace asked for
  /// (at most 10 s), then for the switch at the update's instant (six
  /// events of the idle interval) and one more event.
  static func busyLink(
    timing: RadioTiming, from source: String, to peer: String, peerLog: String
  ) throws {
    guard let idle = intervalChanges(peerLog).last?.micros, idle > timing.intervalMicroseconds
    else { return }
    _ = try timedSave(
      noteBytes("Warm-up", size: 200, seed: 0), as: "bench-warm-up.md", from: source, to: peer)
    let deadline = ContinuousClock.now + .seconds(10)
    while let last = intervalChanges(peerLog).last, last.micros > timing.intervalMicroseconds {
      guard ContinuousClock.now < deadline else {
        throw BenchError.failed("the link did not come back to the busy pace within 10 s")
      }
      usleep(20_000)
    }
    usleep(UInt32(7 * idle))
    print(
      String(
        format: "the link had idled (%.1f ms events): one untimed save brought the busy pace back",
        Double(idle) / 1000))
  }

  static func runIdleSaves(
    _ count: Int, bytes size: Int, timing: RadioTiming, from source: String, to peer: String,
    peerLog: String
  ) throws {
    // An empty PDU carries no MIC (4 of the model's overhead bytes): 80 us
    // on 1M.
    let emptyPDU = timing.airtime(-4)
    let emptyEvent = Double(2 * emptyPDU + RadioTiming.interframeSpace)
    var latencies: [Double] = []
    var windows: [(Date, Date)] = []
    var idleMicros = 0
    var since = Date()
    for i in 0..<count {
      let deadline = ContinuousClock.now + .seconds(60)
      var idle: Int?
      while idle == nil, ContinuousClock.now < deadline {
        usleep(50_000)
        idle = intervalChanges(peerLog).last {
          $0.at > since && $0.micros > timing.intervalMicroseconds
        }?.micros
      }
      guard let idle else {
        throw BenchError.failed(
          "the link did not slow down within 60 s of the last save (no LE Connection Update"
            + " Complete to a longer interval in \(peerLog))")
      }
      idleMicros = idle
      usleep(UInt32(6 * timing.intervalMicroseconds + Int.random(in: 0..<idle)))
      let save = try timedSave(
        noteBytes("Idle \(i)", size: size, seed: i), as: "bench-idle-\(i).md", from: source,
        to: peer)
      latencies.append(save.ms)
      windows.append(save.window)
      since = save.window.1
    }
    let (median, p95) = medianAndP95(latencies)
    let busy = Double(timing.intervalMicroseconds)
    let peerIsCentral = intervalLog(peerLog).central
    print(
      String(
        format:
          "idle link (LinkPace): B's log shows it slowed to %.1f ms after each save's quiet spell;"
          + " air of its empty events: %.2f ms per second idle, %.2f ms per second busy (%.1f ms)",
        Double(idleMicros) / 1000, emptyEvent / Double(idleMicros) * 1000,
        emptyEvent / busy * 1000, busy / 1000))
    print(
      String(
        format:
          "%6d B notes on an idle link (%d saves, the saver %@): save -> identical file on the peer: median %7.1f ms, p95 %7.1f ms",
        size, count, peerIsCentral ? "peripheral" : "central", median, p95))
    // The update's instant is six events after the one under way when the
    // central asks. A central that saved asks as the NOTE goes out, before
    // the first event that carries it: five carry at the idle interval. A
    // central that receives asks once the first event brought data: six.
    var idleTiming = timing
    idleTiming.slowStart = (peerIsCentral ? 6 : 5, idleMicros)
    printFloor(idleTiming, windows: windows, latencies: latencies, hciLog: peerLog)
  }
}
