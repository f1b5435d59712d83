import BatonSystem
import Synchronization

/// The index of a notes folder, shared between the watcher thread and the
/// callers of `NotesFolder` (behind a `Mutex`): every note's size and hash,
/// the versions skipped as invalid (so each is warned about once), and the
/// hashes of our own write-backs (echo suppression).
final class NoteIndex: Sendable {
  /// What the index holds per path: the path is the key, not stored twice
  /// (at 100,000 notes the table has 262,144 slots).
  private struct Indexed {
    var size: Int
    var hash: ContentHash

    func entry(at relativePath: String) -> NoteIndexEntry {
      NoteIndexEntry(relativePath: relativePath, size: size, hash: hash)
    }
  }

  private struct State {
    var entries: [String: Indexed] = [:]
    var skipped: [String: NoteFile.Signature] = [:]
    /// Hash of the last write-back per path, until the watcher sees it.
    var echoes: [String: ContentHash] = [:]
    /// Stamps from the last run (the state database): a file that still
    /// matches its stamp is not read again. Each is used once, at start.
    var trusted: [String: NoteFileStamp] = [:]
    /// Stamps of the files read and hashed since `trust`, to be saved.
    var fresh: [String: NoteFileStamp] = [:]
    /// How many indexed paths have each 32-bit hash of their folded form
    /// (`NoteNames.folded`): `twin(of:)` looks through the index only on a
    /// hit, which a note with no twin here almost never makes. Small on
    /// purpose: 6 bytes a slot, about 1.5 MB at 100,000 notes.
    var folded: [UInt32: UInt16] = [:]

    static func foldedHash(_ path: String) -> UInt32 {
      UInt32(truncatingIfNeeded: NoteNames.folded(path).hashValue)
    }

    /// Indexes `path` (nil: drops it), keeping `folded` up to date.
    mutating func set(_ path: String, _ value: Indexed?) {
      if let value {
        if entries.updateValue(value, forKey: path) == nil {
          let hash = Self.foldedHash(path)
          let count = folded[hash] ?? 0
          folded[hash] = count == .max ? count : count + 1
        }
      } else {
        _ = remove(path)
      }
    }

    /// Drops `path`; returns whether it was indexed.
    mutating func remove(_ path: String) -> Bool {
      guard let i = entries.index(forKey: path) else { return false }
      let key = entries[i].key
      entries.remove(at: i)
      let hash = Self.foldedHash(key)
      if let count = folded[hash] { folded[hash] = count > 1 ? count - 1 : nil }
      return true
    }
  }

  private let state = Mutex(State())
  let root: String
  let maximumNoteSize: Int
  private let log = Logger(label: "notes")

  init(root: String, maximumNoteSize: Int) {
    self.root = root
    self.maximumNoteSize = maximumNoteSize
  }

  var entries: [NoteIndexEntry] {
    state.withLock { s in s.entries.map { $0.value.entry(at: $0.key) } }
      .sorted { $0.relativePath < $1.relativePath }
  }

  func entry(_ relativePath: String) -> NoteIndexEntry? {
    state.withLock { $0.entries[relativePath] }?.entry(at: relativePath)
  }

  /// Records a write-back: the index holds it at once, and the watcher will
  /// not report it as a local save.
  func recordWriteBack(_ relativePath: String, bytes: [UInt8], hash: ContentHash) {
    state.withLock {
      $0.echoes[relativePath] = hash
      $0.set(relativePath, Indexed(size: bytes.count, hash: hash))
      $0.skipped[relativePath] = nil
    }
  }

  /// Forgets a write-back that did not happen.
  func cancelWriteBack(_ relativePath: String, previous: NoteIndexEntry?) {
    state.withLock {
      $0.echoes[relativePath] = nil
      $0.set(relativePath, previous.map { Indexed(size: $0.size, hash: $0.hash) })
    }
  }

  /// Stamps to trust at the next scan (see `State.trusted`).
  func trust(_ stamps: [NoteFileStamp]) {
    state.withLock { s in
      for stamp in stamps { s.trusted[stamp.relativePath] = stamp }
    }
  }

  /// Drops the stamps the first scan did not use (their files are gone),
  /// and the table that held them: at 100,000 notes it would stay 20 MB.
  func endTrust() {
    state.withLock { $0.trusted = [:] }
  }

  /// An indexed note whose path is `relativePath` spelt otherwise: the same
  /// after case folding and Unicode normalisation (`NoteNames.folded`),
  /// other bytes (`Notes.md` for `notes.md`, a composed `é` for `e` and
  /// U+0301), or nil. A note indexed under exactly these bytes has none.
  func twin(of relativePath: String) -> String? {
    let folded = NoteNames.folded(relativePath)
    let hash = State.foldedHash(relativePath)
    return state.withLock { s -> String? in
      // Canonically equal keys are one key: compare the bytes stored.
      if let i = s.entries.index(forKey: relativePath),
        s.entries[i].key.utf8.elementsEqual(relativePath.utf8)
      {
        return nil
      }
      guard s.folded[hash] != nil else { return nil }
      // A twin, or another folded path with the same hash: look, with one
      // fold per note (folding 100,000 paths took 38 ms in a release build).
      return s.entries.keys.first {
        !$0.utf8.elementsEqual(relativePath.utf8) && NoteNames.folded($0) == folded
      }
    }
  }

