import BatonDBus
import BatonHandoff
import BatonSystem
import FoundationEssentials
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Desktop notifications of the notes that arrive: the freedesktop
/// Notifications service (`org.freedesktop.Notifications`, the Desktop
/// Notifications Specification) on the user's session bus, with an "Open"
/// action that runs the folder's `open-command` on the note's file, as
/// Handoff's icon continues an activity. What is shown is decided by
/// `NotificationPlan`; this type sends it and answers the service's
/// signals.
///
/// Without a session bus (a headless machine, a system service), or
/// without a notification service on it, nothing is shown and nothing
/// else changes: that is said once, at debug level.
///
/// `arrived` is called on the engine's thread and returns at once: the
/// call to the service is asynchronous, one at a time per peer, and a
/// notice that arrives meanwhile replaces the one waiting (a catch-up
/// under `notify = all` updates the peer's notification, it does not queue
/// ten thousand).
final class DesktopNotifier: Sendable {
  static let service = "org.freedesktop.Notifications"
  static let path = "/org/freedesktop/Notifications"
  /// The action a click on the notification itself sends, and ours.
  static let actions = ["default", "Open", "open", "Open"]

  private struct State {
    var plan: NotificationPlan
    /// Notifications shown and not closed, by the service's id.
    var shown: [UInt32: NotificationPlan.Notice] = [:]
    /// Each peer's notification, which its next notice replaces.
    var peerIDs: [String: UInt32] = [:]
    /// Peers whose Notify call is under way, and the notice waiting after it.
    var sending: Set<String> = []
    var waiting: [String: NotificationPlan.Notice] = [:]
    var warned: Set<String> = []
  }

  private let bus: DBusConnection
  private let state: Mutex<State>
  private let log = Logger(label: "notify")

  private init(bus: DBusConnection, plan: NotificationPlan) {
    self.bus = bus
    state = Mutex(State(plan: plan))
  }

  /// Connects to the session bus and listens to the service's signals; nil
  /// when no folder shows notifications or there is no session bus.
  static func start(_ folders: [FolderConfiguration]) async -> DesktopNotifier? {
    var byType: [String: NotificationPlan.Folder] = [:]
    for folder in folders { byType[folder.activityType] = NotificationPlan.Folder(folder) }
    let plan = NotificationPlan(folders: byType)
    guard plan.showsAnything else { return nil }
    let log = Logger(label: "notify")
    guard sessionBusMayExist(ProcessInfo.processInfo.environment) else {
      log.debug(
        "no session bus (neither DBUS_SESSION_BUS_ADDRESS nor $XDG_RUNTIME_DIR/bus):"
          + " desktop notifications are off")
      return nil
    }
    let bus: DBusConnection
    do {
      bus = try DBusConnection.session()
    } catch {
      log.debug("no session bus (\(error)): desktop notifications are off")
      return nil
    }
    let notifier = DesktopNotifier(bus: bus, plan: plan)
    do {
      _ = try await bus.subscribe(
        sender: service, path: path, interface: service, member: "ActionInvoked"
      ) { [weak notifier] signal in notifier?.actionInvoked(signal.arguments) }
      _ = try await bus.subscribe(
        sender: service, path: path, interface: service, member: "NotificationClosed"
      ) { [weak notifier] signal in notifier?.closed(signal.arguments) }
    } catch {
      log.debug("\(bus.label): \(error): desktop notifications are off")
      bus.close()
      return nil
    }
    return notifier
  }

  /// Whether a session bus may be there, asked before libsystemd is loaded:
  /// an agent with no desktop does not map it for nothing.
  static func sessionBusMayExist(_ environment: [String: String]) -> Bool {
    if let address = environment["DBUS_SESSION_BUS_ADDRESS"], !address.isEmpty { return true }
    guard let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty else { return false }
    var info = stat()
    return stat(runtime + "/bus", &info) == 0 && info.st_mode & S_IFMT == S_IFSOCK
  }

  /// Ends the connection (the notifications shown stay, their actions do nothing).
  func close() {
    bus.close()
  }

  /// A note arrived (`HandoffEngine.onArrival`).
  func arrived(_ arrival: Arrival) {
    let start = state.withLock { s -> NotificationPlan.Notice? in
      guard let notice = s.plan.arrived(arrival) else { return nil }
      if s.sending.contains(notice.peer) {
        s.waiting[notice.peer] = notice
        return nil
      }
      s.sending.insert(notice.peer)
      return notice
    }
    guard let start else { return }
    Task { await send(start) }
  }

