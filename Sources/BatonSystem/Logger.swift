import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// One line per event on stderr, each prefixed with its syslog priority
/// (`<3>` error ... `<7>` debug) so that journald files it at the right level
/// (sd-daemon(3)). Debug lines are written only when verbose logging is on.
public struct Logger: Sendable {
  /// syslog(3) priorities. The corresponding C constants are `LOG_ERR` ...
  public enum Priority: Int32, Sendable, Comparable, CustomStringConvertible {
    case error = 3, warning = 4, notice = 5, info = 6, debug = 7
    public static func < (a: Priority, b: Priority) -> Bool { a.rawValue < b.rawValue }
    public var description: String {
      switch self {
      case .error: "error"
      case .warning: "warning"
      case .notice: "notice"
      case .info: "info"
      case .debug: "debug"
      }
    }
  }

  /// Where lines go: stderr by default; tests install a capturing sink.
  public final class Sink: Sendable {
    private struct State {
      var threshold: Priority = .info
      var handler: (@Sendable (Priority, String) -> Void)?
    }
    private let state = Mutex(State())

    /// Lines above this priority (numerically) are dropped; `.debug` shows all.
    public var threshold: Priority {
      get { state.withLock { $0.threshold } }
      set { state.withLock { $0.threshold = newValue } }
    }

    /// Replaces stderr output with `handler` (nil restores stderr).
    public func capture(_ handler: (@Sendable (Priority, String) -> Void)?) {
      state.withLock { $0.handler = handler }
    }

    func emit(_ priority: Priority, _ line: String) {
      let (threshold, handler) = state.withLock { ($0.threshold, $0.handler) }
      guard priority <= threshold else { return }
      if let handler {
        handler(priority, line)
        return
      }
      // One write(2) per line so lines from several threads never interleave.
      let text = Array("<\(priority.rawValue)>\(line)\n".utf8)
      text.withUnsafeBytes { _ = Glibc.write(2, $0.baseAddress, $0.count) }
    }
  }

  /// The process-wide sink.
  public static let sink = Sink()

  /// The subsystem, printed before each message ("notes: ...").
  public let label: String

  public init(label: String) { self.label = label }

  /// Logs one line. The message is escaped (`escapedForDisplay`), so text
  /// from a peer can never start a line of its own, forge a priority or
  /// reach a terminal as an escape sequence.
  public func log(_ priority: Priority, _ message: @autoclosure () -> String) {
    guard priority <= Logger.sink.threshold else { return }
    Logger.sink.emit(priority, line(message()))
  }

  /// The line written for `message`: the label, then the escaped message.
  func line(_ message: String) -> String {
    "\(label): \(message)".escapedForDisplay
  }

  public func error(_ message: @autoclosure () -> String) { log(.error, message()) }
  public func warning(_ message: @autoclosure () -> String) { log(.warning, message()) }
  public func notice(_ message: @autoclosure () -> String) { log(.notice, message()) }
  public func info(_ message: @autoclosure () -> String) { log(.info, message()) }
  public func debug(_ message: @autoclosure () -> String) { log(.debug, message()) }
}
