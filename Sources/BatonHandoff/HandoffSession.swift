import BatonNotes
import BatonSystem
import FoundationEssentials

/// The session protocol (PROTOCOL.md, "Session"): handshake, then the initiator
/// pulls the current activity and what it lacks, hands the turn over with its
/// own index, and serves what the responder lacks; the responder ends with DONE.
/// Only one side asks at a time, so neither can wait on the other.
extension HandoffEngine {
  /// Runs one session over `channel` (an L2CAP channel, or an in-memory one).
  /// Closes the channel when done. Throws `HandoffError` when the session is cut
  /// short; whatever was applied before stays applied, and the next session
  /// finishes the job.
  ///
  /// `authenticated` is called once the handshake has proved the peer and the
  /// allow-list admitted it, before any note moves: from then on the caller
  /// knows who the peer is, however the session ends.
  public func runSession(
    over channel: any MessageChannel, initiator: Bool, peerAddress: String,
    authenticated: (@Sendable (_ name: String, _ device: DeviceID) -> Void)? = nil
  ) async throws -> SessionSummary {
    ensureScanned()
    var secure: SecureChannel
    do {
      secure = try await SecureChannel.handshake(
        over: channel, initiator: initiator, keys: keys, me: me, peerLabel: peerAddress,
        timeout: policy.receiveTimeout, maxNoteSize: policy.maxNoteSize)
    } catch let error as HandoffError {
      await channel.close()
      if error.endsHandshakesWithThisAddress, let attempt = attempts[peerAddress] {
        if failedBeacons.count > 1024 { failedBeacons.removeAll() }
        failedBeacons.insert(peerAddress + "|\(attempt.content)")
      }
      fail(activityType: "-", peer: peerAddress, reason: error.description)
      throw error
    } catch {
      await channel.close()
      fail(activityType: "-", peer: peerAddress, reason: "\(error)")
      throw error
    }
    let peer = secure.peer
    if let allowed = policy.allowedPeers, !allowed.contains(peer.name) {
      try? await secure.send(.error(code: 1, text: "peer name not allowed"))
      await channel.close()
      let error = HandoffError.peerNotAllowed(name: peer.name)
      fail(activityType: "-", peer: secure.peerLabel, reason: error.description)
      throw error
    }
    persist {
      try store.recordPeer(PeerRecord(device: peer.device, name: peer.name, lastSeen: Date()))
    }
    authenticated?(peer.name, peer.device)
    logger.debug("session with \(secure.peerLabel) (\(initiator ? "initiator" : "responder"))")
    var summary = SessionSummary(peerName: peer.name, peerDevice: peer.device)
    do {
      if initiator {
        try await runInitiator(&secure, &summary)
      } else {
        try await runResponder(&secure, &summary)
      }
    } catch {
      await channel.close()
      if let (type, path) = secure.transferring {
        fail(activityType: type, peer: secure.peerLabel, reason: "transfer of \(path): \(error)")
      } else {
        fail(activityType: "-", peer: secure.peerLabel, reason: "\(error)")
      }
      throw error
    }
    await channel.close()
    attempts[peerAddress] = nil
    count(HandoffCounter.sessions)
    logger.info(
      "session with \(secure.peerLabel): received \(summary.received.count), sent \(summary.sent.count)"
        + (summary.conflictCopies.isEmpty
          ? "" : ", \(summary.conflictCopies.count) conflict copies"))
    return summary
  }

