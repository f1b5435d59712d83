import BatonSystem

/// What a peer's version of a note is worth against this agent's own
/// (PROTOCOL.md sections 7, 7.1 and 7.5): the choice a session makes for
/// each live entry of a peer's index (`HandoffEngine.needs`), with the
/// version order and the tie-break that sessions, links and deletions
/// share, and the check that refuses a forged version. Plain
/// functions of the two versions, with no engine, store or I/O
/// (`IncomingVersionTests`).
package enum IncomingVersion: Equatable, Sendable {
  /// Ours is newer, or equal with the same bytes or with the tie-break
  /// ours: nothing to do.
  case keep
  /// Fetch it as a note new here: its path is unknown here, deleted or
  /// withdrawn here, or wanted back (a deletion here was rejected).
  case fetchNew
  /// Fetch it as a change of the note here: newer, concurrent with other
  /// bytes (a conflict copy), or equal with other bytes that win the
  /// tie-break. Fetched after the new notes, so conflict copies land first.
  case fetchChange
  /// The same bytes reached by another history: take the merged version,
  /// with no transfer.
  case mergeVersion

  /// The choice for `offered`, a peer's live entry already admitted (its
  /// vouchers checked), against the note of the same path here.
  package init(offered: HandoffIndexEntry, against local: StoredNote?) {
    guard let local else {
      self = .fetchNew
      return
    }
    let sameContent = local.entry.hash == offered.hash
    switch Self.order(of: offered.version, vouchers: offered.vouchers, against: local.entry) {
    case .older:
      self = .keep
    case .equal:
      if local.wanted {
        self = .fetchNew
      } else if !sameContent && Self.wins(offered.hash, over: local.entry.hash) {
        self = .fetchChange
      } else {
        self = .keep
      }
    case .newer, .concurrent:
      if sameContent && !local.deleted {
        self = .mergeVersion
      } else if local.deleted {
        self = .fetchNew
      } else {
        self = .fetchChange
      }
    }
  }

  /// How a peer's version (its vouchers checked:
  /// `EntryAdmission.checkedVouchers`) relates to the local entry: as the
  /// vectors compare, except that a peer's version that looks older because
  /// of a local counter with no voucher, where the peer's counter of that
  /// device has one, is *concurrent*. The local claim of more changes by
  /// that device is not proven, the peer's is: the peer's version is kept
  /// as a conflict copy, never dropped.
  package static func order(
    of version: VersionVector, vouchers: Vouchers, against local: HandoffIndexEntry
  ) -> VersionOrder {
    let order = version.compare(local.version)
    guard order == .older, !vouchers.isEmpty else { return order }
    for device in vouchers.devices
    where version[device] < local.version[device] && local.vouchers[device] == nil {
      return .concurrent
    }
    return order
  }

  /// Why a peer's version of a note cannot be genuine, or nil if it can
  /// be (section 7). Only `device`, this one, counts its own changes, so a
  /// version claiming more changes by it than the entry here holds is
  /// forged (adopting it would exhaust the counter); and one that would
  /// grow the merged vector past the limit could no longer be sent to
  /// anyone.
  package static func implausibility(
    of version: VersionVector, path: String, against entry: HandoffIndexEntry?,
    device: DeviceID
  ) -> String? {
    let local = entry?.version ?? VersionVector()
    let claimed = version[device]
    if claimed > local[device] {
      return "forged version of \(path): it claims \(claimed) changes by this device"
        + " (\(device)), which made \(local[device]); refused"
    }
    let devices = Set(local.devices).union(version.devices).count
    if devices > HandoffLimits.maxMergedDevices {
      return "version of \(path) would grow to \(devices) devices, over the limit of"
        + " \(HandoffLimits.maxMergedDevices); refused"
    }
    return nil
  }

  /// How a note that arrived (NOTE) is taken against the note of the same
  /// path here (PROTOCOL.md 7 and 7.1).
  package enum Taking: Equatable, Sendable {
    /// Nothing new: an older or replayed version (even of a note deleted
    /// here), or an equal one with the same bytes, or with other bytes
    /// that lose the tie-break, and not wanted back.
    case ignored
    /// Written over the note here, or as a note new here.
    case written
    /// Concurrent with other bytes of a live note here: written as a
    /// conflict copy, the note here untouched.
    case conflictCopy
  }

  /// What a note that arrived, of `version` (its vouchers `vouchers`
  /// checked) and content `hash`, does against `stored`, the note of the
  /// same path here.
  package static func taking(
    _ version: VersionVector, vouchers: Vouchers, hash: ContentHash, against stored: StoredNote?
  ) -> Taking {
    guard let stored else { return .written }
    switch order(of: version, vouchers: vouchers, against: stored.entry) {
    case .older:
      return .ignored
    case .equal:
      // A note wanted back (a deletion here rejected) is taken as it is.
      let otherBytesWin =
        !stored.deleted && stored.entry.hash != hash && Self.wins(hash, over: stored.entry.hash)
      return stored.wanted || otherBytesWin ? .written : .ignored
    case .newer:
      return .written
    case .concurrent:
      return !stored.deleted && stored.entry.hash != hash ? .conflictCopy : .written
    }
  }

  /// Equal versions with different content (two agents resolved the same
  /// conflict each their way): the bytewise larger content hash wins everywhere.
  package static func wins(_ a: ContentHash, over b: ContentHash) -> Bool {
    a.bytes.lexicographicallyPrecedes(b.bytes) == false && a != b
  }
}
