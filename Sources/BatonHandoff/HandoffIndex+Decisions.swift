import BatonSystem

/// The decisions that change the index, made by the index itself: a local
/// save, a note gone from its folder or withdrawn, what a peer's index
/// holds worth fetching, what a peer's deletion or rename does here, and
/// what a note that arrived makes here (PROTOCOL.md sections 7 to 7.3).
/// Each weighs the note here with `LocalVersion` or `IncomingVersion`,
/// changes the index and returns what changed; the engine stores that,
/// logs it and writes the files. Plain value code with no store, folder or
/// actor (`IndexDecisionTests`).
extension HandoffIndex {
  /// The key of a note: `type \0 path`.
  static func key(_ type: String, _ path: String) -> String { type + "\u{0}" + path }

  /// The folder's bytes of a note (`hash`, `size`) saved on `device`: the
  /// note's local version as `LocalVersion` decides it, taken into the
  /// index. A restored or new version is to be stored; the same bytes
  /// change nothing but the hash's copy held (the folder's, not the
  /// store's: one heap block per note, not two).
  mutating func recordLocal(
    _ type: String, _ path: String, hash: ContentHash, size: Int, device: DeviceID
  ) -> LocalVersion {
    let key = Self.key(type, path)
    let change = LocalVersion(
      saving: hash, size: size, of: type, path, against: self[key], device: device)
    switch change {
    case .unchanged: self[key]?.entry.hash = hash
    case .restored(let note), .newVersion(let note): self[key] = note
    case .counterExhausted: break
    }
    return change
  }

  /// A live note no longer in its folder (`LocalVersion.removing`): a
  /// tombstone when its file is gone, else withdrawn, taken into the index
  /// and returned to be stored; nil when it holds no live note of that path.
  mutating func remove(_ type: String, _ path: String, fileGone: Bool, device: DeviceID)
    -> (note: StoredNote, tombstone: Bool)?
  {
    let key = Self.key(type, path)
    guard let removed = LocalVersion.removing(self[key], fileGone: fileGone, device: device)
    else { return nil }
    self[key] = removed.note
    return removed
  }

  /// A live note withdrawn (its folder gone or replaced): not offered, not
  /// tombstoned; returned to be stored, nil when it holds no live note.
  mutating func withdraw(_ type: String, _ path: String) -> StoredNote? {
    let key = Self.key(type, path)
    guard var note = self[key], !note.deleted else { return nil }
    note.deleted = true
    self[key] = note
    return note
  }

  /// The paths of the live notes of `type` that `isMissing` says are no
  /// longer in the folder.
  func missingPaths(of type: String, _ isMissing: (String) -> Bool) -> [String] {
    var missing: [String] = []
    for (_, note) in self
    where note.entry.activityType == type && !note.deleted && isMissing(note.entry.path) {
      missing.append(note.entry.path)
    }
    return missing
  }

  /// What a peer's index holds worth having here (`weigh`).
  struct FetchPlan: Equatable, Sendable {
    /// Notes new here (unknown, deleted or withdrawn here, or wanted back):
    /// fetched first, so that conflict copies land before replacements.
    var fresh: [HandoffIndexEntry] = []
    /// Changes of notes here: newer, a conflict, or a tie-break won.
    var updates: [HandoffIndexEntry] = []
    /// The peer's tombstones: applied, never fetched (section 7.2).
    var tombstones: [HandoffIndexEntry] = []

    /// What is fetched, in order.
    var wanted: [HandoffIndexEntry] { fresh + updates }
  }

