import BatonSystem
import CSodium
import FoundationEssentials

#if canImport(Glibc)
  import Glibc
#endif

/// The shared secret of a group of agents: 32 random bytes.
///
/// The key file holds one line `baton-key-1:<base64 of the 32 bytes>`; blank
/// lines and lines starting with `#` are ignored. `baton keygen` prints a new
/// one. The file must not be readable by group or others.
public struct GroupKey: Sendable, Equatable {
  public static let byteCount = 32
  public static let prefix = "baton-key-1:"
  public let bytes: [UInt8]

  public init?(bytes: [UInt8]) {
    guard bytes.count == GroupKey.byteCount else { return nil }
    self.bytes = bytes
  }

  /// A new random key (libsodium `randombytes_buf`).
  public static func generate() -> GroupKey {
    Sodium.ensureInitialized()
    var bytes = [UInt8](repeating: 0, count: byteCount)
    randombytes_buf(&bytes, byteCount)
    return GroupKey(bytes: bytes)!
  }

  /// The key file's text, as `baton keygen` prints it.
  public var fileText: String {
    "# baton group key: give this file, mode 0600, to every agent of the group\n"
      + GroupKey.prefix + Data(bytes).base64EncodedString() + "\n"
  }

  public enum LoadError: Error, CustomStringConvertible, Equatable {
    case unreadable(path: String, reason: String)
    case tooOpen(path: String, mode: mode_t)
    /// Owned by another user (`FileTrust`), who could replace the key.
    case notOwn(path: String, reason: String)
    case malformed(path: String, reason: String)

    public var description: String {
      switch self {
      case .unreadable(let path, let reason):
        "cannot read key file \(path): \(reason); create one with 'baton keygen > \(path)' and 'chmod 600 \(path)'"
      case .tooOpen(let path, let mode):
        "key file \(path) is readable by \(mode & 0o070 != 0 ? (mode & 0o007 != 0 ? "its group and others" : "its group") : "others") (mode \(String(mode & 0o777, radix: 8))); run 'chmod 600 \(path)'"
      case .notOwn(let path, let reason):
        "key file \(path): \(reason)"
      case .malformed(let path, let reason):
        "key file \(path) is not a baton key (\(reason)); it should hold one line '\(GroupKey.prefix)...' as printed by 'baton keygen'"
      }
    }
  }

  /// The key file's directory must be this user's or root's and closed to
  /// writing by others, who could otherwise rename the key away and put
  /// theirs in its place. A sticky directory (`/tmp`) is let through: there
  /// others may not replace a file that is not theirs.
  static func checkDirectory(of path: String) throws(LoadError) {
    let parent = parentDirectory(of: path)
    let directory = parent.isEmpty ? "." : parent
    var info = stat()
    guard stat(directory, &info) == 0 else {
      throw .unreadable(path: path, reason: "its directory \(directory): \(Errno.current)")
    }
    if info.st_mode & S_ISVTX != 0 { info.st_mode &= ~0o022 }
    if let problem = FileTrust.problem(info, path: directory, private: false) {
      throw .notOwn(
        path: path,
        reason: "its directory \(directory), where the key could be replaced: \(problem)")
    }
  }

  /// Parses key file text; `path` is only for messages.
  public init(parsing text: String, path: String) throws(LoadError) {
    let lines = text.split(whereSeparator: \.isNewline)
      .map { String($0).trimmingSpaces }
      .filter { !$0.isEmpty && !$0.hasPrefix("#") }
    guard lines.count == 1, let line = lines.first else {
      throw .malformed(path: path, reason: lines.isEmpty ? "no key line" : "more than one key line")
    }
    guard line.hasPrefix(GroupKey.prefix) else {
      throw .malformed(path: path, reason: "the line does not start with '\(GroupKey.prefix)'")
    }
    guard let data = Data(base64Encoded: String(line.dropFirst(GroupKey.prefix.count))),
      let key = GroupKey(bytes: Array(data))
    else {
      throw .malformed(path: path, reason: "the key is not 32 bytes of base64")
    }
    self = key
  }

  /// The key file at `path`, or nil when there is no file there: a device
  /// that joins its group by pairing, or joined it so, needs none.
  public static func loadIfPresent(contentsOfFile path: String) throws(LoadError) -> GroupKey? {
    do {
      _ = try FileSystem.linkStatus(path)
    } catch let failure where failure == .noEntry {
      return nil
    } catch {
      // Reported by the load below, which says what to do.
    }
    return try GroupKey(contentsOfFile: path)
  }

  /// Loads and checks a key file: it must exist, be a regular file, have
  /// no group or other permissions, and be in a directory others cannot
  /// write (`checkDirectory`).
  public init(contentsOfFile path: String) throws(LoadError) {
    var info = stat()
    guard stat(path, &info) == 0 else {
      throw .unreadable(path: path, reason: Errno.current.description)
    }
    guard (info.st_mode & S_IFMT) == S_IFREG else {
      throw .unreadable(path: path, reason: "not a regular file")
    }
    guard info.st_mode & 0o077 == 0 else { throw .tooOpen(path: path, mode: info.st_mode) }
    if let problem = FileTrust.problem(info, path: path, private: true) {
      throw .notOwn(path: path, reason: problem)
    }
    try Self.checkDirectory(of: path)
    let bytes: [UInt8]
    do {
      let fd = try FileDescriptor.open(path, .readOnly)
      defer { fd.closeIgnoringErrors() }
      bytes = try fd.readAll(limit: 4096)
    } catch {
      throw .unreadable(path: path, reason: "\(error)")
    }
    guard let text = String(validating: bytes, as: UTF8.self) else {
      throw .malformed(path: path, reason: "not UTF-8 text")
    }
    try self.init(parsing: text, path: path)
  }
}
