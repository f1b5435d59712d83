/// The engine's index: every note it knows, by key `type \0 path`, deleted
/// ones included, with the summary of the notes it offers (`IndexSummary`)
/// updated by every change, so that the beacon's digest and a session's
/// comparisons never pass over the whole index.
///
/// A note is offered when it is in the folder or deleted (a tombstone, not
/// when withdrawn: `StoredNote`), a folder configured now declares its
/// activity type, and its fields fit the wire limits.
///
/// The notes are kept dense, in one array, with a dictionary from key to
/// place: a dictionary's table is mostly empty slots (at 100,000 notes it
/// has 262,144), and slots of a 4-byte place cost far less than slots of a
/// whole note.
struct HandoffIndex: Sequence, Sendable {
  typealias Element = (key: String, value: StoredNote)
  /// Every note, in no particular order.
  private var notes: [Element] = []
  /// Where each key's note is in `notes`.
  private var places: [String: Int32] = [:]
  private(set) var summary: IndexSummary
  /// How many of the summary's entries are tombstones.
  private(set) var tombstoneCount = 0
  let offeredTypes: Set<String>
  /// The key whose note the last assignment changed (any field, or the
  /// note added or removed); nil when it changed nothing. The engine tells
  /// its links of it (`takeChange`).
  private var changedKey: String?

  /// `summaryKey` keys the summary's fingerprints: `HandoffKeys.summary`.
  init(offeredTypes: Set<String>, summaryKey: [UInt8]) {
    self.offeredTypes = offeredTypes
    summary = IndexSummary(key: summaryKey)
  }

  subscript(key: String) -> StoredNote? {
    get { places[key].map { notes[Int($0)].value } }
    set {
      let old = store(newValue, at: key)
      changedKey = old != newValue ? key : nil
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

  /// Puts `note` under `key` (nil: removes it, the last note taking its
  /// place); returns the note it replaced.
  private mutating func store(_ note: StoredNote?, at key: String) -> StoredNote? {
    let place = places[key].map(Int.init)
    switch (note, place) {
    case (let note?, let place?):
      defer { notes[place].value = note }
      return notes[place].value
    case (let note?, nil):
      places[key] = Int32(notes.count)
      notes.append((key, note))
      return nil
    case (nil, let place?):
      let old = notes[place].value
      let last = notes.removeLast()
      if place < notes.count {
        notes[place] = last
        places[last.key] = Int32(place)
      }
      places[key] = nil
      return old
    case (nil, nil):
      return nil
    }
  }

  /// The key the last assignment changed, if any, once.
  mutating func takeChange() -> String? {
    defer { changedKey = nil }
    return changedKey
  }

  /// Makes room for `count` notes at once (a first scan), so the tables are
  /// not copied at every doubling on the way.
  mutating func reserveCapacity(_ count: Int) {
    notes.reserveCapacity(count)
    places.reserveCapacity(count)
  }

  var values: LazyMapSequence<[Element], StoredNote> { notes.lazy.map(\.value) }
  var count: Int { notes.count }

  func makeIterator() -> IndexingIterator<[Element]> { notes.makeIterator() }

  func isOffered(_ note: StoredNote) -> Bool {
    note.isOfferedState && offeredTypes.contains(note.entry.activityType)
      && note.entry.unencodableReason == nil
  }

  /// The offered entries of a summary node.
  func offeredEntries(depth: Int, prefix: UInt32) -> [HandoffIndexEntry] {
    summary.keys(depth: depth, prefix: prefix).compactMap { self[$0]?.entry }
  }
}
