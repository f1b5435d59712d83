import Synchronization
import Testing

@testable import BatonSystem

#if canImport(Glibc)
  import Glibc
#endif

/// `PollLoop`, the one poll-and-wake-up loop of the agent's threads. Every
/// wait is for a signal (a handler ran, a turn began, the loop returned);
/// what must not happen is shown by an exact record once a later thing that
/// does happen has happened.
@Suite struct PollLoopTests {
  /// What the loop did, in order, from whichever thread.
  final class Record: Sendable {
    private let entries = Mutex<[String]>([])
    func add(_ entry: String) { entries.withLock { $0.append(entry) } }
    var all: [String] { entries.withLock { $0 } }
  }

  /// A flag set by one thread, read by another.
  final class Flag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .releasing) }
    var isSet: Bool { value.load(ordering: .acquiring) }
  }

  /// A pipe closed at the end of the test.
  struct Pipe {
    let read: FileDescriptor
    let write: FileDescriptor
    init() throws { (read, write) = try Socket.pipe() }
    func close() {
      read.closeIgnoringErrors()
      write.closeIgnoringErrors()
    }
  }

  /// Runs `loop` on a thread of its own; the returned flag is set once
  /// `run` returned.
  static func start(
    _ loop: PollLoop, name: String = "test-poll",
    _ prepare: @escaping @Sendable () -> PollLoop.Turn?
  ) -> Flag {
    let done = Flag()
    OwnedThread.start(name: name) {
      try? loop.run(prepare)
      done.set()
    }
    return done
  }

  @Test func aReadablePipeFiresTheReadHandler() async throws {
    let pipe = try Pipe()
    defer { pipe.close() }
    try pipe.write.writeAll([7])
    let loop = try PollLoop()
    let record = Record()
    let done = Self.start(loop) {
      PollLoop.Turn([
        PollLoop.Source(
          pipe.read,
          onReadable: {
            record.add("read \((try? pipe.read.read(upToCount: 8)) ?? [])")
            loop.stop()
          },
          onHangUp: { record.add("hang-up \($0)") })
      ])
    }
    #expect(await eventually(20, "the loop returned") { done.isSet })
    #expect(record.all == ["read [7]"])
  }

  @Test func aHangUpFiresTheHangUpHandler() async throws {
    let pipe = try Pipe()
    defer { pipe.read.closeIgnoringErrors() }
    pipe.write.closeIgnoringErrors()
    let loop = try PollLoop()
    let record = Record()
    let done = Self.start(loop) {
      PollLoop.Turn([
        PollLoop.Source(
          pipe.read, onReadable: { record.add("read") },
          onHangUp: { events in
            record.add("hang-up \(events)")
            loop.stop()
          })
      ])
    }
    #expect(await eventually(20, "the loop returned") { done.isSet })
    #expect(record.all == ["hang-up POLLHUP"])
  }

  @Test func aWritableDescriptorFiresTheWriteHandler() async throws {
    let pipe = try Pipe()
    defer { pipe.close() }
    let loop = try PollLoop()
    let record = Record()
    let done = Self.start(loop) {
      PollLoop.Turn([
        PollLoop.Source(
          pipe.write,
          onWritable: {
            record.add("writable")
            loop.stop()
          })
      ])
    }
    #expect(await eventually(20, "the loop returned") { done.isSet })
    #expect(record.all == ["writable"])
  }

  /// Nothing ready: the loop takes one turn and stays in it (no handler, no
  /// second turn) until `wake()`, which gives exactly one more turn; data
  /// runs the handler once; `stop()` returns the blocked loop.
  @Test func aLoopWithNothingReadyStaysBlockedUntilWokenOrStopped() async throws {
    let pipe = try Pipe()
    defer { pipe.close() }
    let loop = try PollLoop()
    let record = Record()
    let done = Self.start(loop) {
      record.add("turn")
      return PollLoop.Turn([
        PollLoop.Source(
          pipe.read,
          onReadable: { record.add("read \((try? pipe.read.read(upToCount: 8)) ?? [])") },
          onHangUp: { record.add("hang-up \($0)") })
      ])
    }
    #expect(await eventually(20, "the first turn") { record.all.count >= 1 })
    loop.wake()
    #expect(await eventually(20, "a second turn after wake()") { record.all.count >= 2 })
    try pipe.write.writeAll([1])
    #expect(await eventually(20, "the read and the turn after it") { record.all.count >= 4 })
    #expect(!done.isSet)
    loop.stop()
    #expect(await eventually(20, "the loop returned after stop()") { done.isSet })
    #expect(record.all == ["turn", "turn", "read [1]", "turn"])
    #expect(loop.isStopped)
  }

  /// A stop reaches every thread blocked in the same loop (a transport may
  /// have more than one reader).
  @Test func stopReturnsEveryThreadRunningTheLoop() async throws {
    let pipe = try Pipe()
    defer { pipe.close() }
    let loop = try PollLoop()
    let record = Record()
    let prepare: @Sendable () -> PollLoop.Turn? = {
      record.add("turn")
      return PollLoop.Turn([PollLoop.Source(pipe.read, onReadable: { record.add("read") })])
    }
    let first = Self.start(loop, name: "test-poll-1", prepare)
    let second = Self.start(loop, name: "test-poll-2", prepare)
    #expect(await eventually(20, "both threads turned") { record.all.count >= 2 })
    loop.stop()
    #expect(await eventually(20, "both loops returned") { first.isSet && second.isSet })
    #expect(record.all == ["turn", "turn"])
  }

  /// A handler that stops the loop ends the turn: later handlers do not run.
  @Test func aHandlerThatStopsTheLoopEndsTheTurn() throws {
    let a = try Pipe()
    let b = try Pipe()
    defer {
      a.close()
      b.close()
    }
    try a.write.writeAll([1])
    try b.write.writeAll([2])
    let loop = try PollLoop()
    let record = Record()
    // Both are ready already, so this run does not block.
    try loop.run {
      PollLoop.Turn(
        [
          PollLoop.Source(
            a.read,
            onReadable: {
              record.add("a")
              loop.stop()
            }),
          PollLoop.Source(b.read, onReadable: { record.add("b") }),
        ], afterWait: { record.add("after") })
    }
    #expect(record.all == ["a"])
    // A stopped loop does not turn again.
    try loop.run {
      record.add("turn")
      return nil
    }
    #expect(record.all == ["a"])
  }

  /// A turn with a timeout and nothing ready ends at the timeout and runs
  /// its `afterWait`; `prepare` returning nil ends the run.
  @Test func aTimeoutEndsTheWaitAndRunsAfterWait() throws {
    let loop = try PollLoop()
    let record = Record()
    var turns = 0
    try loop.run {
      turns += 1
      guard turns <= 2 else { return nil }
      return PollLoop.Turn([], timeout: .zero, afterWait: { record.add("after") })
    }
    #expect(record.all == ["after", "after"])
    #expect(!loop.isStopped)
  }

  @Test func timeoutsRoundUpToWholeMilliseconds() {
    #expect(PollLoop.milliseconds(.zero) == 0)
    #expect(PollLoop.milliseconds(.seconds(-1)) == 0)
    #expect(PollLoop.milliseconds(.nanoseconds(1)) == 1)
    #expect(PollLoop.milliseconds(.microseconds(1500)) == 2)
    #expect(PollLoop.milliseconds(.milliseconds(5)) == 5)
    #expect(PollLoop.milliseconds(.seconds(60)) == 60_000)
    #expect(PollLoop.milliseconds(.seconds(Int64.max)) == Int32.max)
  }
}
