import BatonNotes
import BatonSystem
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// `baton-bench notes`: how long the index of 10,000 notes takes to build,
/// and the latency from a save's close(2) to its event.
///
///     baton-bench notes [--notes N] [--saves N] [--size BYTES]
///     baton-bench notes --write-loop DIR NOTE [--size BYTES]
///
/// `--write-loop` writes NOTE in DIR through `writeNote` forever, each
/// version `NotesBenchmark.version(n, size:)`; the crash test SIGKILLs it.
enum NotesBenchmark {
  static func run(_ arguments: [String]) async throws {
    var notes = 10_000
    var saves = 200
    var size = 1000
    var writeLoop: (String, String)?
    var rest = arguments[...]
    while let argument = rest.popFirst() {
      switch argument {
      case "--notes": notes = Int(rest.popFirst() ?? "") ?? notes
      case "--saves": saves = Int(rest.popFirst() ?? "") ?? saves
      case "--size": size = Int(rest.popFirst() ?? "") ?? size
      case "--write-loop":
        guard let dir = rest.popFirst(), let note = rest.popFirst() else {
          throw BenchError("--write-loop needs DIR NOTE")
        }
        writeLoop = (dir, note)
      default: throw BenchError("unknown option \(argument)")
      }
    }
    if let (dir, note) = writeLoop {
      try runWriteLoop(root: dir, note: note, size: size)
    }
    try await measure(notes: notes, saves: saves, size: size)
  }

  struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
  }

  /// Version `n` of the crash test's note: a header naming `n`, then `size`
  /// bytes of one letter, so a torn file is easy to tell.
  static func version(_ n: Int, size: Int) -> [UInt8] {
    let letter = UInt8(ascii: "a") + UInt8(n % 26)
    return Array("# version \(n)\n".utf8) + [UInt8](repeating: letter, count: size)
      + [UInt8(ascii: "\n")]
  }

  static func runWriteLoop(root: String, note: String, size: Int) throws -> Never {
    Logger.sink.threshold = .warning
    // A small trash: every write keeps the version it replaces, and the
    // cap removes the oldest while the writer is killed at any point.
    let folder = try NotesFolder(root: root, maximumNoteSize: size + 1024, trashSize: 4 << 20)
    var n = 0
    if let current = try? folder.readNote(note),
      let header = String(decoding: current.prefix(32), as: UTF8.self)
        .split(separator: "\n").first,
      let last = Int(header.dropFirst("# version ".count))
    {
      n = last
    }
    var announced = false
    while true {
      n += 1
      let expected = (try? folder.readNote(note)).map { ContentHash(of: $0) }
      _ = try folder.writeNote(
        note, bytes: version(n, size: size), replacing: expected, peer: "loop")
      if !announced {
        // Unbuffered: the crash test waits for this line before its timer.
        let line = Array("READY\n".utf8)
        _ = line.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
        announced = true
      }
    }
  }

  static func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
  }

  static func measure(notes: Int, saves: Int, size: Int) async throws {
    Logger.sink.threshold = .warning
    let root = FileManager.default.temporaryDirectory
      .appendingPathComponent("baton-bench-notes-\(getpid())").path
    try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: root) }
    let folders = max(1, notes / 100)
    for f in 0..<folders {
      try FileManager.default.createDirectory(
        atPath: "\(root)/folder\(f)", withIntermediateDirectories: true)
    }
    for i in 0..<notes {
      var text = "# Note \(i)\n"
      while text.utf8.count < size { text += "Line of note \(i), some words to fill it.\n" }
      try Data(text.utf8).write(to: URL(fileURLWithPath: "\(root)/folder\(i % folders)/n\(i).md"))
    }
    print("notes: \(notes) notes of about \(size) bytes in \(folders) folders under \(root)")

    // The index alone (one scan, no watch), then start(): index + watches.
    let scanStart = now()
    let scanned = try NotesFolder(root: root).buildIndex()
    let scanTime = now() - scanStart
    let folder = try NotesFolder(root: root)
    let startStart = now()
    let stream = try folder.start()
    let startTime = now() - startStart
    print(
      String(
        format: "index build (buildIndex, %d notes): %.3f s (target < 1 s)", scanned.count,
        scanTime))
    print(
      String(
        format: "start() (index + %d watches, %d notes): %.3f s", folders + 1,
        folder.indexEntries().count, startTime))

    // Save-to-event latency: close(2) to the event arriving at the consumer.
    var iterator = stream.makeAsyncIterator()
    var latencies: [Double] = []
    for s in 0..<saves {
      let i = (s * 37) % notes
      let path = "\(root)/folder\(i % folders)/n\(i).md"
      let bytes = Array("# Note \(i)\nsaved \(s) at \(now())\n".utf8)
      let fd = open(path, O_WRONLY | O_TRUNC)
      guard fd >= 0 else { throw BenchError("open \(path): \(Errno.current)") }
      _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
      close(fd)
      let closed = now()
      guard let event = await iterator.next() else { throw BenchError("stream ended") }
      let arrived = now()
      guard case .saved(let save) = event, save.bytes == bytes else {
        throw BenchError("unexpected event \(event)")
      }
      latencies.append((arrived - closed) * 1000)
      usleep(2000)
    }
    folder.stop()
    latencies.sort()
    func percentile(_ p: Double) -> Double {
      latencies[min(latencies.count - 1, Int(Double(latencies.count - 1) * p))]
    }
    print(
      String(
        format: "save latency over %d saves (close to event): median %.2f ms, p95 %.2f ms,"
          + " max %.2f ms (target median < 20 ms)", latencies.count, percentile(0.5),
        percentile(0.95), latencies.last ?? 0))
  }
}
