import CSystemd

#if canImport(Glibc)
  import Glibc
#endif

/// Tells systemd how the service is doing, through `sd_notify(3)` from
/// libsystemd (the unit is `Type=notify`). Without `NOTIFY_SOCKET` in the
/// environment (not started by systemd) every call is a no-op.
public struct SystemdNotifier: Sendable {
  public init() {}

  /// Sends one or more `KEY=VALUE` assignments, newline-separated.
  /// Returns false when nothing was sent (no systemd, or an error).
  @discardableResult
  public func notify(_ assignments: [String]) -> Bool {
    let text = assignments.joined(separator: "\n")
    return sd_notify(0, text) > 0
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
