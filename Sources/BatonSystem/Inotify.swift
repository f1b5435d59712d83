#if canImport(Glibc)
  import Glibc
#endif

/// A raw inotify instance: thin wrappers in the style of swift-system around
/// `inotify_init1(2)`, `inotify_add_watch(2)`, `inotify_rm_watch(2)` and the
/// event records `read(2)` returns.
///
/// Why not libinotifytools: it keeps its state (the inotify descriptor, the
/// watch table, the event queue) in process-global variables, so one process
/// cannot run two independent watchers (two folders, or tests running in
/// parallel), and it offers no accessor for its descriptor, so it cannot be
/// woken or polled alongside other descriptors in an event loop. Raw inotify
/// is a handful of syscalls; the recursive bookkeeping lives in
/// `NotesWatcher`.
public struct Inotify: Sendable {
  /// The inotify descriptor. Owned: call `close()` once.
  public let descriptor: FileDescriptor

  /// `inotify_init1(IN_CLOEXEC | IN_NONBLOCK?)`.
  public init(nonBlocking: Bool = false) throws(Errno) {
    let flags = Int32(IN_CLOEXEC) | (nonBlocking ? Int32(IN_NONBLOCK) : 0)
    descriptor = FileDescriptor(rawValue: try checked { inotify_init1(flags) })
  }