  private func runInitiator(_ ch: inout SecureChannel, _ summary: inout SessionSummary) async throws
  {
    try await ch.send(.getActivity)
    guard case .activity(let activity, let title, let peerDigest) = try await ch.receive() else {
      throw violation(ch, "expected ACTIVITY")
    }
    if let activity {
      logger.debug("\(ch.peerLabel) is on \(activity.activityType):\(activity.path) '\(title)'")
      // The current activity first, on its own: usually all a session has to do.
      try await pull(needs([activity], from: ch.peerLabel, summary: &summary), &ch, &summary)
    }
    if HandoffCrypto.constantTimeEqual(HandoffIndexEntry.fullDigest(offered), peerDigest) {
      // Same notes on both sides: nothing to catch up in either direction.
      let mine = HandoffIndexEntry.digest(offered)
      try await ch.send(.done(activityHash: currentEntry?.activityHash ?? 0, indexDigest: mine))
      settle(DigestPair(peer: mine, mine: mine), summary)
      _ = try? await receiveWithTimeout(ch.channel, .seconds(2), peer: ch.peerLabel)
      return
    }
    try await ch.send(.getIndex)
    guard case .index(let peerIndex) = try await ch.receive() else {
      throw violation(ch, "expected INDEX")
    }
    let wanted = needs(peerIndex.filter { $0 != activity }, from: ch.peerLabel, summary: &summary)
    try await pull(wanted, &ch, &summary)
    // Settle on the index the peer saw, not on one changed since by a save.
    let turnIndex = offered
    try await ch.send(.turn(turnIndex))
    while true {
      switch try await ch.receive() {
      case .getNote(let type, let path):
        try await serve(type, path, &ch, &summary)
      case .done(_, let peerDigest):
        settle(DigestPair(peer: peerDigest, mine: HandoffIndexEntry.digest(turnIndex)), summary)
        return
      case .error(_, let text):
        throw HandoffError.peerError(peer: ch.peerLabel, text: text)
      default:
        throw violation(ch, "expected GET_NOTE or DONE")
      }
    }
  }

  private func runResponder(_ ch: inout SecureChannel, _ summary: inout SessionSummary) async throws
  {
    // A note saved here while the session runs was never offered to the peer:
    // then DONE carries the digest of the index the peer did see (so that it
    // comes back for the rest) and nothing is settled (PROTOCOL.md, section 6).
    let revision = localRevision
    var shownDigest = HandoffIndexEntry.digest(offered)
    while true {
      switch try await ch.receive() {
      case .getActivity:
        shownDigest = HandoffIndexEntry.digest(offered)
        var title = ""
        if let entry = currentEntry, let folder = folders[entry.activityType] {
          let bytes = (try? folder.readNote(entry.path)) ?? []
          title = ActivityPayload.title(of: bytes, path: entry.path)
        }
        try await ch.send(
          .activity(currentEntry, title: title, indexDigest: HandoffIndexEntry.fullDigest(offered)))
      case .getIndex:
        let shown = offered
        shownDigest = HandoffIndexEntry.digest(shown)
        try await ch.send(.index(shown))
      case .getNote(let type, let path):
        try await serve(type, path, &ch, &summary)
      case .turn(let peerIndex):
        let wanted = needs(peerIndex, from: ch.peerLabel, summary: &summary)
        try await pull(wanted, &ch, &summary)
        let unchanged = localRevision == revision
        let mine = unchanged ? HandoffIndexEntry.digest(offered) : shownDigest
        try await ch.send(.done(activityHash: currentEntry?.activityHash ?? 0, indexDigest: mine))
        if unchanged {
          settle(DigestPair(peer: HandoffIndexEntry.digest(peerIndex), mine: mine), summary)
        }
        // The initiator closes after DONE; wait for that so DONE is not lost in flight.
        _ = try? await receiveWithTimeout(ch.channel, .seconds(2), peer: ch.peerLabel)
        return
      case .done(_, let peerDigest):
        // The initiator found nothing to catch up.
        if localRevision == revision {
          settle(DigestPair(peer: peerDigest, mine: HandoffIndexEntry.digest(offered)), summary)
        }
        return
      case .error(_, let text):
        throw HandoffError.peerError(peer: ch.peerLabel, text: text)
      default:
        throw violation(ch, "unexpected message")
      }
    }
  }

  /// Remembers a settled (peer digest, own digest) pair; the memory is bounded.
  /// A session that could not write a note settles nothing: the beacons keep
  /// differing, so the note is fetched again in a later session.
  private func settle(_ pair: DigestPair, _ summary: SessionSummary) {
    guard summary.unwritten == 0 else { return }
    if completed.count > 1024 { completed.removeAll() }
    completed.insert(pair)
  }

  private func violation(_ ch: SecureChannel, _ reason: String) -> HandoffError {
    .protocolViolation(peer: ch.peerLabel, reason: reason)
  }

  // MARK: Deciding what to fetch

