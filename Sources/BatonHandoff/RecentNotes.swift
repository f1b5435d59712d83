import BatonSystem

/// The bytes of the notes saved or written last, carried from where they
/// were read (the folder watcher's save) or received (an incoming note
/// written), so that serving them (a link's push, a relay to the other
/// links, a session's GET_ACTIVITY and GET_NOTE) does not read the file
/// again.
///
/// A value with no I/O. By index key, with the file's modification time
/// when the bytes were carried: a note's bytes are given out only for the
/// content hash the index holds for it now and while the file's
/// modification time is unchanged (the engine looks with one `lstat`), so
/// bytes of an older version are never served under a newer one, and a file
/// deleted or edited since is read (and found gone or changed) as before.
/// Bounded: at most `maxNotes` notes and `budget` bytes in all, the oldest
/// dropped first; a note over the budget is not kept.
struct RecentNotes {
  /// The most bytes kept, in all: a few dozen notes of a few kB each.
  static let budget = 64 << 10
  /// The most notes kept.
  static let maxNotes = 64

  private var notes: [String: (hash: ContentHash, modified: Int64, bytes: [UInt8])] = [:]
  /// The keys held, oldest first.
  private var order: [String] = []
  /// The bytes held, in all.
  private(set) var size = 0

  /// Keeps `bytes`, whose hash is `hash`, as the note under `key`, in place
  /// of what was kept for it; `modified` is the file's modification time as
  /// it holds these bytes (nil: the file is gone, nothing is kept), asked
  /// only for a note within the budget.
  mutating func keep(
    _ key: String, hash: ContentHash, modified: @autoclosure () -> Int64?, bytes: [UInt8]
  ) {
    forget(key)
    guard bytes.count <= Self.budget, let modified = modified() else { return }
    while size + bytes.count > Self.budget || order.count >= Self.maxNotes {
      forget(order[0])
    }
    notes[key] = (hash, modified, bytes)
    order.append(key)
    size += bytes.count
  }

  /// The bytes kept for `key` if they are those of `hash` and the file's
  /// modification time is still `modified` (asked only then: a note not
  /// kept costs no `lstat`); nil otherwise.
  func bytes(_ key: String, hash: ContentHash, modified: @autoclosure () -> Int64?) -> [UInt8]? {
    guard let note = notes[key], note.hash == hash, note.modified == modified() else { return nil }
    return note.bytes
  }

  /// Drops what is kept for `key`.
  mutating func forget(_ key: String) {
    guard let note = notes.removeValue(forKey: key) else { return }
    size -= note.bytes.count
    order.removeAll { $0 == key }
  }

  /// The number of notes kept.
  var count: Int { order.count }
}
