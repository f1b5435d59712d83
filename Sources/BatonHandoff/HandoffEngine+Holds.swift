import BatonNotes
import BatonSystem
import FoundationEssentials

/// Deletions held for a person when they are many (PROTOCOL.md section 7.4):
/// a burst of deletions of one folder, made here or arriving from the
/// peers, over `policy.deletionLimits` is neither sent nor applied until
/// `baton deletions apply` or `reject`. What to hold is `DeletionHold`'s
/// decision; this applies it to the index.
extension HandoffEngine {
  /// The side of incoming deletions in `DeletionHold`: every peer together
  /// (a key holder can change its name and address at will).
  static let peersSide = "peers"
  static let localSide = ""

  /// Notes of `type` missing from the folder (the watcher's removals, a
  /// scan, a note found gone when a peer asked for it): deletions
  /// (`markDeleted`), unless they make a burst over the limits; then they
  /// are held, not sent, and their entries stay as they are.
  func deleteLocally(_ type: String, _ paths: [String]) {
    guard let folder = folders[type] else {
      for path in paths { markDeleted(type, path) }  // withdrawn: no folder to look in
      return
    }
    var gone: [String] = []
    for path in paths {
      let key = Self.key(type, path)
      guard let note = index[key], !note.deleted, !deletionHold.isHeld(key) else { continue }
      if folder.isAvailable && folder.modificationTime(path) == nil {
        gone.append(path)
      } else {
        markDeleted(type, path)  // withdrawn (grown over the limit, or the folder is gone)
      }
    }
    guard !gone.isEmpty else { return }
    guard
      let reason = deletionHold.holds(
        gone.count, type: type, side: Self.localSide, now: .now, notes: { liveNotes(type) })
    else {
      for path in gone { markDeleted(type, path) }
      return
    }
    let since = Date()
    for path in gone {
      deletionHold.hold(
        Self.key(type, path),
        .init(
          deletion: HeldDeletion(activityType: type, path: path, peer: nil, since: since),
          tombstone: nil))
    }
    logger.warning(
      "\(type): \(gone.count) notes deleted here \(Self.describe(reason))"
        + " (\(deletionHold.held.count) held in all); the deletions are held, not sent, and the"
        + " peers keep the notes: `baton deletions` lists them, `baton deletions apply` sends"
        + " them (each peer holds them again for its own person), `baton deletions reject` brings"
        + " them back here from the peers")
  }

  /// A peer's tombstones, after renames (`applyDeletions`): each applied
  /// (`applyTombstone`), except those that would move a note here to the
  /// trash when they make a burst over the limits: those are held.
  func applyTombstones(_ tombstones: [HandoffIndexEntry], from peer: String) {
    var trashing: [String: [HandoffIndexEntry]] = [:]
    for t in tombstones {
      let key = Self.key(t.activityType, t.path)
      if let held = deletionHold.held[key] {
        guard let old = held.tombstone else {
          // Deleted here (held) and on the peer: deleted on both sides.
          deletionHold.release(key)
          applyTombstone(t, from: peer)
          continue
        }
        // Offered again, or a newer one: still held.
        if t.version.compare(old.version) == .newer {
          var newer = held
          newer.tombstone = t
          newer.deletion.peer = peer
          deletionHold.hold(key, newer)
        }
        continue
      }
      if let local = index[key], !local.deleted, t.version.compare(local.entry.version) == .newer {
        trashing[t.activityType, default: []].append(t)
      } else {
        applyTombstone(t, from: peer)
      }
    }
    for (type, list) in trashing.sorted(by: { $0.key < $1.key }) {
      guard
        let reason = deletionHold.holds(
          list.count, type: type, side: Self.peersSide, now: .now, notes: { liveNotes(type) })
      else {
        for t in list { applyTombstone(t, from: peer) }
        continue
      }
      let since = Date()
      for t in list {
        deletionHold.hold(
          Self.key(type, t.path),
          .init(
            deletion: HeldDeletion(activityType: type, path: t.path, peer: peer, since: since),
            tombstone: t))
      }
      logger.warning(
        "\(type): \(peer) deleted \(list.count) notes \(Self.describe(reason))"
          + " (\(deletionHold.held.count) held in all); the deletions are held, not applied, and"
          + " the notes stay here: `baton deletions` lists them, `baton deletions apply` moves"
          + " them to the trash, `baton deletions reject` brings them back on every peer")
    }
  }