  /// A watch descriptor returned by `inotify_add_watch`.
  public struct Watch: RawRepresentable, Hashable, Sendable {
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }
  }

  /// inotify event and watch flags. The corresponding C constants are `IN_*`.
  public struct Mask: OptionSet, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let access = Mask(rawValue: 0x0000_0001)
    public static let modify = Mask(rawValue: 0x0000_0002)
    public static let attrib = Mask(rawValue: 0x0000_0004)
    public static let closeWrite = Mask(rawValue: 0x0000_0008)
    public static let closeNoWrite = Mask(rawValue: 0x0000_0010)
    public static let open = Mask(rawValue: 0x0000_0020)
    public static let movedFrom = Mask(rawValue: 0x0000_0040)
    public static let movedTo = Mask(rawValue: 0x0000_0080)
    public static let create = Mask(rawValue: 0x0000_0100)
    public static let delete = Mask(rawValue: 0x0000_0200)
    public static let deleteSelf = Mask(rawValue: 0x0000_0400)
    public static let moveSelf = Mask(rawValue: 0x0000_0800)
    /// Event only: the file system holding the watch was unmounted.
    public static let unmount = Mask(rawValue: 0x0000_2000)
    /// Event only: the event queue overflowed; events were lost.
    public static let queueOverflow = Mask(rawValue: 0x0000_4000)
    /// Event only: the watch was removed.
    public static let ignored = Mask(rawValue: 0x0000_8000)
    /// Watch flag: only watch the path if it is a directory.
    public static let onlyDirectory = Mask(rawValue: 0x0100_0000)
    /// Watch flag: do not follow a symlink at the path.
    public static let dontFollow = Mask(rawValue: 0x0200_0000)
    /// Watch flag: no events for children after they are unlinked.
    public static let excludeUnlinked = Mask(rawValue: 0x0400_0000)
    /// Watch flag: add to an existing watch's mask instead of replacing it.
    public static let maskAdd = Mask(rawValue: 0x2000_0000)
    /// Event only: the subject is a directory.
    public static let isDirectory = Mask(rawValue: 0x4000_0000)

    public var description: String {
      let names: [(Mask, String)] = [
        (.access, "ACCESS"), (.modify, "MODIFY"), (.attrib, "ATTRIB"),
        (.closeWrite, "CLOSE_WRITE"), (.closeNoWrite, "CLOSE_NOWRITE"), (.open, "OPEN"),
        (.movedFrom, "MOVED_FROM"), (.movedTo, "MOVED_TO"), (.create, "CREATE"),
        (.delete, "DELETE"), (.deleteSelf, "DELETE_SELF"), (.moveSelf, "MOVE_SELF"),
        (.unmount, "UNMOUNT"), (.queueOverflow, "Q_OVERFLOW"), (.ignored, "IGNORED"),
        (.isDirectory, "ISDIR"),
      ]
      return names.filter { contains($0.0) }.map(\.1).joined(separator: "|")
    }
  }

  /// One event record.
  public struct Event: Sendable, Equatable {
    public var watch: Watch
    public var mask: Mask
    /// Pairs the MOVED_FROM and MOVED_TO halves of one rename.
    public var cookie: UInt32
    /// The child's name, empty for events about the watched directory itself.
    public var name: String
  }

  /// `inotify_add_watch(2)`. Throws `Errno.noSpace` (ENOSPC) when the user's
  /// `fs.inotify.max_user_watches` is exhausted.
  public func addWatch(_ path: String, mask: Mask) throws(Errno) -> Watch {
    Watch(rawValue: try checked { inotify_add_watch(descriptor.rawValue, path, mask.rawValue) })
  }

  /// `inotify_rm_watch(2)`; errors (the watch is already gone) are ignored.
  public func removeWatch(_ watch: Watch) {
    _ = inotify_rm_watch(descriptor.rawValue, watch.rawValue)
  }

  /// The size of the fixed part of `struct inotify_event`; the name follows.
  static let headerSize = 16

  /// Reads one batch of events (blocking unless the instance is non-blocking).
  /// Returns an empty array when a non-blocking read finds nothing.
  public func readEvents(into buffer: inout [UInt8]) throws(Errno) -> [Event] {
    let fd = descriptor.rawValue
    let count = buffer.withUnsafeMutableBytes { raw in
      var n: Int
      repeat { n = Glibc.read(fd, raw.baseAddress, raw.count) } while n < 0 && errno == EINTR
      return n
    }
    if count < 0 {
      let error = Errno.current
      if error == .wouldBlock { return [] }
      throw error
    }
    return Inotify.parse(buffer[..<count])
  }

  /// Decodes event records: `wd` (Int32), `mask` (UInt32), `cookie` (UInt32),
  /// `len` (UInt32), then `len` bytes of NUL-padded name at offset 16.
  static func parse(_ bytes: ArraySlice<UInt8>) -> [Event] {
    var events: [Event] = []
    var offset = bytes.startIndex
    func word(_ at: Int) -> UInt32 {
      UInt32(bytes[at]) | UInt32(bytes[at + 1]) << 8 | UInt32(bytes[at + 2]) << 16
        | UInt32(bytes[at + 3]) << 24
    }
    while offset + headerSize <= bytes.endIndex {
      let wd = Int32(bitPattern: word(offset))
      let mask = word(offset + 4)
      let cookie = word(offset + 8)
      let length = Int(word(offset + 12))
      let nameStart = offset + headerSize
      let nameEnd = min(nameStart + length, bytes.endIndex)
      var name = bytes[nameStart..<nameEnd]
      if let nul = name.firstIndex(of: 0) { name = name[..<nul] }
      events.append(
        Event(
          watch: Watch(rawValue: wd), mask: Mask(rawValue: mask), cookie: cookie,
          name: String(decoding: name, as: UTF8.self)))
      offset = nameEnd
    }
    return events
  }

  /// The user's current `fs.inotify.max_user_watches`, if readable.
  public static func maximumUserWatches() -> Int? {
    guard let fd = try? FileDescriptor.open("/proc/sys/fs/inotify/max_user_watches", .readOnly)
    else { return nil }
    defer { fd.closeIgnoringErrors() }
    guard let bytes = try? fd.readAll(limit: 64) else { return nil }
    return Int(String(decoding: bytes, as: UTF8.self).filter { !$0.isWhitespace })
  }

  public func close() { descriptor.closeIgnoringErrors() }
}
