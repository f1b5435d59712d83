/// The engine's index: every note it knows, by key `type \0 path`, deleted
/// ones included, with the summary of the notes it offers (`IndexSummary`)
/// updated by every change, so that the beacon's digest and a session's
/// comparisons never pass over the whole index.
///
/// A note is offered when it is in the folder or deleted (a tombstone, not
/// when withdrawn: `StoredNote`), a folder configured now declares its
/// activity type, and its fields fit the wire limits.
struct HandoffIndex: Sequence, Sendable {
  private(set) var notes: [String: StoredNote] = [:]
  private(set) var summary = IndexSummary()
  /// How many of the summary's entries are tombstones.
  private(set) var tombstoneCount = 0
  let offeredTypes: Set<String>

  init(offeredTypes: Set<String>) {
    self.offeredTypes = offeredTypes
  }

  subscript(key: String) -> StoredNote? {
    get { notes[key] }
    set {
      let old = newValue.map { notes.updateValue($0, forKey: key) } ?? notes.removeValue(forKey: key)
      let was = old.map(isOffered) ?? false
      let now = newValue.map(isOffered) ?? false
      if was, old!.entry.deleted { tombstoneCount -= 1 }
      if now, newValue!.entry.deleted { tombstoneCount += 1 }
      if was, now, let old, let newValue, old.entry.contentState == newValue.entry.contentState {
        return
      }
      if let newValue, now {
        summary.insert(key, newValue.entry)
      } else if let old, was {
        summary.remove(key, type: old.entry.activityType, path: old.entry.path)
      }
    }
  }

  func isOffered(_ note: StoredNote) -> Bool {
    note.isOfferedState && offeredTypes.contains(note.entry.activityType)
      && note.entry.unencodableReason == nil
  }

  /// Makes room for `count` notes at once (a first scan), so the table is
  /// not copied at every doubling on the way.
  mutating func reserveCapacity(_ count: Int) { notes.reserveCapacity(count) }

  var values: Dictionary<String, StoredNote>.Values { notes.values }
  var count: Int { notes.count }

  func makeIterator() -> Dictionary<String, StoredNote>.Iterator { notes.makeIterator() }

  /// The offered entries of a summary node.
  func offeredEntries(depth: Int, prefix: UInt32) -> [HandoffIndexEntry] {
    summary.keys(depth: depth, prefix: prefix).compactMap { notes[$0]?.entry }
  }
}