  /// The words for why deletions are held, after "N notes deleted".
  static func describe(_ reason: DeletionHoldReason) -> String {
    switch reason {
    case .burst: "at once, more than hold-deletions allows"
    case .day: "in a trickle, more than hold-deletions-share of the folder within a day"
    }
  }

  /// The live notes of `type`.
  func liveNotes(_ type: String) -> Int {
    var count = 0
    for (_, note) in index where note.entry.activityType == type && !note.deleted { count += 1 }
    return count
  }

  // MARK: baton deletions

  /// The deletions held now, by folder and path.
  public func heldDeletions() -> [HeldDeletion] {
    ensureScanned()
    pruneHeldDeletions()
    return deletionHold.list
  }

  /// Forgets the held deletions that have nothing left to decide: a note
  /// deleted here that is back or deleted anyway, a peer's tombstone that
  /// is no longer newer than the note here (an edit since, or another
  /// peer's rejection that reached us).
  func pruneHeldDeletions() {
    for (key, held) in deletionHold.held {
      guard let note = index[key], !note.deleted else {
        deletionHold.release(key)
        continue
      }
      if let t = held.tombstone {
        if t.version.compare(note.entry.version) != .newer { deletionHold.release(key) }
      } else if folders[note.entry.activityType]?.modificationTime(note.entry.path) != nil {
        deletionHold.release(key)
      }
    }
  }

  /// `baton deletions apply`: every held deletion is made. One made here
  /// becomes a tombstone sent to the peers (where, being many, it is held
  /// again for a person there); a peer's tombstone is applied (the note
  /// goes to the trash, unless it was edited here since). A note deleted
  /// here whose file is back is left alone. Returns what was done.
  public func applyHeldDeletions() -> String {
    ensureScanned()
    pruneHeldDeletions()
    let all = deletionHold.held.sorted { $0.key < $1.key }
    var (sent, applied) = (0, 0)
    deletionHold.decided()
    batched {
      for (key, held) in all {
        deletionHold.release(key)
        let d = held.deletion
        if let t = held.tombstone {
          applyTombstone(t, from: d.peer ?? "a peer")
          applied += 1
        } else if let folder = folders[d.activityType], folder.isAvailable,
          folder.modificationTime(d.path) == nil
        {
          markDeleted(d.activityType, d.path)
          if index[key]?.entry.deleted == true { sent += 1 }
        }
      }
    }
    let message =
      "applied \(all.count) held deletions: \(sent) made here and sent to the peers,"
      + " \(applied) of the peers' applied here"
    logger.notice(message)
    return message
  }

  /// `baton deletions reject`: every held deletion is undone. A note a peer
  /// deleted gets a new version on this device, newer than the deletion,
  /// so it comes back on every peer, the deleting one included. A note
  /// deleted here is withdrawn and wanted back: the peers' copy (the same
  /// version) is fetched and written here again. Returns what was done.
  public func rejectHeldDeletions() -> String {
    ensureScanned()
    pruneHeldDeletions()
    let all = deletionHold.held.sorted { $0.key < $1.key }
    var (kept, wanted) = (0, 0)
    deletionHold.decided()
    batched {
      for (key, held) in all {
        deletionHold.release(key)
        guard var note = index[key], !note.deleted else { continue }
        if let t = held.tombstone {
          note.entry.absorb(t.version, vouchers: t.vouchers)
          guard let version = note.entry.version.incremented(by: me.device) else { continue }
          note.entry.version = version
          note.entry.origin = me.device
          kept += 1
        } else {
          let d = held.deletion
          if folders[d.activityType]?.modificationTime(d.path) != nil { continue }  // back already
          note.deleted = true
          note.wanted = true
          wanted += 1
        }
        index[key] = note
        persistSave(note)
      }
    }
    if kept + wanted > 0 { localRevision &+= 1 }
    // The peers learn from our index that we lack the notes wanted back.
    if wanted > 0 { resyncLinks() }
    let message =
      "rejected \(all.count) held deletions: \(kept) deleted on a peer are kept here and go back"
      + " to every peer, \(wanted) deleted here come back from the peers"
    logger.notice(message)
    return message
  }
}
