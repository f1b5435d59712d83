import Foundation
import Synchronization
import Testing

@testable import BatonNotes
@testable import BatonSystem

#if canImport(Glibc)
  import Glibc
#endif

extension TestEnvironment {
  /// The `baton-bench` executable built by `swift build` (override with
  /// BATON_BENCH_BIN).
  static var benchBinary: String {
    if let path = ProcessInfo.processInfo.environment["BATON_BENCH_BIN"] { return path }
    for configuration in ["debug", "release"] {
      let path = repository.appendingPathComponent(".build/\(configuration)/baton-bench").path
      if FileManager.default.isExecutableFile(atPath: path) { return path }
    }
    return repository.appendingPathComponent(".build/debug/baton-bench").path
  }
}

/// Collects a notes folder's events as they arrive.
final class NotesEventRecorder: Sendable {
  private final class Store: Sendable {
    let events = Mutex<[NotesEvent]>([])
  }
  private let store = Store()
  private let task: Task<Void, Never>

  init(_ stream: AsyncStream<NotesEvent>) {
    let store = self.store
    task = Task {
      for await event in stream { store.events.withLock { $0.append(event) } }
    }
  }

  var events: [NotesEvent] { store.events.withLock { $0 } }

  /// The notes the events are about: a removal of several counts each.
  var changes: Int {
    events.reduce(0) {
      if case .removed(let paths) = $1 { $0 + paths.count } else { $0 + 1 }
    }
  }

  var saves: [NoteSave] {
    events.compactMap {
      switch $0 {
      case .saved(let save), .renamed(_, let save): save
      case .removed, .folderWithdrawn: nil
      }
    }
  }

  var removals: [String] {
    events.flatMap { event -> [String] in
      switch event {
      case .removed(let paths): paths
      case .renamed(let path, _): [path]
      case .saved, .folderWithdrawn: []
      }
    }
  }

  /// Waits until `condition` holds over the events (or `timeout` seconds).
  @discardableResult
  func wait(
    timeout: Double = 10, until condition: ([NotesEvent]) -> Bool
  ) async -> [NotesEvent] {
    _ = await eventually(timeout, "events") { condition(events) }
    return events
  }

  /// Waits for at least `atLeast` changes (the positive signal; up to 60 s on
  /// a loaded machine), then until no event has arrived for `quiet` seconds
  /// (so that an extra, wrong event would be seen), then returns all.
  func settled(atLeast: Int = 0, quiet: Double = 0.3, timeout: Double = 20) async -> [NotesEvent] {
    if atLeast > 0 { await wait(timeout: 60) { _ in self.changes >= atLeast } }
    let deadline = Date().addingTimeInterval(timeout)
    var count = events.count
    var lastChange = Date()
    while Date() < deadline {
      try? await Task.sleep(nanoseconds: 20_000_000)
      let now = events.count
      if now != count {
        count = now
        lastChange = Date()
      } else if Date().timeIntervalSince(lastChange) >= quiet {
        break
      }
    }
    return events
  }

  /// Forgets the events seen so far.
  func reset() { store.events.withLock { $0.removeAll() } }

  deinit { task.cancel() }
}

/// A temporary folder with a started `NotesFolder`, stopped and removed by
/// `close()`.
final class NotesFixture: Sendable {
  let directory: URL
  let folder: NotesFolder
  let recorder: NotesEventRecorder
  let sink: NotesObservedEvents

  var root: String { folder.root }

  init(
    pattern: String = "*.md", maximumNoteSize: Int = 1 << 20,
    tuning: NotesWatcher.Tuning = NotesWatcher.Tuning(),
    populate: (URL) throws -> Void = { _ in }
  ) throws {
    directory = try TestEnvironment.temporaryDirectory("baton-notes")
    try populate(directory)
    var tuning = tuning
    let sink = NotesObservedEvents()
    let given = tuning.observer
    tuning.observer = { path, mask in
      sink.append(path, mask)
      given?(path, mask)
    }
    folder = try NotesFolder(
      root: directory.path, pattern: pattern, maximumNoteSize: maximumNoteSize, tuning: tuning)
    self.sink = sink
    recorder = NotesEventRecorder(try folder.start())
  }

  /// Every raw (path, mask) the watcher saw, for checking editor droppings.
  var observedPaths: Set<String> { Set(sink.all.map(\.0)) }

  func path(_ relative: String) -> String { root + "/" + relative }

  func write(_ relative: String, _ bytes: [UInt8]) throws {
    try Data(bytes).write(to: URL(fileURLWithPath: path(relative)))
  }

  func bytes(_ relative: String) -> [UInt8]? {
    FileManager.default.contents(atPath: path(relative)).map { Array($0) }
  }

  func close() {
    folder.stop()
    try? FileManager.default.removeItem(at: directory)
  }
}

/// The watcher's raw-event observer's store.
final class NotesObservedEvents: Sendable {
  private let box = Mutex<[(String, Inotify.Mask)]>([])
  func append(_ path: String, _ mask: Inotify.Mask) { box.withLock { $0.append((path, mask)) } }
  var all: [(String, Inotify.Mask)] { box.withLock { $0 } }
}

/// Warnings logged by the notes layer, captured once for all tests (lines
/// are told apart by the unique temporary paths in them).
enum NotesLogCapture {
  private static let lines = Mutex<[String]>([])
  private static let installed: Bool = {
    Logger.sink.capture { priority, line in
      let text = "<\(priority.rawValue)>\(line)"
      if line.hasPrefix("notes:") {
        NotesLogCapture.lines.withLock { $0.append(text) }
      } else {
        // Other layers' lines still go to stderr, as without a capture.
        let bytes = Array((text + "\n").utf8)
        bytes.withUnsafeBytes { _ = write(2, $0.baseAddress, $0.count) }
      }
    }
    return true
  }()

  static func install() { _ = installed }

  static func lines(containing text: String) -> [String] {
    lines.withLock { $0.filter { $0.contains(text) } }
  }
}

/// Runs a program to completion; returns its exit code.
@discardableResult
func runProgram(
  _ path: String, _ arguments: [String], environment: [String: String]? = nil
) throws -> Int32 {
  let child = try ChildProcess(
    path, arguments, captureStdout: false, stdoutPath: "/dev/null", stderrPath: "/dev/null",
    environment: environment)
  return child.wait()
}

/// Random-looking but reproducible note bytes of about `size`.
func sampleNoteBytes(_ title: String, size: Int = 200, seed: Int = 0) -> [UInt8] {
  var text = "# \(title)\n"
  var i = seed
  while text.utf8.count < size {
    text += "line \(i) of \(title)\n"
    i += 1
  }
  return Array(text.utf8)
}
