#if canImport(Glibc)
  import Glibc
#endif

/// Tells systemd how the service is doing (the unit is `Type=notify`), by
/// the protocol of `sd_notify(3)`: one datagram of `KEY=VALUE` lines to the
/// socket named by `NOTIFY_SOCKET`, a path or "@" and an abstract name.
/// systemd documents the protocol as stable and shows it written by hand
/// for daemons that do not link libsystemd; done here, an agent under
/// systemd does not load libsystemd until it talks to D-Bus. Without
/// `NOTIFY_SOCKET` (not started by systemd) every call is a no-op.
public struct SystemdNotifier: Sendable {
  /// Where the notifications go: `NOTIFY_SOCKET` as systemd set it, or nil.
  public let socket: String?

  public init(socket: String? = SystemdNotifier.socketFromEnvironment()) {
    self.socket = socket
  }

  /// `NOTIFY_SOCKET` when it names a UNIX socket, a path or an abstract
  /// name (systemd's `vsock:` addresses are for virtual machines and are
  /// not supported).
  public static func socketFromEnvironment() -> String? {
    guard let value = getenv("NOTIFY_SOCKET") else { return nil }
    let socket = String(cString: value)
    return socket.hasPrefix("/") || socket.hasPrefix("@") ? socket : nil
  }

  /// Sends one or more `KEY=VALUE` assignments, newline-separated.
  /// Returns false when nothing was sent (no systemd, or an error).
  @discardableResult
  public func notify(_ assignments: [String]) -> Bool {
    guard let socket else { return false }
    let text = assignments.joined(separator: "\n")
    do {
      try UnixSocket.sendDatagram(Array(text.utf8), to: socket)
      return true
    } catch {
      return false
    }
  }

  /// `READY=1` with a `STATUS=` line: startup or a reload has finished.
  @discardableResult
  public func ready(status: String) -> Bool {
    notify(["READY=1", "STATUS=\(SystemdNotifier.oneLine(status))"])
  }

  /// `STATUS=...`: free text shown by `systemctl status`.
  @discardableResult
  public func status(_ text: String) -> Bool {
    notify(["STATUS=\(SystemdNotifier.oneLine(text))"])
  }

  /// `RELOADING=1` with `MONOTONIC_USEC=` (which newer systemd requires for
  /// reloads), then `ready(status:)` once the reload is done.
  @discardableResult
  public func reloading() -> Bool {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    let microseconds = UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000
    return notify(["RELOADING=1", "MONOTONIC_USEC=\(microseconds)", "STATUS=Reloading"])
  }

  /// `STOPPING=1`: a graceful stop has begun.
  @discardableResult
  public func stopping() -> Bool { notify(["STOPPING=1", "STATUS=Stopping"]) }

  private static func oneLine(_ text: String) -> String {
    String(text.map { $0.isNewline ? " " : $0 })
  }
}
