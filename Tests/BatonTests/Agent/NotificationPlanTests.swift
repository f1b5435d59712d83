import Foundation
import Testing

@testable import BatonAgent
@testable import BatonHandoff
@testable import BatonSystem

/// What each folder's `notify` shows of the notes that arrive.
@Suite struct NotificationPlanTests {
  static func plan(_ mode: NotificationMode, open: [String]? = nil) -> NotificationPlan {
    var folder = FolderConfiguration(name: "notes", path: "/home/u/notes")
    folder.notify = mode
    if let open { folder.openCommand = open }
    return NotificationPlan(folders: [folder.activityType: NotificationPlan.Folder(folder)])
  }

  static func handedOver(_ path: String, title: String, peer: String = "laptop") -> Arrival {
    .handedOver(
      HandedOverActivity(
        peerDevice: DeviceID(rawValue: 7), peerName: peer,
        activityType: "org.baton.note", path: path, title: title, time: Date()))
  }

  static func written(_ path: String, title: String, peer: String = "laptop") -> Arrival {
    .written(
      IncomingActivity(
        activityType: "org.baton.note", path: path, hash: ContentHash(of: Array(path.utf8)),
        size: 10, peer: peer, origin: peer, title: title))
  }

  @Test func currentShowsTheHandedOverActivityOnly() throws {
    var plan = Self.plan(.current)
    #expect(plan.arrived(Self.written("old.md", title: "Old")) == nil)
    let now = plan.arrived(Self.handedOver("sub/now.md", title: "Now"))
    let notice = try #require(now)
    #expect(notice.summary == "Now" && notice.body == "from laptop")
    #expect(notice.file == "/home/u/notes/sub/now.md")
    #expect(notice.folder.open == ["xdg-open"])
    // Another folder's type shows nothing.
    let other = Arrival.handedOver(
      HandedOverActivity(
        peerDevice: DeviceID(rawValue: 7), peerName: "laptop",
        activityType: "org.example.other", path: "x.md", title: "X", time: Date()))
    #expect(plan.arrived(other) == nil)
  }

  @Test func allCountsAPeersNotesUntilItsNotificationIsClosed() throws {
    var plan = Self.plan(.all, open: ["/usr/bin/gedit"])
    #expect(plan.arrived(Self.handedOver("now.md", title: "Now")) == nil)
    #expect(plan.arrived(Self.written("a.md", title: "A"))?.body == "from laptop")
    #expect(plan.arrived(Self.written("b.md", title: "B"))?.body == "from laptop, and 1 more note")
    let c = plan.arrived(Self.written("c.md", title: ""))
    let third = try #require(c)
    #expect(third.body == "from laptop, and 2 more notes")
    #expect(third.summary == "c.md", "an untitled note is shown by its file name")
    #expect(third.folder.open == ["/usr/bin/gedit"])
    #expect(plan.arrived(Self.written("d.md", title: "D", peer: "desk"))?.body == "from desk")
    plan.closed(peer: "laptop")
    #expect(plan.arrived(Self.written("e.md", title: "E"))?.body == "from laptop")
  }

  @Test func noneShowsNothing() {
    var plan = Self.plan(.none)
    #expect(!plan.showsAnything)
    #expect(plan.arrived(Self.handedOver("now.md", title: "Now")) == nil)
    #expect(plan.arrived(Self.written("a.md", title: "A")) == nil)
  }

  @Test func aPeersTextIsNeitherMarkupNorControlCharacters() throws {
    var plan = Self.plan(.current)
    let long = String(repeating: "é", count: 300)
    let hostile = plan.arrived(
      Self.handedOver("x.md", title: "Bell\u{7}\u{1B}[31m" + long, peer: "<b>evil</b> & co"))
    let notice = try #require(hostile)
    #expect(notice.body == "from &lt;b&gt;evil&lt;/b&gt; &amp; co")
    #expect(notice.summary.hasPrefix("Bell[31m"))
    #expect(notice.summary.utf8.count <= NotificationPlan.maximumSummaryBytes)
  }

  /// Under systemd the opener leaves the agent's sandbox as a transient
  /// unit, with its environment; elsewhere it runs as configured.
  @Test func theOpenerRunsOutsideTheAgentsUnit() {
    let command = ["xdg-open", "/home/u/notes/a b.md"]
    let environment = ["BATON_PEER": "laptop", "BATON_FILE": "/home/u/notes/a b.md"]
    #expect(DesktopNotifier.outsideTheUnit(command, environment: environment, agent: [:]) == command)
    #expect(
      DesktopNotifier.outsideTheUnit(
        command, environment: environment, agent: ["INVOCATION_ID": "0f3c"]) == [
          "systemd-run", "--user", "--collect", "--quiet", "--setenv=BATON_FILE=/home/u/notes/a b.md",
          "--setenv=BATON_PEER=laptop", "--", "xdg-open", "/home/u/notes/a b.md",
        ])
  }

  @Test func aSessionBusIsLookedForBeforeLibsystemdIsLoaded() throws {
    #expect(DesktopNotifier.sessionBusMayExist(["DBUS_SESSION_BUS_ADDRESS": "unix:path=/x"]))
    #expect(!DesktopNotifier.sessionBusMayExist([:]))
    let runtime = try TestEnvironment.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: runtime) }
    #expect(!DesktopNotifier.sessionBusMayExist(["XDG_RUNTIME_DIR": runtime.path]))
    let listener = try UnixSocket.listen(path: runtime.path + "/bus")
    defer { listener.close() }
    #expect(DesktopNotifier.sessionBusMayExist(["XDG_RUNTIME_DIR": runtime.path]))
  }
}
