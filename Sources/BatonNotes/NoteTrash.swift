import BatonSystem
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// One version kept in a folder's trash, as `baton trash` lists it.
public struct NoteTrashEntry: Sendable, Equatable, Codable {
  /// The day folder (`yyyy-mm-dd`, UTC).
  public var day: String
  /// The note's path in the folder it was taken from.
  public var path: String
  /// Its path in the trash, relative to the folder (`.baton-trash/DAY/...`).
  public var trashPath: String
  public var size: Int
  public var reason: NoteTrashReason

  public init(day: String, path: String, trashPath: String, size: Int, reason: NoteTrashReason) {
    self.day = day
    self.path = path
    self.trashPath = trashPath
    self.size = size
    self.reason = reason
  }
}

/// Why a version is in the trash.
public enum NoteTrashReason: String, Sendable, Equatable, Codable {
  /// The note was deleted on a peer.
  case deleted
  /// A peer's newer version (or `baton restore`) replaced it.
  case overwritten
}

/// A folder's trash, `.baton-trash/<UTC yyyy-mm-dd>/<path>`: what each
/// version is (a line per version in the day's `.reasons` sidecar:
/// `deleted|overwritten TAB name-in-day TAB path`; a version with no line
/// is a deletion at its own path), its listing, and the size cap
/// (`trash-size`): once the versions kept weigh more, the oldest go first
/// (by day, then by the time each entered the trash) until they weigh at
/// most nine tenths of it.
final class NoteTrash: Sendable {
  let root: String
  /// The cap in bytes; 0: none.
  let capacity: Int
  /// The bytes in the trash, once counted (nil: not counted yet).
  private let total = Mutex<Int?>(nil)
  private let log = Logger(label: "notes")

  static let folder = ".baton-trash"
  static let reasons = ".reasons"

  init(root: String, capacity: Int) {
    self.root = root
    self.capacity = capacity
  }

  private var path: String { NoteFile.join(root, Self.folder) }

  /// Records why the version at `name` (its path in the day folder) is
  /// there. An append of one line, not synced: the reason is for the
  /// listing; a version without it lists as deleted.
  func record(_ reason: NoteTrashReason, day: String, name: String, original: String) {
    guard !(name + original).contains(where: { $0 == "\t" || $0 == "\n" }) else { return }
    let file = path + "/" + day + "/" + Self.reasons
    guard
      let fd = try? FileDescriptor.open(
        file, [.writeOnly, .append, .create, .noFollow], permissions: 0o644)
    else { return }
    defer { fd.closeIgnoringErrors() }
    let line = Array("\(reason.rawValue)\t\(name)\t\(original)\n".utf8)
    _ = try? line.withUnsafeBytes { try fd.write($0) }
  }

  /// Counts `bytes` more in the trash; past the cap, removes the oldest
  /// versions until the rest fit.
  func added(_ bytes: Int) {
    guard capacity > 0 else { return }
    let over = total.withLock { total -> Bool in
      guard let counted = total else { return true }
      let (sum, overflow) = counted.addingReportingOverflow(bytes)
      total = overflow ? Int.max : sum
      return total! > capacity
    }
    if over { trim() }
  }

  /// When the trash weighs more than the cap, removes the oldest versions
  /// until it weighs at most nine tenths of it (so that the next versions
  /// do not each cost a walk of the trash); returns how many went and
  /// their bytes.
  @discardableResult
  func trim() -> (count: Int, bytes: Int) {
    var files = versions()
    var sum = files.reduce(0) { $0 &+ $1.size }
    var removed = (count: 0, bytes: 0)
    if capacity > 0 && sum > capacity {
      let target = capacity - capacity / 10
      files.sort { ($0.day, $0.changed, $0.path) < ($1.day, $1.changed, $1.path) }
      for file in files where sum > target {
        guard unlink(path + "/" + file.path) == 0 else { continue }
        sum -= file.size
        removed.count += 1
        removed.bytes += file.size
      }
      for (day, kind) in NoteFile.list(path) where kind == .directory && NoteWriter.isDay(day) {
        if removeEmptyFolders(path + "/" + day, isDay: true) { _ = rmdir(path + "/" + day) }
      }
      log.notice(
        "trash over trash-size (\(capacity) bytes): removed its \(removed.count) oldest versions"
          + " (\(removed.bytes) bytes), \(sum) bytes kept")
    }
    total.withLock { $0 = sum }
    return removed
  }