  /// Weighs one of a peer's entries, admitted (`EntryAdmission`: its
  /// vouchers those kept here), against the note of its path here
  /// (`IncomingVersion`) and adds it to `plan`. The same bytes reached by
  /// another history take the merged version here, with no transfer: that
  /// note is returned, to be stored.
  mutating func weigh(_ e: HandoffIndexEntry, into plan: inout FetchPlan) -> StoredNote? {
    if e.deleted {
      plan.tombstones.append(e)
      return nil
    }
    let key = Self.key(e.activityType, e.path)
    switch IncomingVersion(offered: e, against: self[key]) {
    case .keep:
      return nil
    case .fetchNew:
      plan.fresh.append(e)
      return nil
    case .fetchChange:
      plan.updates.append(e)
      return nil
    case .mergeVersion:
      guard var local = self[key] else { return nil }
      local.entry.absorb(e.version, vouchers: e.vouchers)
      self[key] = local
      return local
    }
  }

  /// Whether `weigh` would fetch a peer's entry, without changing the
  /// index: tombstones are applied, never fetched, and the same bytes by
  /// another history take the merged version with no transfer. For what a
  /// transfer is expected to bring (`TransferProgress`).
  func wouldFetch(_ e: HandoffIndexEntry) -> Bool {
    guard !e.deleted else { return false }
    switch IncomingVersion(offered: e, against: self[Self.key(e.activityType, e.path)]) {
    case .fetchNew, .fetchChange: return true
    case .keep, .mergeVersion: return false
    }
  }

  /// What a peer's tombstone does to the note of its path here (section 7.2).
  enum TombstoneChoice: Equatable, Sendable {
    /// Taken as the entry here, with nothing in the folder to do: a note
    /// never held here (remembered, so that an older copy from another
    /// peer is not fetched, and passed on), a newer deletion of a note not
    /// in the folder, or the join of two deletions of it.
    case adopt(StoredNote)
    /// Ours is newer or the same: the peer takes ours.
    case ignore
    /// The note here changed where the deletion did not see it: the edit
    /// is kept (`keepEdit`).
    case keepEdit
    /// A deletion newer than the live note here: to the trash, if its file
    /// still holds the bytes indexed (else that is an edit, kept).
    case trash
  }

  /// What a peer's tombstone, admitted (`EntryAdmission`), does here. A
  /// deletion is a version like any other: it wins over what it saw and
  /// loses to an edit it did not see.
  func choice(for tombstone: HandoffIndexEntry) -> TombstoneChoice {
    guard let local = self[Self.key(tombstone.activityType, tombstone.path)] else {
      return .adopt(StoredNote(entry: tombstone))
    }
    let order = IncomingVersion.order(
      of: tombstone.version, vouchers: tombstone.vouchers, against: local.entry)
    if local.deleted {
      if order == .newer { return .adopt(StoredNote(entry: tombstone)) }
      guard order == .concurrent, local.entry.deleted else { return .ignore }
      // Deleted on both sides: the same join everywhere.
      var both = local
      both.entry.absorb(tombstone.version, vouchers: tombstone.vouchers)
      return .adopt(both)
    }
    switch order {
    case .older, .equal: return .ignore
    case .concurrent: return .keepEdit
    case .newer: return .trash
    }
  }

  /// An edit the deleting peer had not seen: the live note of `key` stays,
  /// with a version newer than both (the tombstone's taken in, then this
  /// device's counter + 1), so that it comes back on every peer. Returned
  /// to be stored; nil when there is no live note or the counter is exhausted.
  mutating func keepEdit(_ key: String, against tombstone: HandoffIndexEntry, device: DeviceID)
    -> StoredNote?
  {
    guard var note = self[key], !note.deleted else { return nil }
    note.entry.absorb(tombstone.version, vouchers: tombstone.vouchers)
    guard let version = note.entry.version.incremented(by: device) else { return nil }
    note.entry.version = version
    note.entry.origin = device
    self[key] = note
    return note
  }

