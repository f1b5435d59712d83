import CBatonShims
import FoundationEssentials

#if canImport(Glibc)
  import Glibc
#endif

/// A POSIX signal number, in the style of swift-system.
public struct UnixSignal: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
  public let rawValue: Int32
  public init(rawValue: Int32) { self.rawValue = rawValue }

  /// The corresponding C constant is `SIGTERM`.
  public static let terminate = UnixSignal(rawValue: SIGTERM)
  /// The corresponding C constant is `SIGINT`.
  public static let interrupt = UnixSignal(rawValue: SIGINT)
  /// The corresponding C constant is `SIGHUP`.
  public static let hangUp = UnixSignal(rawValue: SIGHUP)
  /// The corresponding C constant is `SIGPIPE`.
  public static let brokenPipe = UnixSignal(rawValue: SIGPIPE)

  /// The signals a daemon handles: stop (SIGTERM, SIGINT) and reload (SIGHUP).
  public static let daemonSignals: [UnixSignal] = [.terminate, .interrupt, .hangUp]

  public var description: String {
    switch rawValue {
    case SIGTERM: "SIGTERM"
    case SIGINT: "SIGINT"
    case SIGHUP: "SIGHUP"
    case SIGPIPE: "SIGPIPE"
    default: "signal \(rawValue)"
    }
  }
}

/// Signals delivered as an `AsyncStream`, without losing any.
///
/// `DispatchSource.makeSignalSource` loses signals on this platform (one sent
/// right after `activate()`, or the first of two sent back to back). What
/// holds: block the signals with `pthread_sigmask` in `main` before any other
/// thread exists (threads inherit the mask, so no thread ever runs a handler),
/// then let one dedicated thread loop on `sigwait(3)` and feed the stream.
/// The thread sleeps in `sigwait` until a signal arrives: no periodic wake-ups.
public enum SignalStream {
  /// Blocks `signals` in the calling thread (and so in every thread it starts
  /// later). Call it first thing in `main`, before any thread exists.
  public static func block(_ signals: [UnixSignal]) {
    var set = makeSet(signals)
    pthread_sigmask(SIG_BLOCK, &set, nil)
  }

  /// Unblocks `signals` in the calling thread (for commands that are not the
  /// daemon and should die on Ctrl-C as usual).
  public static func unblock(_ signals: [UnixSignal]) {
    var set = makeSet(signals)
    pthread_sigmask(SIG_UNBLOCK, &set, nil)
  }

  /// Ignores SIGPIPE process-wide, so a client that hangs up mid-reply gives
  /// EPIPE instead of killing the daemon.
  public static func ignoreBrokenPipe() {
    signal(SIGPIPE, SIG_IGN)
  }

  /// Starts the `sigwait` thread for `signals` (which must already be blocked
  /// in every thread) and returns the stream of arriving signals. The thread
  /// lives as long as the process.
  public static func stream(_ signals: [UnixSignal]) -> AsyncStream<UnixSignal> {
    let (stream, continuation) = AsyncStream<UnixSignal>.makeStream()
    let numbers = signals.map(\.rawValue)
    OwnedThread.start(name: "baton-signals") {
      baton_set_thread_name("baton-signals")
      var set = signalSet(numbers)
      while true {
        var number: Int32 = 0
        // sigwait returns an error number rather than setting errno; it can
        // only fail for an invalid set, which this is not.
        guard sigwait(&set, &number) == 0 else { continue }
        continuation.yield(UnixSignal(rawValue: number))
      }
    }
    return stream
  }

  private static func makeSet(_ signals: [UnixSignal]) -> sigset_t {
    signalSet(signals.map(\.rawValue))
  }
}

/// A `sigset_t` holding exactly `numbers`.
private func signalSet(_ numbers: [Int32]) -> sigset_t {
  var set = sigset_t()
  sigemptyset(&set)
  for number in numbers { sigaddset(&set, number) }
  return set
}
