import Foundation

@testable import BatonAgent
@testable import BatonDBus
@testable import BatonHCI
@testable import BatonHandoff
@testable import BatonHost
@testable import BatonL2CAP
@testable import BatonSystem

#if canImport(Glibc)
  import Glibc
#endif

/// A private D-Bus daemon for tests (`dbus-daemon --session`), so the sd-bus
/// wrappers and the BlueZ backend's D-Bus side run with no system bus and no
/// Bluetooth. Stopped by `stop()`.
final class PrivateBus: @unchecked Sendable {
  let address: String
  private let daemon: ChildProcess
  private let directory: URL

  init() throws {
    directory = try TestEnvironment.temporaryDirectory("baton-bus")
    let socket = directory.appendingPathComponent("bus").path
    daemon = try ChildProcess(
      "/usr/bin/dbus-daemon",
      [
        "--session", "--nofork", "--nopidfile", "--address=unix:path=\(socket)",
        "--print-address=1",
      ],
      stderrPath: "/dev/null")
    guard let line = daemon.readLine(), line.hasPrefix("unix:") else {
      daemon.stop()
      throw DBusError.closed(
        reason: "dbus-daemon printed no address (is the dbus package installed?)")
    }
    address = line
  }

  func connect() throws -> DBusConnection { try DBusConnection.connect(address: address) }

  func stop() {
    daemon.signal(SIGKILL)  // it may inherit a blocked SIGTERM from the test process
    daemon.stop()
    try? FileManager.default.removeItem(at: directory)
  }
}