  /// How many notes the index holds.
  var count: Int { state.withLock { $0.entries.count } }

  /// The stamps of the files read and hashed since the last call (those to
  /// save for the next start); clears them.
  func takeFreshStamps() -> [NoteFileStamp] {
    state.withLock { s in
      defer { s.fresh.removeAll() }
      return Array(s.fresh.values)
    }
  }

  /// A file read but not yet applied to the index.
  enum Inspection {
    case unchanged
    case invalid(path: String, reason: String, NoteFile.Signature)
    case note(path: String, bytes: [UInt8], hash: ContentHash)
    /// Unchanged since its stamp: indexed with the stamp's hash, unread.
    case known(NoteFileStamp)

    /// A note read as empty: possibly a writer between open(O_TRUNC) and
    /// its first write (see `NotesWatcher.Tuning.emptyReadHoldNanoseconds`).
    var isEmptyNote: Bool {
      if case .note(_, let bytes, _) = self { return bytes.isEmpty }
      return false
    }
  }

  /// Reads the file at `relativePath` and brings the index up to date.
  /// Returns the event to report: a save when the bytes are new (not
  /// indexed, not our own write-back), a removal when an indexed note
  /// turned invalid (warned once per version), else nil.
  func examine(_ relativePath: String) -> NotesEvent? {
    commit(inspect(relativePath))
  }

  /// Reads the file at `relativePath` without touching the index.
  func inspect(_ relativePath: String) -> Inspection {
    let path = NoteFile.join(root, relativePath)
    if let stamp = state.withLock({ $0.trusted.removeValue(forKey: relativePath) }),
      let signature = NoteFile.signature(path), signature.matches(stamp), stamp.size <= maximumNoteSize
    {
      return .known(stamp)
    }
    // A version already skipped is not read again until it changes.
    if let skippedVersion = state.withLock({ $0.skipped[relativePath] }),
      NoteFile.signature(path) == skippedVersion
    {
      return .unchanged
    }
    switch NoteFile.read(path, maximum: maximumNoteSize) {
    case .absent:
      return .unchanged
    case .invalid(let reason, let signature):
      return .invalid(path: relativePath, reason: reason, signature)
    case .note(let bytes, let signature):
      let hash = ContentHash(of: bytes)
      state.withLock { $0.fresh[relativePath] = signature.stamp(relativePath, hash: hash) }
      return .note(path: relativePath, bytes: bytes, hash: hash)
    }
  }

  /// Applies an inspection to the index; returns the event to report.
  func commit(_ inspection: Inspection) -> NotesEvent? {
    switch inspection {
    case .unchanged:
      return nil
    case .known(let stamp):
      state.withLock { s in
        if s.entries[stamp.relativePath] == nil {
          s.set(stamp.relativePath, Indexed(size: stamp.size, hash: stamp.hash))
        }
      }
      return nil
    case .invalid(let relativePath, let reason, let signature):
      let (alreadyWarned, wasIndexed) = state.withLock { s in
        let warned = s.skipped[relativePath] == signature
        s.skipped[relativePath] = signature
        let indexed = s.remove(relativePath)
        return (warned, indexed)
      }
      if !alreadyWarned {
        log.warning(
          "skipping \(NoteFile.join(root, relativePath)): \(reason); it is retried once it"
            + " changes")
      }
      return wasIndexed ? .removed(relativePaths: [relativePath]) : nil
    case .note(let relativePath, let bytes, let hash):
      let isNew = state.withLock { s -> Bool in
        s.skipped[relativePath] = nil
        if s.echoes[relativePath] == hash {
          s.echoes[relativePath] = nil
          s.set(relativePath, Indexed(size: bytes.count, hash: hash))
          return false
        }
        if s.entries[relativePath]?.hash == hash { return false }
        s.set(relativePath, Indexed(size: bytes.count, hash: hash))
        return true
      }
      if !isNew { return nil }
      log.debug("save \(relativePath) \(bytes.count) bytes \(hash.short)")
      return .saved(NoteSave(relativePath: relativePath, bytes: bytes))
    }
  }

  /// Drops `relativePath` when it is no longer a regular file; returns
  /// whether it was indexed (so a removal is reported).
  func dropIfGone(_ relativePath: String) -> Bool {
    if NoteFile.isRegularFile(NoteFile.join(root, relativePath)) { return false }
    return state.withLock { s in
      s.skipped[relativePath] = nil
      s.echoes[relativePath] = nil
      return s.remove(relativePath)
    }
  }

  /// Drops every indexed path not in `present` (after a full rescan);
  /// returns the dropped paths.
  func dropAll(except present: Set<String>) -> [String] {
    state.withLock { s in
      let gone = s.entries.keys.filter { !present.contains($0) }.sorted()
      for path in gone {
        _ = s.remove(path)
        s.echoes[path] = nil
      }
      for path in s.skipped.keys where !present.contains(path) { s.skipped[path] = nil }
      return gone
    }
  }

  /// The indexed paths at or below the folder `relativeDirectory`.
  func paths(under relativeDirectory: String) -> [String] {
    let prefix = relativeDirectory.isEmpty ? "" : relativeDirectory + "/"
    return state.withLock { s in
      s.entries.keys.filter { $0.hasPrefix(prefix) }
    }
  }
}