  private func send(_ first: NotificationPlan.Notice) async {
    var notice = first
    while true {
      let replaces = state.withLock { $0.peerIDs[notice.peer] ?? 0 }
      do {
        let reply = try await bus.call(
          Self.service, Self.path, Self.service, "Notify",
          [
            .string("baton"), .uint32(replaces), .string(""), .string(notice.summary),
            .string(notice.body), .array(elementSignature: "s", Self.actions.map { .string($0) }),
            .array(
              elementSignature: "{sv}",
              [.dictEntry(.string("category"), .variant(.string("transfer.complete")))]),
            .int32(-1),
          ], timeout: .seconds(10))
        if let id = reply.first?.integer.flatMap(UInt32.init(exactly:)) {
          state.withLock { s in
            if let old = s.peerIDs[notice.peer], old != id { s.shown[old] = nil }
            s.peerIDs[notice.peer] = id
            s.shown[id] = notice
          }
          log.debug("notified \"\(notice.summary)\" \(notice.body) (id \(id))")
        }
      } catch DBusError.closed {
        // The agent stops or reloads: nothing more to show.
      } catch let error as DBusError where error.isServiceUnknown {
        once("no notification service on \(bus.label): desktop notifications are not shown") {
          log.debug($0)
        }
      } catch {
        once("\(bus.label): Notify failed: \(error)") { log.warning($0) }
      }
      let next = state.withLock { s -> NotificationPlan.Notice? in
        if let waiting = s.waiting.removeValue(forKey: notice.peer) { return waiting }
        s.sending.remove(notice.peer)
        return nil
      }
      guard let next else { return }
      notice = next
    }
  }

  /// `ActionInvoked(u id, s action_key)`: a click on the notification or
  /// its Open button opens the note. On the bus thread.
  private func actionInvoked(_ arguments: [DBusValue]) {
    guard arguments.count == 2, let id = arguments[0].integer.flatMap(UInt32.init(exactly:)),
      let key = arguments[1].string, key == "default" || key == "open"
    else { return }
    guard let notice = state.withLock({ $0.shown[id] }) else { return }
    let command = notice.folder.open + [notice.file]
    let environment = [
      "BATON_FOLDER": notice.folder.name, "BATON_ACTIVITY_TYPE": notice.activityType,
      "BATON_FILE": notice.file, "BATON_PEER": notice.peer,
    ]
    let outside = Self.outsideTheUnit(
      command, environment: environment, agent: ProcessInfo.processInfo.environment)
    var error = ChildCommand.launch(outside, environment: environment)
    if error == .noEntry, outside != command {
      error = ChildCommand.launch(command, environment: environment)  // no systemd-run here
    }
    if let error {
      log.warning(
        "could not open \(notice.file) with \(command[0]) (open-command of [folder \(notice.folder.name)]): \(error)"
      )
    } else {
      log.info("opened \(notice.file) with \(command[0])")
    }
  }

  /// The Open action's command line. Under systemd (`INVOCATION_ID` is
  /// set for every unit), the program is started by the user's service
  /// manager as a transient unit of its own (`systemd-run --user`): an
  /// editor or browser must not inherit the agent's sandbox (the shipped
  /// unit's MemoryDenyWriteExecute breaks JIT compilers, and its address
  /// families keep it off the network). Its environment comes with it.
  static func outsideTheUnit(
    _ command: [String], environment: [String: String], agent: [String: String]
  ) -> [String] {
    guard let invocation = agent["INVOCATION_ID"], !invocation.isEmpty else { return command }
    let settings = environment.sorted { $0.key < $1.key }.map { "--setenv=\($0.key)=\($0.value)" }
    return ["systemd-run", "--user", "--collect", "--quiet"] + settings + ["--"] + command
  }

  /// `NotificationClosed(u id, u reason)`. On the bus thread.
  private func closed(_ arguments: [DBusValue]) {
    guard let id = arguments.first?.integer.flatMap(UInt32.init(exactly:)) else { return }
    state.withLock { s in
      guard let notice = s.shown.removeValue(forKey: id) else { return }
      if s.peerIDs[notice.peer] == id {
        s.peerIDs[notice.peer] = nil
        s.plan.closed(peer: notice.peer)
      }
    }
  }

  private func once(_ message: String, _ say: (String) -> Void) {
    if state.withLock({ $0.warned.count < 16 && $0.warned.insert(message).inserted }) { say(message) }
  }
}