  /// Whether a peer's rename (section 7.3: the tombstone `gone` and the
  /// entry `new`, of the same bytes) may be taken as a rename here: the
  /// old name holds those bytes at a version the deletion saw, and the new
  /// name is free (unknown here, or deleted at a version the new one follows).
  func mayRename(_ gone: HandoffIndexEntry, to new: HandoffIndexEntry) -> Bool {
    guard let old = self[Self.key(gone.activityType, gone.path)], !old.deleted,
      old.entry.hash == gone.hash, gone.version.compare(old.entry.version) == .newer
    else { return false }
    return self[Self.key(new.activityType, new.path)].map {
      $0.deleted && new.version.compare($0.entry.version) == .newer
    } ?? true
  }

  /// A peer's rename done in the folder here: the old name's tombstone and
  /// the new name's entry (with what the new name held here taken in),
  /// taken into the index and returned to be stored.
  mutating func renamed(_ gone: HandoffIndexEntry, to new: HandoffIndexEntry)
    -> (gone: StoredNote, new: StoredNote)
  {
    let oldKey = Self.key(gone.activityType, gone.path)
    let newKey = Self.key(new.activityType, new.path)
    let tombstone = StoredNote(entry: gone)
    self[oldKey] = tombstone
    var entry = new
    if let old = self[newKey]?.entry { entry.absorb(old.version, vouchers: old.vouchers) }
    let note = StoredNote(entry: entry)
    self[newKey] = note
    return (tombstone, note)
  }

  /// Whether a note pushed over a link is concurrent with other bytes of
  /// the live note here, by the versions alone. Both sides of a link push
  /// at once, so both would meet such a conflict and each write a copy:
  /// only the initiator resolves it (section 6.2), and the responder keeps
  /// its version, which it pushes, and takes the resolution after.
  func conflicts(with p: ActivityPayload) -> Bool {
    guard let local = self[Self.key(p.activityType, p.path)], !local.deleted else { return false }
    return local.entry.hash != p.hash && p.version.compare(local.entry.version) == .concurrent
  }

  /// Whether the live note here holds the bytes of `p`: a note pushed
  /// again (a relay, a resend after a cut) is no news.
  func holds(_ p: ActivityPayload) -> Bool {
    self[Self.key(p.activityType, p.path)].map { !$0.deleted && $0.entry.hash == p.hash } ?? false
  }

  /// What a note that arrived (NOTE), admitted (`EntryAdmission`: its
  /// vouchers those kept here), makes here: nil when it is nothing new
  /// (`IncomingVersion.taking`); else the note to write, with its version
  /// merged with the one here and the vouchers of each larger counter.
  func incoming(_ p: ActivityPayload) -> IncomingNote? {
    let key = Self.key(p.activityType, p.path)
    let stored = self[key]
    let taking = IncomingVersion.taking(
      p.version, vouchers: p.vouchers, hash: p.hash, against: stored)
    guard taking != .ignored else { return nil }
    let local = stored?.entry
    let merged = (local?.version ?? VersionVector()).merged(with: p.version)
    let note = StoredNote(
      entry: HandoffIndexEntry(
        activityType: p.activityType, path: p.path, hash: p.hash, size: p.content.count,
        version: merged,
        vouchers: Vouchers.merged(
          p.vouchers, of: p.version, local?.vouchers ?? Vouchers(),
          of: local?.version ?? VersionVector()),
        origin: p.origin))
    return IncomingNote(
      payload: p, key: key, incoming: note, local: stored.flatMap { $0.deleted ? nil : $0 },
      conflict: taking == .conflictCopy)
  }
}

/// A note that arrived, weighed against the index (`HandoffIndex.incoming`),
/// to be written.
struct IncomingNote {
  var payload: ActivityPayload
  var key: String
  /// Its entry here once written: the merged version and vouchers.
  var incoming: StoredNote
  /// The local note it replaces (nil when absent or deleted).
  var local: StoredNote?
  /// Concurrent with other bytes of a live note here: written as a
  /// conflict copy, the note here untouched.
  var conflict: Bool

  /// The version it has here once written: the one here merged with its own.
  var merged: VersionVector { incoming.entry.version }
}
