import BatonNotes
import BatonSystem

/// Deletions and renames made on a peer (PROTOCOL.md sections 7.2 and
/// 7.3). A deletion is a tombstone: a version like any other, so it wins
/// over what it saw and loses to an edit it did not see. Nothing is ever
/// unlinked on a peer's word: a note deleted there goes to this folder's
/// trash, and only if its file holds the bytes the index says (anything
/// else is an edit not recorded yet, which the deletion did not see).
extension HandoffEngine {
  /// Applies a peer's tombstone, already checked like any entry
  /// (`admitted`).
  func applyTombstone(_ e: HandoffIndexEntry, from peer: String) {
    let key = Self.key(e.activityType, e.path)
    switch index.choice(for: e) {
    case .adopt(let note):
      adopt(note, key)
    case .ignore:
      return  // our version is newer: the peer takes it from us
    case .keepEdit:
      keepEdit(key, deletedOn: peer, tombstone: e)
    case .trash:
      guard let local = index[key] else { return }
      moveToTrash(local, key, tombstone: e, from: peer)
    }
  }

  private func moveToTrash(
    _ local: StoredNote, _ key: String, tombstone e: HandoffIndexEntry, from peer: String
  ) {
    guard let folder = folders[e.activityType] else { return }
    let outcome: NoteTrashOutcome
    do {
      outcome = try folder.trashNote(e.path, expected: local.entry.hash)
    } catch {
      fail(
        activityType: e.activityType, peer: peer,
        reason: "cannot move \(e.path), deleted there, to the trash: \(error)")
      return
    }
    switch outcome {
    case .trashed(let place):
      count(HandoffCounter.trashed)
      logger.info(
        "\(e.activityType):\(e.path) was deleted on \(peer); moved it to \(folder.root)/\(place)")
    case .gone:
      break
    case .changed:
      // Edited here since it was indexed: the edit wins over the deletion.
      guard let bytes = try? folder.readNote(e.path) else { return }
      recordLocal(e.activityType, e.path, hash: ContentHash(of: bytes), size: bytes.count)
      keepEdit(key, deletedOn: peer, tombstone: e)
      return
    }
    adopt(StoredNote(entry: e), key)
  }

  /// An edit the deleting peer had not seen: the note stays, with a version
  /// newer than both, so that it comes back on every peer.
  private func keepEdit(_ key: String, deletedOn peer: String, tombstone e: HandoffIndexEntry) {
    guard let note = index.keepEdit(key, against: e, device: me.device) else { return }
    localRevision &+= 1
    persistSave(note)
    logger.info(
      "\(e.activityType):\(e.path) was deleted on \(peer) while it changed here; the change is"
        + " kept and goes back to every peer")
  }

  private func adopt(_ note: StoredNote, _ key: String) {
    index[key] = note
    persistSave(note)
  }

  /// A rename made on a peer (section 7.3): the old name's tombstone and the
  /// new name's entry, of the same bytes. Taken as a rename here when the
  /// old name holds those bytes at a version the deletion saw and the new
  /// name is free; returns whether it was. Otherwise the tombstone is
  /// applied as such (or held, section 7.4), and the new note must be
  /// fetched.
  func applyMove(_ gone: HandoffIndexEntry, to new: HandoffIndexEntry, from peer: String) -> Bool {
    var outcome: NoteMoveOutcome?
    if index.mayRename(gone, to: new), let folder = folders[new.activityType] {
      do {
        outcome = try folder.renameNote(gone.path, to: new.path, expected: gone.hash)
      } catch {
        fail(
          activityType: gone.activityType, peer: peer,
          reason: "cannot rename \(gone.path) to \(new.path) as it was there: \(error)")
      }
    }
    guard outcome == .moved else {
      applyTombstones([gone], from: peer)  // held too when they are many
      return false
    }
    let (tombstone, note) = index.renamed(gone, to: new)
    persistSave(tombstone)
    persistSave(note)
    count(HandoffCounter.renamed)
    logger.info(
      "\(gone.activityType):\(gone.path) was renamed to \(new.path) on \(peer); renamed it here")
    return true
  }

  /// Renames within one list of a peer's entries (a TURN, an answer of a
  /// walk): each tombstone whose bytes a new note of the list has, taken as
  /// a rename; then the other tombstones. Returns the new notes still to
  /// fetch.
  func applyDeletions(
    _ tombstones: [HandoffIndexEntry], fresh: [HandoffIndexEntry], from peer: String,
    summary: inout SessionSummary
  ) -> [HandoffIndexEntry] {
    var byHash: [ContentHash: HandoffIndexEntry] = [:]
    for t in tombstones { byHash[t.hash] = t }
    var handled: Set<String> = []
    let rest = fresh.filter { e in
      guard let t = byHash[e.hash], t.activityType == e.activityType,
        handled.insert(Self.key(t.activityType, t.path)).inserted
      else { return true }
      guard applyMove(t, to: e, from: peer) else { return true }
      summary.received.append("\(e.activityType):\(e.path)")
      return false
    }
    applyTombstones(
      tombstones.filter { !handled.contains(Self.key($0.activityType, $0.path)) }, from: peer)
    return rest
  }
}
