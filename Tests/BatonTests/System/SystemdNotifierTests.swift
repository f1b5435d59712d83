import Foundation
import Testing

@testable import BatonSystem

/// `SystemdNotifier` speaks sd_notify's protocol itself: one datagram to the
/// socket `NOTIFY_SOCKET` names, a path or an abstract name.
@Suite struct SystemdNotifierTests {
  @Test func notifiesASocketAtAPath() throws {
    let directory = try TestEnvironment.temporaryDirectory("baton-notify")
    defer { try? FileManager.default.removeItem(at: directory) }
    let path = directory.path + "/notify"
    let receiver = DatagramReceiver(path)
    let notifier = SystemdNotifier(socket: path)
    #expect(notifier.ready(status: "Running\nas desk"))
    #expect(receiver.receive() == "READY=1\nSTATUS=Running as desk")
    #expect(notifier.stopping())
    #expect(receiver.receive() == "STOPPING=1\nSTATUS=Stopping")
  }

  @Test func notifiesAnAbstractSocket() throws {
    let name = "@baton-notify-test-\(getpid())-\(UInt32.random(in: 0 ... .max))"
    let receiver = DatagramReceiver(name)
    #expect(SystemdNotifier(socket: name).status("Catching up"))
    #expect(receiver.receive() == "STATUS=Catching up")
  }

  @Test func withoutASocketOrWithADeadOneNothingIsSent() throws {
    #expect(!SystemdNotifier(socket: nil).ready(status: "Running"))
    let directory = try TestEnvironment.temporaryDirectory("baton-notify")
    defer { try? FileManager.default.removeItem(at: directory) }
    #expect(!SystemdNotifier(socket: directory.path + "/nobody").ready(status: "Running"))
  }
}