  /// The peer's entries worth fetching: missing here, newer, or concurrent with
  /// different content (and the tie-break of equal versions with different
  /// content). New paths come first, so conflict copies land before replacements.
  func needs(_ peerIndex: [HandoffIndexEntry], from peer: String, summary: inout SessionSummary)
    -> [HandoffIndexEntry]
  {
    var fresh: [HandoffIndexEntry] = []
    var updates: [HandoffIndexEntry] = []
    for e in peerIndex {
      guard folders[e.activityType] != nil else {
        decline(e, from: peer, reason: "no folder declares activity type \(e.activityType)")
        summary.declined += 1
        continue
      }
      guard e.size <= policy.maxNoteSize else {
        decline(
          e, from: peer,
          reason: "note of \(e.size) bytes exceeds the \(policy.maxNoteSize)-byte limit")
        summary.declined += 1
        continue
      }
      guard Self.isSafePath(e.path) else {
        fail(
          activityType: e.activityType, peer: peer, reason: "bad payload: unsafe path '\(e.path)'")
        summary.failed += 1
        continue
      }
      if let reason = folders[e.activityType]?.refusal(of: e.path) {
        decline(e, from: peer, reason: "the folder refuses the name: \(reason)")
        summary.declined += 1
        continue
      }
      if let reason = implausibility(of: e.version, type: e.activityType, path: e.path) {
        fail(activityType: e.activityType, peer: peer, reason: "bad payload: \(reason)")
        summary.failed += 1
        continue
      }
      let key = Self.key(e.activityType, e.path)
      guard var local = index[key] else {
        fresh.append(e)
        continue
      }
      let sameContent = local.entry.hash == e.hash
      switch e.version.compare(local.entry.version) {
      case .older:
        continue
      case .equal:
        if !sameContent && Self.wins(e.hash, over: local.entry.hash) { updates.append(e) }
      case .newer, .concurrent:
        if sameContent && !local.deleted {
          // Same bytes reached by another history: adopt the merged version, no transfer.
          local.entry.version = local.entry.version.merged(with: e.version)
          index[key] = local
          persist { try store.save(local) }
        } else if local.deleted {
          fresh.append(e)
        } else {
          updates.append(e)
        }
      }
    }
    return fresh + updates
  }

  /// Why a peer's version of a note cannot be genuine, or nil if it can be.
  /// Only this agent counts its own changes, so a version claiming more changes
  /// by this device than the index holds is forged (adopting it would exhaust
  /// the counter); and one that would grow the merged vector past the limit
  /// could no longer be sent to anyone.
  func implausibility(of version: VersionVector, type: String, path: String) -> String? {
    let local = index[Self.key(type, path)]?.entry.version ?? VersionVector()
    let claimed = version[me.device]
    if claimed > local[me.device] {
      return "forged version of \(path): it claims \(claimed) changes by this device"
        + " (\(me.device)), which made \(local[me.device]); refused"
    }
    let devices = Set(local.counters.keys).union(version.counters.keys).count
    if devices > HandoffLimits.maxMergedDevices {
      return "version of \(path) would grow to \(devices) devices, over the limit of"
        + " \(HandoffLimits.maxMergedDevices); refused"
    }
    return nil
  }

  /// Equal versions with different content (two agents resolved the same
  /// conflict each their way): the bytewise larger content hash wins everywhere.
  static func wins(_ a: ContentHash, over b: ContentHash) -> Bool {
    a.bytes.lexicographicallyPrecedes(b.bytes) == false && a != b
  }

  /// A relative path with no empty, `.` or `..` component, no NUL or backslash.
  package static func isSafePath(_ path: String) -> Bool {
    guard !path.isEmpty, path.utf8.count <= HandoffLimits.maxPathBytes, !path.hasPrefix("/"),
      !path.contains("\u{0}"), !path.contains("\\")
    else { return false }
    return path.split(separator: "/", omittingEmptySubsequences: false).allSatisfy {
      !$0.isEmpty && $0 != "." && $0 != ".."
    }
  }

  /// Declines an incoming activity: logged once per (peer, type) at info level,
  /// counted once per (peer, type, path, version).
  func decline(_ e: HandoffIndexEntry, from peer: String, reason: String) {
    let peerName = peer.split(separator: " ").first.map(String.init) ?? peer
    if declinedLogged.insert(peerName + "|" + e.activityType).inserted {
      logger.info("declined \(e.activityType) from \(peer): \(reason)")
    }
    if declinedCounted.insert("\(peerName)|\(e.activityType)|\(e.path)|\(e.version)").inserted {
      count(HandoffCounter.declined)
    }
  }

  // MARK: Pulling

