import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// The one way a thread of ours waits on descriptors: `poll(2)` over the
/// descriptors it watches and a wake-up pipe, with a handler per readiness.
///
/// Modelled on BlueZ's `src/shared/io.h`: a `Source` is a descriptor with a
/// readable, a writable and a hang-up handler (`io_set_read_handler`,
/// `io_set_write_handler`, `io_set_disconnect_handler`), and `wake()` and
/// `stop()` reach a loop blocked in another thread. The loop owns the
/// wake-up pipe (closed when the loop is released, so a late `wake()` never
/// writes to a reused descriptor number), retries `poll` on EINTR, and
/// reads `errno` only through `retryingOnInterrupt`.
///
/// `run` turns until `stop()`: each turn its `prepare` closure says what to
/// watch and for how long (`Turn`); a turn with no timeout blocks in the
/// kernel until a descriptor is ready or another thread calls `wake()` or
/// `stop()`, so an idle loop has no wake-ups at all. Nothing here runs a
/// thread: `run` blocks its caller, which must be a thread we own
/// (`OwnedThread`), never Swift's cooperative pool.
public final class PollLoop: Sendable {
  /// What `poll(2)` reports for a descriptor. The corresponding C constants
  /// are `POLLIN`, `POLLOUT`, `POLLHUP`, `POLLERR` and `POLLNVAL`.
  public struct Events: OptionSet, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: Int16
    public init(rawValue: Int16) { self.rawValue = rawValue }
    /// Data (or the end of the stream) can be read. `POLLIN`.
    public static let readable = Events(rawValue: Int16(POLLIN))
    /// A write would not block. `POLLOUT`.
    public static let writable = Events(rawValue: Int16(POLLOUT))
    /// The other end is gone. `POLLHUP`, reported whatever was asked.
    public static let hangUp = Events(rawValue: Int16(POLLHUP))
    /// An error is pending on the descriptor. `POLLERR`, reported whatever was asked.
    public static let error = Events(rawValue: Int16(POLLERR))
    /// The descriptor is not open. `POLLNVAL`.
    public static let invalid = Events(rawValue: Int16(POLLNVAL))

    /// The events that end a descriptor's use: hang-up, error, not open.
    public static let ended: Events = [.hangUp, .error, .invalid]

