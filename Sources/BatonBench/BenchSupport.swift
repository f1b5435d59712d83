import BatonHandoff
import BatonTestSupport
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// What several benchmarks share: the repository, temporary folders, the
/// simulated radio and child processes.
enum Bench {
  /// The repository's top folder.
  static let repository: String = TestPaths.repository.path

  /// A new empty folder `label-XXXXXXXX` in the temporary folder.
  static func temporaryDirectory(_ label: String) throws -> String {
    try TestPaths.temporaryDirectory(label).path
  }

  /// An agent's folders under `home`: notes/, state/ and run/ (mode 0700,
  /// its XDG_RUNTIME_DIR).
  static func makeAgentHome(_ home: String) throws {
    for sub in ["notes", "state", "run"] {
      try FileManager.default.createDirectory(
        atPath: home + "/" + sub, withIntermediateDirectories: true)
    }
    chmod(home + "/run", 0o700)
  }

  /// A fresh group key file at `path`, mode 0600.
  static func writeGroupKey(to path: String) throws {
    guard
      FileManager.default.createFile(
        atPath: path, contents: Data(GroupKey.generate().fileText.utf8))
    else { throw BenchError.failed("cannot write the key file \(path)") }
    chmod(path, 0o600)
  }

  /// Starts `command` with stdout and stderr appended to `log`.
  static func spawn(
    _ command: String, _ arguments: [String], log: String, environment: [String: String] = [:]
  ) throws -> Process {
    _ = FileManager.default.createFile(atPath: log, contents: nil)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: command)
    process.arguments = arguments
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    let handle = FileHandle(forWritingAtPath: log)
    process.standardOutput = handle
    process.standardError = handle
    process.standardInput = FileHandle.nullDevice
    try process.run()
    return process
  }

  /// A fresh simulated radio (Tests/Radio/radio.py in the project's venv),
  /// with `strangers` more devices advertising (not baton peers).
  /// `away`: controllers that start out of range (radio.py --away; SIGHUP
  /// to the radio brings them in); `options`: more of radio.py's options
  /// (`RadioTiming.radioArguments`).
  static func startRadio(
    controllers: Int, strangers: Int = 0, away: [Int] = [], options: [String] = [],
    in directory: String
  ) throws -> (
    process: Process, ports: [UInt16]
  ) {
    let python = repository + "/.venv/bin/python3"
    guard FileManager.default.isExecutableFile(atPath: python) else {
      throw BenchError.usage("no simulated-radio venv: run Tests/Scripts/setup.sh")
    }
    let log = directory + "/radio.out"
    let process = try spawn(
      python,
      [
        repository + "/Tests/Radio/radio.py", "--controllers", String(controllers),
        "--strangers", String(strangers),
      ] + away.flatMap { ["--away", String($0)] } + options, log: log)
    for _ in 0..<200 {
      if let text = try? String(contentsOfFile: log, encoding: .utf8),
        let line = text.split(separator: "\n").first(where: { $0.hasPrefix("READY ") })
      {
        return (process, line.split(separator: " ").dropFirst().compactMap { UInt16($0) })
      }
      usleep(50_000)
    }
    process.terminate()
    throw BenchError.failed("the simulated radio did not start (see \(log))")
  }

  /// A `baton agent` named `name` in `home` (made by `makeAgentHome`) on
  /// the simulated radio's `port`, with `[agent]` lines `config`, its log
  /// in home/agent.log and its own HCI log in home/hci.btsnoop.
  static func spawnAgent(
    _ baton: String, name: String, home: String, port: UInt16, keyPath: String,
    config: String
  ) throws -> Process {
    try "[agent]\n\(config)".write(
      toFile: home + "/baton.conf", atomically: true, encoding: .utf8)
    return try spawn(
      baton,
      [
        "agent", "--name", name, "--notes", home + "/notes", "--controller",
        "tcp:127.0.0.1:\(port)", "--key-file", keyPath, "--state-dir", home + "/state",
        "--hci-log", home + "/hci.btsnoop", "-f", home + "/baton.conf",
      ], log: home + "/agent.log", environment: ["XDG_RUNTIME_DIR": home + "/run"])
  }

  /// One packet of a btsnoop log: when, which way, and its bytes (H4, the
  /// type byte first).
  struct SnoopRecord {
    var stamp: Date
    var received: Bool
    var packet: ArraySlice<UInt8>
  }

  /// Every whole record of the btsnoop log at `path` (none when it cannot
  /// be read).
  static func btsnoopRecords(_ path: String) -> [SnoopRecord] {
    guard let data = FileManager.default.contents(atPath: path), data.count >= 16 else { return [] }
    let bytes = [UInt8](data)
    func u32(_ at: Int) -> Int {
      Int(bytes[at]) << 24 | Int(bytes[at + 1]) << 16 | Int(bytes[at + 2]) << 8 | Int(bytes[at + 3])
    }
    // btsnoop stamps count microseconds from year 0; this is 1970's.
    let epoch: Int64 = 0x00DC_DDB3_0F2F_8000
    var records: [SnoopRecord] = []
    var i = 16
    while i + 24 <= bytes.count {
      let included = u32(i + 4)
      let stamp = Int64(u32(i + 16)) << 32 | Int64(u32(i + 20))
      guard i + 24 + included <= bytes.count else { break }
      records.append(
        SnoopRecord(
          stamp: Date(timeIntervalSince1970: Double(stamp - epoch) / 1e6),
          received: u32(i + 8) & 1 == 1, packet: bytes[(i + 24)..<(i + 24 + included)]))
      i += 24 + included
    }
    return records
  }

  /// The bytes of every packet in a btsnoop file (records' included lengths).
  static func btsnoopPayloadBytes(_ path: String) -> Int {
    btsnoopRecords(path).reduce(0) { $0 + $1.packet.count }
  }

  /// The lengths of the L2CAP packets (ACL data, fragments joined) that a
  /// btsnoop log shows its host received between two times.
  static func receivedL2CAPLengths(_ path: String, from: Date, to: Date) -> [Int] {
    var lengths: [Int] = []
    for record in btsnoopRecords(path) where record.stamp >= from && record.stamp <= to {
      let p = record.packet.startIndex
      // H4 type 2 (ACL), received, with its 4-byte header.
      guard record.received, record.packet.count >= 5, record.packet[p] == 0x02 else { continue }
      let boundary = (record.packet[p + 2] >> 4) & 3
      let length = Int(record.packet[p + 3]) | Int(record.packet[p + 4]) << 8
      if boundary == 1, !lengths.isEmpty {
        lengths[lengths.count - 1] += length
      } else {
        lengths.append(length)
      }
    }
    return lengths
  }
}

enum BenchError: Error, CustomStringConvertible {
  case usage(String)
  case failed(String)
  var description: String {
    switch self {
    case .usage(let text): text
    case .failed(let text): "benchmark failed: \(text)"
    }
  }
}