  private func pull(
    _ wanted: [HandoffIndexEntry], _ ch: inout SecureChannel, _ summary: inout SessionSummary
  ) async throws {
    for e in wanted {
      ch.transferring = (e.activityType, e.path)  // kept if this transfer throws
      try await ch.send(.getNote(activityType: e.activityType, path: e.path))
      switch try await ch.receive() {
      case .note(let payload):
        guard payload.activityType == e.activityType, payload.path == e.path else {
          throw violation(ch, "NOTE for \(payload.path) answers GET_NOTE for \(e.path)")
        }
        apply(payload, from: ch.peerLabel, summary: &summary)
      case .noteUnavailable(_, let path, let reason):
        logger.debug("\(ch.peerLabel) cannot send \(path): \(reason)")
      case .error(_, let text):
        throw HandoffError.peerError(peer: ch.peerLabel, text: text)
      default:
        throw violation(ch, "expected NOTE")
      }
      ch.transferring = nil
    }
  }

  /// Applies one incoming note atomically (no suspension point): checks it,
  /// compares versions against the index as it is now, writes through the
  /// folder, then records the result.
  func apply(_ p: ActivityPayload, from peer: String, summary: inout SessionSummary) {
    let type = p.activityType
    guard let folder = folders[type] else {
      decline(
        HandoffIndexEntry(
          activityType: type, path: p.path, hash: p.hash, size: p.content.count,
          version: p.version, origin: p.origin), from: peer, reason: "undeclared activity type")
      summary.declined += 1
      return
    }
    guard Self.isSafePath(p.path), p.content.count <= policy.maxNoteSize,
      ContentHash(of: p.content) == p.hash, String(validating: p.content, as: UTF8.self) != nil
    else {
      fail(
        activityType: type, peer: peer,
        reason: "bad payload for \(p.path): hash, size, path or UTF-8 do not check")
      summary.failed += 1
      return
    }
    if let reason = implausibility(of: p.version, type: type, path: p.path) {
      fail(activityType: type, peer: peer, reason: "bad payload: \(reason)")
      summary.failed += 1
      return
    }
    let key = Self.key(type, p.path)
    let stored = index[key]
    var conflict = false
    if let stored {
      switch p.version.compare(stored.entry.version) {
      case .older:
        return  // an old or replayed version (even of a deleted note): nothing to do
      case .equal:
        guard !stored.deleted, stored.entry.hash != p.hash,
          Self.wins(p.hash, over: stored.entry.hash)
        else { return }
      case .newer:
        break
      case .concurrent:
        conflict = !stored.deleted && stored.entry.hash != p.hash
      }
    }
    let local = stored.flatMap { $0.deleted ? nil : $0 }
    let merged = (index[key]?.entry.version ?? VersionVector()).merged(with: p.version)
    let incoming = StoredNote(
      entry: HandoffIndexEntry(
        activityType: type, path: p.path, hash: p.hash, size: p.content.count, version: merged,
        origin: p.origin))
    // Write-ahead: should the agent die between the write and the index
    // update, the next start adopts the file rather than take it for a local
    // edit (which would make a spurious conflict everywhere).
    if !conflict { persist { try store.savePending(incoming) } }
    let outcome: NoteWriteOutcome
    do {
      // For a conflict, "replacing" the incoming hash makes the folder keep the
      // local file and write the incoming bytes to a conflict copy.
      outcome = try folder.writeNote(
        p.path, bytes: p.content, replacing: conflict ? p.hash : local?.entry.hash,
        peer: p.originName.isEmpty ? peer : p.originName)
    } catch {
      if !conflict { persist { try store.completeWrite(activityType: type, path: p.path, saving: nil) } }
      fail(activityType: type, peer: peer, reason: "disk error writing \(p.path): \(error)")
      summary.failed += 1
      if (error as? NotesError)?.isRetryable ?? true { summary.unwritten += 1 }
      return
    }
    switch outcome {
    case .written(let path) where path == p.path, .unchanged(let path) where path == p.path:
      let note = incoming
      index[key] = note
      persist { try store.completeWrite(activityType: type, path: p.path, saving: note) }
      summary.received.append("\(type):\(p.path)")
      count(HandoffCounter.received)
      logger.info("continued \(type):\(p.path) from \(peer) (version \(merged))")
    case .written(let path), .unchanged(let path), .conflictCopy(let path):
      // The incoming bytes went to `path`; the local file stays. Its version
      // absorbs the incoming one, so the resolution dominates both everywhere.
      var note =
        index[key]
        ?? StoredNote(
          entry: HandoffIndexEntry(
            activityType: type, path: p.path, hash: p.hash, size: p.content.count, version: merged,
            origin: me.device))
      note.entry.version = merged
      note.deleted = false
      index[key] = note
      persist { try store.completeWrite(activityType: type, path: p.path, saving: note) }
      if !conflict { reconcile(type, p.path, folder: folder) }  // an unreported local edit
      recordLocal(type, path, hash: p.hash, size: p.content.count)
      summary.received.append("\(type):\(path)")
      summary.conflictCopies.append("\(type):\(path)")
      count(HandoffCounter.received)
      count(HandoffCounter.conflicts)
      fail(
        activityType: type, peer: peer,
        reason: "concurrent edit of \(p.path): the incoming version was written to \(path)")
    }
  }

