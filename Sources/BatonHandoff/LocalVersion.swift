import BatonSystem

/// What a change found in a folder does to a note's index entry
/// (PROTOCOL.md sections 7 and 7.2): the decisions of a local save and of
/// a note gone from the folder, as plain functions of the entry here and
/// what the folder shows, with no engine, store or I/O
/// (`LocalVersionTests`). The engine stores and offers what they return.
package enum LocalVersion: Equatable, Sendable {
  /// The folder holds the bytes indexed: no new version.
  case unchanged
  /// The bytes of a withdrawn note are back: the same version, offered again.
  case restored(StoredNote)
  /// Other bytes: a new version, this device's counter + 1.
  case newVersion(StoredNote)
  /// Other bytes, but this device's counter for the note is at its maximum
  /// (only a version forged before forgeries were refused gets there): no
  /// version can be made.
  case counterExhausted

  /// The folder's bytes (`hash`, `size`) of `type`:`path` against the
  /// entry here, `existing`, on this device. The same bytes after a
  /// deletion (a tombstone here) are a new version, which must win over
  /// the tombstone; after a withdrawal, the same version again.
  package init(
    saving hash: ContentHash, size: Int, of type: String, _ path: String,
    against existing: StoredNote?, device: DeviceID
  ) {
    if let existing, existing.entry.hash == hash, !existing.entry.deleted {
      if existing.deleted {
        var back = existing
        back.deleted = false
        self = .restored(back)
      } else {
        self = .unchanged
      }
      return
    }
    guard let version = (existing?.entry.version ?? VersionVector()).incremented(by: device)
    else {
      self = .counterExhausted
      return
    }
    self = .newVersion(
      StoredNote(
        entry: HandoffIndexEntry(
          activityType: type, path: path, hash: hash, size: size, version: version,
          vouchers: existing?.entry.vouchers ?? Vouchers(), origin: device)))
  }

  /// A note no longer in the folder: if its file is gone (`fileGone`), a
  /// deletion, a tombstone at this device's counter + 1, offered like any
  /// version (section 7.2); if the file is still there but no longer a note
  /// (over the size limit), or its counter is exhausted, withdrawn: not
  /// offered, and the same bytes back are not a new version. nil when
  /// there is nothing to remove (no live entry).
  package static func removing(_ gone: StoredNote?, fileGone: Bool, device: DeviceID)
    -> (note: StoredNote, tombstone: Bool)?
  {
    guard let gone, !gone.deleted else { return nil }
    if fileGone, let version = gone.entry.version.incremented(by: device) {
      return (.tombstone(of: gone.entry, version: version, origin: device), true)
    }
    var withdrawn = gone
    withdrawn.deleted = true
    return (withdrawn, false)
  }
}
