import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// Desktop notifications (issue 28) with real agents on the simulated radio
/// and a stand-in notification service on a private session bus: a note
/// A saves is shown on B with its title and A's name, and the notification's
/// Open action runs B's `open-command` on the file.
@Suite(.serialized) struct NotificationEndToEndTests {
  @Test func aHandedOverNoteIsShownAndItsOpenActionOpensTheFile() async throws {
    let bus = try PrivateBus()
    defer { bus.stop() }
    let service = try await FakeNotificationService(bus: bus)
    defer { service.stop() }
    let group = try AgentGroup(count: 2)
    let (a, b) = (group.agents[0], group.agents[1])
    let base = group.base.path
    let opened = base + "/opened.log"
    try ("#!/bin/sh\nprintf '%s|%s\\n' \"$*\" \"$BATON_PEER\" >> '\(opened)'\n").write(
      toFile: base + "/open.sh", atomically: true, encoding: .utf8)
    chmod(base + "/open.sh", 0o755)
    b.sessionBus = bus.address
    b.folderSettings = ["open-command = \(base)/open.sh --from-test"]
    try group.startAll()
    #expect(await linked(a, to: ["agentB"]), "\(group.logs)")
    #expect(await linked(b, to: ["agentA"]), "\(group.logs)")

    try a.save("first.md", "First <title> & more\nwritten on A\n")
    #expect(await eventually(30, "first.md on B") { b.read("first.md") != nil }, "\(group.logs)")
    #expect(
      await eventually(30, "B's notification") {
        service.notifications.contains { $0.summary == "First <title> & more" }
      }, "\(service.notifications) \(group.logs)")
    let shown = try #require(service.notifications.last)
    #expect(shown.appName == "baton")
    #expect(shown.body == "from agentA")
    #expect(shown.actions == ["default", "Open", "open", "Open"])

    // B takes the id from Notify's reply, on a task of its own, after the
    // service has recorded the notification; a click before that finds no
    // notification of B's (no person clicks so fast). So wait for B's word.
    #expect(
      await eventually(30, "B took the first notification's id") {
        b.log.contains("notified \"First <title> & more\"")
      }, "\(group.logs)")
    // The Open button runs the open-command with the file.
    try await service.invoke(shown.id, action: "open")
    let file = b.notes.path + "/first.md"
    #expect(
      await eventually(30, "the open-command ran") {
        lines(opened) == ["--from-test \(file)|agentA"]
      }, "\(lines(opened)) \(group.logs)")

    // The next note replaces A's notification rather than adding one.
    try a.save("second.md", "Second\n")
    #expect(
      await eventually(30, "the second notification") {
        service.notifications.contains { $0.summary == "Second" }
      }, "\(service.notifications) \(group.logs)")
    #expect(service.notifications.last?.replaces == shown.id, "\(service.notifications)")
    #expect(
      await eventually(30, "B took the second notification's id") {
        b.log.contains("notified \"Second\"")
      }, "\(group.logs)")
    // An action on a notification baton did not send opens nothing.
    try await service.invoke(999, action: "open")
    try await service.invoke(shown.id, action: "default")
    #expect(
      await eventually(30, "the click opened the second file") {
        lines(opened).last == "--from-test \(b.notes.path)/second.md|agentA"
      }, "\(lines(opened)) \(group.logs)")
    #expect(lines(opened).count == 2, "\(lines(opened))")
    // A has no session bus: it showed nothing, and runs on.
    #expect(service.notifications.allSatisfy { $0.body == "from agentA" })
    #expect(a.log.contains("desktop notifications are off"), "\(a.log)")
  }

  private func lines(_ path: String) -> [String] {
    ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(separator: "\n").map(
      String.init)
  }
}
