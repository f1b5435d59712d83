import BatonDBus
import BatonSystem

/// The machine's sleep and resume, from systemd-logind's `PrepareForSleep`
/// signal on the system bus (true as it goes to sleep, false once it has
/// resumed). A resumed laptop may be somewhere else, with other peers in
/// range, and its links are gone: the radio starts a scan burst
/// (baton(1), Scanning). Without a system bus or logind (a container, a
/// minimal system) there is nothing to watch and nothing is lost: the
/// links that drop on resume start a burst as well.
final class SleepWatcher: Sendable {
  static let service = "org.freedesktop.login1"
  static let path = "/org/freedesktop/login1"
  static let interface = "org.freedesktop.login1.Manager"

  private let bus: DBusConnection

  private init(bus: DBusConnection) { self.bus = bus }

  /// Subscribes to `PrepareForSleep` on `bus` and calls `resumed` (on the
  /// bus thread) each time the machine has resumed, until `close()`.
  static func start(
    bus: DBusConnection, resumed: @escaping @Sendable () -> Void
  ) async throws -> SleepWatcher {
    _ = try await bus.subscribe(
      sender: service, path: path, interface: interface, member: "PrepareForSleep"
    ) { signal in
      if signal.arguments.first?.bool == false { resumed() }
    }
    return SleepWatcher(bus: bus)
  }

  /// Watches the system bus (`DBUS_SYSTEM_BUS_ADDRESS`, else the standard
  /// socket); nil, with a debug line, where there is none.
  static func startOnSystemBus(
    log: Logger, resumed: @escaping @Sendable () -> Void
  ) async -> SleepWatcher? {
    do {
      return try await start(bus: try DBusConnection.system(), resumed: resumed)
    } catch {
      log.debug("not watching for resume from suspend (no system bus: \(error))")
      return nil
    }
  }

  func close() { bus.close() }
}