    public var description: String {
      let names: [(Events, String)] = [
        (.readable, "POLLIN"), (.writable, "POLLOUT"), (.hangUp, "POLLHUP"),
        (.error, "POLLERR"), (.invalid, "POLLNVAL"),
      ]
      let set = names.filter { contains($0.0) }.map(\.1)
      return set.isEmpty ? "none" : set.joined(separator: "|")
    }
  }

  /// A descriptor a turn watches, with what to do when it is ready (BlueZ's
  /// `struct io`). Poll is asked for readable when `onReadable` is set and
  /// for writable when `onWritable` is set, unless `interest` says
  /// otherwise; hang-ups and errors are always reported.
  ///
  /// When the descriptor is ready, `onWritable` runs first (what is queued
  /// goes out before more comes in), then `onReadable`; `onHangUp` runs,
  /// with what poll reported, only for a hang-up or error that neither of
  /// them answered (data still queued on a hung-up descriptor is read
  /// first; the end then shows as a read of 0 or a failing read). A source
  /// whose hang-up nothing answers is reported again at the next turn.
  public struct Source {
    public var descriptor: FileDescriptor
    /// What poll is asked for.
    public var interest: Events
    public var onReadable: (() -> Void)?
    public var onWritable: (() -> Void)?
    public var onHangUp: ((Events) -> Void)?

    public init(
      _ descriptor: FileDescriptor, onReadable: (() -> Void)? = nil,
      onWritable: (() -> Void)? = nil, onHangUp: ((Events) -> Void)? = nil
    ) {
      self.descriptor = descriptor
      self.onReadable = onReadable
      self.onWritable = onWritable
      self.onHangUp = onHangUp
      var interest: Events = []
      if onReadable != nil { interest.insert(.readable) }
      if onWritable != nil { interest.insert(.writable) }
      self.interest = interest
    }

    /// A descriptor watched for `interest` with no handlers: its readiness
    /// only ends the wait, and the next turn's `prepare` does the work (the
    /// way sd-bus is driven: `sd_bus_get_events`, then `sd_bus_process`).
    public static func watching(_ descriptor: FileDescriptor, for interest: Events) -> Source {
      var source = Source(descriptor)
      source.interest = interest
      return source
    }
  }

  /// What one turn of `run` waits for.
  public struct Turn {
    public var sources: [Source]
    /// How long the wait may last, rounded up to whole milliseconds; nil
    /// waits until a descriptor is ready or the loop is woken.
    public var timeout: Duration?
    /// Runs after the wait and the handlers, whatever ended the wait
    /// (a ready descriptor, the timeout, a `wake()`), unless the loop was
    /// stopped.
    public var afterWait: (() -> Void)?

    public init(
      _ sources: [Source], timeout: Duration? = nil, afterWait: (() -> Void)? = nil
    ) {
      self.sources = sources
      self.timeout = timeout
      self.afterWait = afterWait
    }
  }

  private let wakeRead: FileDescriptor
  private let wakeWrite: FileDescriptor
  private let stopped = Atomic(false)

  /// Creates the loop and its wake-up pipe (both ends non-blocking and
  /// close-on-exec).
  public init() throws(Errno) {
    var ends: [Int32] = [-1, -1]
    try retryingOnInterrupt { pipe(&ends) }
    wakeRead = FileDescriptor(rawValue: ends[0])
    wakeWrite = FileDescriptor(rawValue: ends[1])
    for end in [wakeRead, wakeWrite] {
      _ = fcntl(end.rawValue, F_SETFD, FD_CLOEXEC)
      try end.setNonBlocking(true)
    }
  }

  deinit {
    wakeRead.closeIgnoringErrors()
    wakeWrite.closeIgnoringErrors()
  }

  /// Whether `stop()` was called.
  public var isStopped: Bool { stopped.load(ordering: .acquiring) }

  /// Makes a turn blocked in another thread end its wait, so that the loop
  /// looks again (its next `prepare` sees what changed). Any thread; never
  /// blocks (a full pipe already holds a wake-up).
  public func wake() {
    var one: UInt8 = 1
    _ = try? retryingOnInterrupt { write(wakeWrite.rawValue, &one, 1) }
  }

  /// Ends `run` for good, in every thread running it: at once if it is
  /// waiting, else when its current handler returns. Any thread, also a
  /// handler's; idempotent.
  public func stop() {
    guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
    wake()
  }

  /// Turns until `stop()` or until `prepare` returns nil: asks `prepare`
  /// what to wait for, waits in `poll(2)`, then runs the handlers of the
  /// ready sources in their order and the turn's `afterWait`. Blocks the
  /// calling thread, which must be one we own. Throws when `poll` itself
  /// fails (not on EINTR, which it retries).
  public func run(_ prepare: () -> Turn?) throws(Errno) {
    while !isStopped {
      guard let turn = prepare() else { return }
      var fds = turn.sources.map {
        pollfd(fd: $0.descriptor.rawValue, events: $0.interest.rawValue, revents: 0)
      }
      fds.append(pollfd(fd: wakeRead.rawValue, events: Int16(POLLIN), revents: 0))
      let milliseconds = turn.timeout.map(Self.milliseconds) ?? -1
      try retryingOnInterrupt { poll(&fds, nfds_t(fds.count), milliseconds) }
      // A stop leaves the pipe full, so every thread running the loop sees it.
      if isStopped { return }
      if fds[fds.count - 1].revents != 0 { drainWakeUps() }
      for (source, polled) in zip(turn.sources, fds) where polled.revents != 0 {
        let events = Events(rawValue: polled.revents)
        var answered = false
        if events.contains(.writable), let onWritable = source.onWritable {
          onWritable()
          answered = true
          if isStopped { return }
        }
        if events.contains(.readable), let onReadable = source.onReadable {
          onReadable()
          answered = true
          if isStopped { return }
        }
        if !answered, !events.isDisjoint(with: .ended), let onHangUp = source.onHangUp {
          onHangUp(events)
          if isStopped { return }
        }
      }
      turn.afterWait?()
    }
  }

  private func drainWakeUps() {
    var bytes: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) =
      (0, 0, 0, 0, 0, 0, 0, 0)
    let size = MemoryLayout.size(ofValue: bytes)
    while (try? retryingOnInterrupt { read(wakeRead.rawValue, &bytes, size) }) == size {}
  }

  /// `timeout` in whole milliseconds for `poll(2)`, rounded up (a wait never
  /// ends before its time, which would make the loop spin), at least 0.
  static func milliseconds(_ timeout: Duration) -> Int32 {
    guard timeout > .zero else { return 0 }
    let (seconds, attoseconds) = timeout.components
    let whole = seconds.multipliedReportingOverflow(by: 1000)
    if whole.overflow || whole.partialValue >= Int64(Int32.max) { return Int32.max }
    let total = whole.partialValue + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
    return Int32(clamping: total)
  }
}