  /// Re-reads one note from disk and records it as a local version if it differs.
  private func reconcile(_ type: String, _ path: String, folder: any NoteFolderAccess) {
    guard let bytes = try? folder.readNote(path) else { return }
    recordLocal(type, path, hash: ContentHash(of: bytes), size: bytes.count)
  }

  // MARK: Serving

  private func serve(
    _ type: String, _ path: String, _ ch: inout SecureChannel, _ summary: inout SessionSummary
  ) async throws {
    ch.transferring = (type, path)  // kept if this transfer throws
    try await serveNote(type, path, &ch, &summary)
    ch.transferring = nil
  }

  private func serveNote(
    _ type: String, _ path: String, _ ch: inout SecureChannel, _ summary: inout SessionSummary
  ) async throws {
    let key = Self.key(type, path)
    guard let folder = folders[type], var note = index[key], !note.deleted,
      note.entry.unencodableReason == nil
    else {
      try await ch.send(.noteUnavailable(activityType: type, path: path, reason: .unknown))
      return
    }
    guard note.entry.size <= policy.maxNoteSize else {
      warnOversize(type, path, note.entry.size)
      try await ch.send(.noteUnavailable(activityType: type, path: path, reason: .tooLarge))
      return
    }
    let bytes: [UInt8]
    do {
      bytes = try folder.readNote(path)
    } catch NotesError.noSuchNote {
      // Deleted since the peer saw our index (the watcher may not have told
      // us yet): nothing to send, and nothing failed.
      markDeleted(type, path)
      try await ch.send(.noteUnavailable(activityType: type, path: path, reason: .unknown))
      return
    } catch {
      fail(activityType: type, peer: ch.peerLabel, reason: "disk error reading \(path): \(error)")
      summary.failed += 1
      try await ch.send(.noteUnavailable(activityType: type, path: path, reason: .unreadable))
      return
    }
    guard bytes.count <= policy.maxNoteSize else {
      warnOversize(type, path, bytes.count)
      try await ch.send(.noteUnavailable(activityType: type, path: path, reason: .tooLarge))
      return
    }
    let hash = ContentHash(of: bytes)
    if hash != note.entry.hash {
      // Changed on disk since it was indexed: that is a new local version.
      recordLocal(type, path, hash: hash, size: bytes.count)
      note = index[key]!
      guard note.entry.hash == hash else {
        // No new version could be made (logged): never send these bytes under an old version.
        try await ch.send(.noteUnavailable(activityType: type, path: path, reason: .unreadable))
        return
      }
    }
    let originName =
      note.entry.origin == me.device
      ? me.name : ((try? store.peers())?.first { $0.device == note.entry.origin }?.name ?? "")
    let payload = ActivityPayload(
      activityType: type, title: ActivityPayload.title(of: bytes, path: path), path: path,
      version: note.entry.version, origin: note.entry.origin, originName: originName, hash: hash,
      content: bytes)
    try await ch.send(.note(payload))
    summary.sent.append("\(type):\(path)")
    count(HandoffCounter.sent)
  }

  private func warnOversize(_ type: String, _ path: String, _ size: Int) {
    if oversizeWarned.insert(Self.key(type, path) + "|\(size)").inserted {
      logger.warning(
        "\(type):\(path) is \(size) bytes, over the \(policy.maxNoteSize)-byte limit; not sent")
    }
  }
}
