// baton-bench fuzz: every decoder of outside bytes, one child process per
// decoder, so that a trap (which kills the process) is caught and reported
// with the input that caused it.
import BatonFuzz
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

enum FuzzCommand {
  /// `fuzz [--count N] [--seed S] [--target NAME] [--crash-dir DIR]`: runs each
  /// target in a child (`fuzz-child`) and prints one line per target.
  /// `fuzz-child NAME COUNT SEED FILE`: runs one target in this process,
  /// keeping the current input in FILE (a shared mapping) as it goes.
  static func run(_ args: [String]) throws {
    var count = 1_000_000
    var seed: UInt64 = 1
    var only: String?
    var crashDir = FileManager.default.temporaryDirectory.path + "/baton-fuzz"
    var i = 0
    while i < args.count {
      let value = i + 1 < args.count ? args[i + 1] : ""
      switch args[i] {
      case "--count": count = Int(value) ?? count
      case "--seed": seed = UInt64(value) ?? seed
      case "--target": only = value
      case "--crash-dir": crashDir = value
      default: throw BenchError.usage("unknown fuzz option \(args[i])")
      }
      i += 2
    }
    try FileManager.default.createDirectory(atPath: crashDir, withIntermediateDirectories: true)
    let me = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    var crashes = 0
    say("target                  inputs   inputs/s  crashes")
    for target in DecoderFuzzer.targets where only == nil || only == target.name {
      let file = "\(crashDir)/\(target.name).input"
      let process = Process()
      process.executableURL = me
      process.arguments = ["fuzz-child", target.name, "\(count)", "\(seed)", file]
      let out = Pipe()
      process.standardOutput = out
      let start = ContinuousClock.now
      try process.run()
      let report = out.fileHandleForReading.readDataToEndOfFile()
      process.waitUntilExit()
      let seconds = (ContinuousClock.now - start).secondsValue
      let line = String(decoding: report, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
      if process.terminationReason == .exit, process.terminationStatus == 0, let secs = Double(line) {
        let pad = { (s: String, n: Int) in String(repeating: " ", count: max(0, n - s.count)) + s }
        say(
          target.name.padding(toLength: 18, withPad: " ", startingAt: 0)
            + pad("\(count)", 12) + pad("\(Int(Double(count) / max(secs, 1e-9)))", 11) + pad("0", 9))
        try? FileManager.default.removeItem(atPath: file)
      } else {
        crashes += 1
        let input = lastInput(file)
        say(
          "\(target.name): CRASH (\(process.terminationReason == .uncaughtSignal ? "signal" : "exit") \(process.terminationStatus)) after \(String(format: "%.1f", seconds)) s;"
            + " input of \(input.count) bytes kept in \(file).crash: \(input.prefix(64).map { String(format: "%02x", $0) }.joined())")
        FileManager.default.createFile(atPath: file + ".crash", contents: Data(input))
      }
    }
    say("crashes: \(crashes)")
    if crashes > 0 { exit(3) }
  }

  /// One line on stdout, written at once (not held in a buffer until exit).
  static func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
  }

  /// The input a dead child left in its mapping: `u32 length || bytes`.
  static func lastInput(_ file: String) -> [UInt8] {
    guard let data = FileManager.default.contents(atPath: file), data.count >= 4 else { return [] }
    let bytes = [UInt8](data)
    let n = Int(bytes[0]) | Int(bytes[1]) << 8 | Int(bytes[2]) << 16 | Int(bytes[3]) << 24
    return Array(bytes[4..<min(bytes.count, 4 + n)])
  }

  static let mappingBytes = 1 << 22

  static func child(_ args: [String]) throws {
    guard args.count == 4, let target = DecoderFuzzer.target(named: args[0]),
      let count = Int(args[1]), let seed = UInt64(args[2])
    else { throw BenchError.usage("usage: fuzz-child TARGET COUNT SEED FILE") }
    let fd = open(args[3], O_RDWR | O_CREAT | O_TRUNC, 0o600)
    guard fd >= 0, ftruncate(fd, off_t(mappingBytes)) == 0,
      let map = mmap(nil, mappingBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0),
      map != MAP_FAILED
    else { throw BenchError.failed("cannot map \(args[3])") }
    let seconds = DecoderFuzzer.run(target, count: count, seed: seed) { input in
      let n = min(input.count, mappingBytes - 4)
      map.storeBytes(of: UInt32(n).littleEndian, as: UInt32.self)
      if n > 0 { (map + 4).copyMemory(from: input.baseAddress!, byteCount: n) }
    }
    print(seconds)
  }
}