  /// Every version kept, newest day first, in the order each day's
  /// versions entered the trash.
  func entries() -> [NoteTrashEntry] {
    var result: [NoteTrashEntry] = []
    for (day, _) in NoteFile.list(path).filter({ $0.kind == .directory && NoteWriter.isDay($0.name) })
      .sorted(by: { $0.name > $1.name })
    {
      let why = reasons(day)
      var files = versions(in: day)
      files.sort { ($0.changed, $0.path) < ($1.changed, $1.path) }
      for file in files {
        let name = String(file.path.dropFirst(day.count + 1))
        let (reason, original) = why[name] ?? (.deleted, name)
        result.append(
          NoteTrashEntry(
            day: day, path: original, trashPath: Self.folder + "/" + file.path, size: file.size,
            reason: reason))
      }
    }
    return result
  }

  /// The day's sidecar: name in the day folder -> reason and path.
  private func reasons(_ day: String) -> [String: (NoteTrashReason, String)] {
    var result: [String: (NoteTrashReason, String)] = [:]
    guard
      let fd = try? FileDescriptor.open(
        path + "/" + day + "/" + Self.reasons, [.readOnly, .noFollow, .nonBlocking])
    else { return [:] }
    defer { fd.closeIgnoringErrors() }
    guard let bytes = try? fd.readAll(limit: 64 << 20) else { return [:] }
    for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") {
      let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
      guard fields.count == 3, let reason = NoteTrashReason(rawValue: String(fields[0])) else {
        continue
      }
      result[String(fields[1])] = (reason, String(fields[2]))
    }
    return result
  }

  private struct Version {
    /// Below the trash folder: `DAY/...`.
    var path: String
    var day: String
    var size: Int
    /// When it entered the trash (its inode's change time: link(2) and
    /// rename(2) set it), in nanoseconds.
    var changed: Int64
  }

  /// The files of every day folder (dotfiles, such as the sidecar, are not
  /// versions).
  private func versions() -> [Version] {
    NoteFile.list(path).filter { $0.kind == .directory && NoteWriter.isDay($0.name) }
      .flatMap { versions(in: $0.name) }
  }

  private func versions(in day: String) -> [Version] {
    var result: [Version] = []
    func walk(_ relative: String) {
      for (name, kind) in NoteFile.list(path + "/" + relative) where !name.hasPrefix(".") {
        let child = relative + "/" + name
        switch kind {
        case .directory: walk(child)
        case .file:
          var info = stat()
          guard lstat(path + "/" + child, &info) == 0 else { continue }
          let (seconds, nanoseconds) = (Int64(info.st_ctim.tv_sec), Int64(info.st_ctim.tv_nsec))
          result.append(
            Version(
              path: child, day: day, size: Int(info.st_size),
              changed: seconds.multipliedReportingOverflow(by: 1_000_000_000).partialValue
                &+ nanoseconds))
        default: break
        }
      }
    }
    walk(day)
    return result
  }

  /// Removes the empty folders below `directory` (a day folder's sidecar
  /// does not count when `isDay`; it goes too); returns whether `directory`
  /// is empty.
  @discardableResult
  private func removeEmptyFolders(_ directory: String, isDay: Bool = false) -> Bool {
    var empty = true
    for (name, kind) in NoteFile.list(directory) {
      let child = directory + "/" + name
      if kind == .directory {
        if removeEmptyFolders(child) { _ = rmdir(child) } else { empty = false }
      } else if !(isDay && name == Self.reasons) {
        empty = false
      }
    }
    if empty && isDay { _ = unlink(directory + "/" + Self.reasons) }
    return empty
  }
}
