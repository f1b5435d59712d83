import BatonHandoff
import BatonSystem

/// What the desktop is shown of the notes that arrive, by each folder's
/// `notify` (baton.conf(5)): decided here, without I/O; `DesktopNotifier`
/// sends it to the session's notification service.
///
/// A peer has one notification at a time, as Handoff shows one icon per
/// device: each notice of a peer replaces its last one. With `current`, a
/// peer's current activity is shown as it arrives, and the notes a
/// catch-up brings are not. With `all`, every note written from a peer is,
/// and the peer's notification counts them until it is closed.
struct NotificationPlan {
  /// A folder, as far as notifications go.
  struct Folder: Sendable, Equatable {
    var name: String
    var root: String
    var mode: NotificationMode
    /// What the Open action runs, the file added.
    var open: [String]

    init(_ folder: FolderConfiguration) {
      name = folder.name
      root = folder.path
      mode = folder.notify
      open = folder.openCommand
    }
  }

  /// One notification to show.
  struct Notice: Sendable, Equatable {
    /// Whose notification it is (and replaces).
    var peer: String
    /// The note's title: the notification's summary, plain text.
    var summary: String
    /// "from PEER", with a count under `all`; escaped for the body's markup.
    var body: String
    /// The note's file, for the Open action.
    var file: String
    var activityType: String
    var folder: Folder
  }

  /// The longest summary shown, in bytes: a title is one line of a note,
  /// which may be long.
  static let maximumSummaryBytes = 200

  private let folders: [String: Folder]
  /// Notes shown in each peer's open notification (`all`).
  private var counts: [String: Int] = [:]

  /// `folders` by activity type.
  init(folders: [String: Folder]) {
    self.folders = folders
  }

  /// Whether any folder shows anything.
  var showsAnything: Bool { folders.values.contains { $0.mode != .none } }

  /// The notice for `arrival`, or nil when its folder shows none for it.
  mutating func arrived(_ arrival: Arrival) -> Notice? {
    switch arrival {
    case .handedOver(let activity):
      guard let folder = folders[activity.activityType], folder.mode == .current else { return nil }
      return notice(
        peer: activity.peerName, title: activity.title, path: activity.path,
        activityType: activity.activityType, folder: folder, more: 0)
    case .written(let note):
      guard let folder = folders[note.activityType], folder.mode == .all else { return nil }
      let count = (counts[note.peer] ?? 0).addingReportingOverflow(1)
      let shown = count.overflow ? Int.max : count.partialValue
      counts[note.peer] = shown
      return notice(
        peer: note.peer, title: note.title, path: note.path, activityType: note.activityType,
        folder: folder, more: shown - 1)
    }
  }

  /// The peer's notification was closed: its count starts again.
  mutating func closed(peer: String) {
    counts[peer] = nil
  }

  private func notice(
    peer: String, title: String, path: String, activityType: String, folder: Folder, more: Int
  ) -> Notice {
    let name = String(path.split(separator: "/").last ?? Substring(path))
    let line = title.isEmpty ? name : title
    let from = "from " + Self.escapingMarkup(peer)
    let body =
      switch more {
      case 0: from
      case 1: from + ", and 1 more note"
      default: from + ", and \(more) more notes"
      }
    return Notice(
      peer: peer, summary: Self.plain(line).prefix(utf8Bytes: Self.maximumSummaryBytes),
      body: body, file: folder.root + "/" + path, activityType: activityType, folder: folder)
  }

  /// Text without control characters (a title from a peer may hold any).
  static func plain(_ text: String) -> String {
    String(String.UnicodeScalarView(text.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F }))
  }

  /// The body may be markup (the Desktop Notifications Specification's
  /// `body-markup`): a peer's name is text, so `&`, `<` and `>` are escaped.
  static func escapingMarkup(_ text: String) -> String {
    var out = ""
    for c in plain(text) {
      switch c {
      case "&": out += "&amp;"
      case "<": out += "&lt;"
      case ">": out += "&gt;"
      default: out.append(c)
      }
    }
    return out
  }
}
