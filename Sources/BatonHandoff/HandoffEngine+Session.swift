import BatonNotes
import BatonSystem
import FoundationEssentials

/// The engine's side of a session (PROTOCOL.md, "Session"): the handshake
/// and admission, what to fetch of a peer's index, pulling and applying
/// notes, serving them. `HandoffSession` drives one session with these;
/// links (HandoffEngine+Link.swift) use them too.
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
    let (secure, first) = try await admit(
      over: channel, initiator: initiator, peerAddress: peerAddress, authenticated: authenticated)
    return try await runAdmitted(
      secure, initiator: initiator, peerAddress: peerAddress, first: first)
  }

  /// The session after `admit`: the initiator's or the responder's part
  /// (`first`: the responder's first message, when already read), run by
  /// its driver on this engine.
  func runAdmitted(
    _ admitted: SecureChannel, initiator: Bool, peerAddress: String, first: HandoffMessage?
  ) async throws -> SessionSummary {
    var session = HandoffSession(admitted, initiator: initiator, first: first)
    return try await session.run(self)
  }

  /// The handshake (both sides prove the group key and who they are), then
  /// the allow-list and the membership (section 6.3); records the peer and
  /// calls `authenticated`. Closes the channel and throws when the peer is
  /// not admitted. Shared by one-shot sessions and links
  /// (HandoffEngine+Link.swift). An initiator that `asksForLink` sends
  /// LINK right after its MEMBERS, without waiting for the responder's; a
  /// responder returns the initiator's first message when it came so, ahead
  /// of the initiator's records.
  func admit(
    over channel: any MessageChannel, initiator: Bool, peerAddress: String,
    asksForLink: Bool = false,
    authenticated: (@Sendable (_ name: String, _ device: DeviceID) -> Void)?
  ) async throws -> (secure: SecureChannel, first: HandoffMessage?) {
    ensureScanned()
    var secure: SecureChannel
    do {
      secure = try await SecureChannel.handshake(
        over: channel, initiator: initiator,
        keys: initiator ? handshakeKeys(for: peerAddress) : keys, me: me, peerLabel: peerAddress,
        timeout: policy.receiveTimeout, maxNoteSize: policy.maxNoteSize)
    } catch let error as HandoffError {
      await channel.close()
      fail(activityType: "-", peer: peerAddress, reason: error.description)
      throw error
    } catch {
      await channel.close()
      fail(activityType: "-", peer: peerAddress, reason: "\(error)")
      throw error
    }
    let peer = secure.peer
    if let allowed = policy.allowedPeers, !allowed.contains(peer.name) {
      var refusing = secure
      try? await refusing.send(.error(code: 1, text: "peer name not allowed"))
      await channel.close()
      let error = HandoffError.peerNotAllowed(name: peer.name)
      fail(activityType: "-", peer: secure.peerLabel, reason: error.description)
      throw error
    }
    let first: HandoffMessage?
    do {
      first = try await settleMembership(&secure, initiator: initiator, asksForLink: asksForLink)
    } catch {
      fail(activityType: "-", peer: secure.peerLabel, reason: "\(error)")
      throw error
    }
    persist {
      try store.recordPeer(PeerRecord(device: peer.device, name: peer.name, lastSeen: Date()))
    }
    authenticated?(peer.name, peer.device)
    return (secure, first)
  }

  func violation(_ ch: SecureChannel, _ reason: String) -> HandoffError {
    .protocolViolation(peer: ch.peerLabel, reason: reason)
  }

  // MARK: Deciding what to fetch

  /// The peer's entries worth fetching: missing here, newer, or concurrent with
  /// different content (and the tie-break of equal versions with different
  /// content). New paths come first, so conflict copies land before replacements.
  /// Tombstones are applied on the way, never fetched (section 7.2); a
  /// tombstone and a new note of the same bytes in the list are a rename
  /// (section 7.3), taken here without a transfer when it can be.
  func needs(_ peerIndex: [HandoffIndexEntry], from peer: String, summary: inout SessionSummary)
    -> [HandoffIndexEntry]
  {
    var plan = HandoffIndex.FetchPlan()
    for offered in peerIndex {
      guard let e = admitted(offered, from: peer, summary: &summary) else { continue }
      // Same bytes reached by another history: the merged version, no transfer.
      if let merged = index.weigh(e, into: &plan) { persistSave(merged) }
    }
    if !plan.tombstones.isEmpty {
      plan.fresh = applyDeletions(plan.tombstones, fresh: plan.fresh, from: peer, summary: &summary)
    }
    return plan.wanted
  }

  /// A peer's entry as it may be taken, or nil when it may not be taken at
  /// all (`EntryAdmission`: its folder, size, path and version; the entry
  /// comes back with the vouchers this agent keeps). A refused entry is
  /// declined or failed, and counted.
  func admitted(_ e: HandoffIndexEntry, from peer: String, summary: inout SessionSummary)
    -> HandoffIndexEntry?
  {
    let local = index[Self.key(e.activityType, e.path)]?.entry
    switch admission.verdict(on: e, folder: folders[e.activityType], local: local) {
    case .admitted(let kept):
      var out = e
      out.vouchers = kept
      return out
    case .declined(let reason):
      decline(e, from: peer, reason: reason)
      summary.declined += 1
    case .refused(let reason):
      fail(activityType: e.activityType, peer: peer, reason: reason)
      summary.failed += 1
    }
    return nil
  }

  /// What decides whether a peer's entry or note may be taken at all, with
  /// the members' keys as the records now say.
  var admission: EntryAdmission {
    EntryAdmission(device: me.device, maxNoteSize: policy.maxNoteSize, keys: membership.keys)
  }

  /// Declines an incoming activity: logged once per (peer, type) at info level,
  /// counted once per (peer, type, path, version).
  func decline(_ e: HandoffIndexEntry, from peer: String, reason: String) {
    let peerName = peer.split(separator: " ").first.map(String.init) ?? peer
    if once.first("declined|" + peerName + "|" + e.activityType) {
      logger.info("declined \(e.activityType) from \(peer): \(reason)")
    }
    if once.first("counted|\(peerName)|\(e.activityType)|\(e.path)|\(e.version)") {
      count(HandoffCounter.declined)
    }
  }

  // MARK: Pulling

  /// How many GET_NOTE an asker sends ahead of the answers (PROTOCOL.md
  /// section 6): the radio's round trip is paid once per window, not per note.
  static let pullWindow = 8

  /// Notes received are applied together once this many arrived (or
  /// `pullBatchBytes` of content), and at the end: one store transaction and
  /// one flush of the folder per batch, memory bounded by the batch.
  static let pullBatch = 64
  static let pullBatchBytes = 4 << 20

  /// Fetches `wanted` with up to `pullWindow` requests outstanding, applying
  /// the notes in batches as they arrive. A session cut short still applies
  /// what arrived whole.
  func pull(
    _ wanted: [HandoffIndexEntry], _ ch: inout SecureChannel, _ summary: inout SessionSummary
  ) async throws {
    var sent = 0
    var answered = 0
    var batch: [ActivityPayload] = []
    var batchBytes = 0
    expectTransfer(wanted, from: ch.peer.device, name: ch.peer.name)
    let meter = MessageMeter()
    ch.meter = meter
    meters[ch.peer.device] = meter
    defer {
      ch.meter = nil
      if meters[ch.peer.device] === meter { meters[ch.peer.device] = nil }
    }
    do {
      while answered < wanted.count {
        while sent < wanted.count, sent - answered < Self.pullWindow {
          let e = wanted[sent]
          ch.transferring = (e.activityType, e.path)  // a cut here names the note asked for
          try await ch.send(.getNote(activityType: e.activityType, path: e.path))
          sent += 1
        }
        let e = wanted[answered]
        ch.transferring = (e.activityType, e.path)  // kept if this transfer throws
        switch try await ch.receive() {
        case .note(let payload):
          guard payload.activityType == e.activityType, payload.path == e.path else {
            throw violation(ch, "NOTE for \(payload.path) answers GET_NOTE for \(e.path)")
          }
          batch.append(payload)
          batchBytes += payload.content.count
          transferArrived(payload, from: ch.peer.device)
        case .noteUnavailable(let type, let path, let reason):
          logger.debug("\(ch.peerLabel) cannot send \(path): \(reason)")
          transferDropped(type, path, from: ch.peer.device)
        case .error(_, let text):
          throw HandoffError.peerError(peer: ch.peerLabel, text: text)
        default:
          throw violation(ch, "expected NOTE")
        }
        answered += 1
        ch.transferring = nil
        if batch.count >= Self.pullBatch || batchBytes >= Self.pullBatchBytes
          || answered == wanted.count
        {
          applyAll(batch, from: ch.peerLabel, summary: &summary)
          batch = []
          batchBytes = 0
        }
      }
    } catch {
      applyAll(batch, from: ch.peerLabel, summary: &summary)
      throw error
    }
  }

  /// Applies one incoming note atomically (no suspension point): checks it,
  /// compares versions against the index as it is now, writes through the
  /// folder, then records the result.
  func apply(_ p: ActivityPayload, from peer: String, summary: inout SessionSummary) {
    applyAll([p], from: peer, summary: &summary)
  }

  /// Applies incoming notes (no suspension point), each as `apply` would, with
  /// one store transaction for their write-back intents, one flush of the
  /// folder for their files and one transaction for the index updates
  /// (PROTOCOL.md section 10). A path that comes twice waits for the next round.
  func applyAll(_ payloads: [ActivityPayload], from peer: String, summary: inout SessionSummary) {
    var rest = payloads[...]
    while !rest.isEmpty {
      var round: [IncomingNote] = []
      var keys: Set<String> = []
      while let p = rest.first, keys.insert(Self.key(p.activityType, p.path)).inserted {
        rest.removeFirst()
        if let note = check(p, from: peer, summary: &summary) { round.append(note) }
      }
      guard !round.isEmpty else { continue }
      // Write-ahead: should the agent die between a write and its index
      // update, the next start adopts the file rather than take it for a
      // local edit (which would make a spurious conflict everywhere).
      persist { try store.savePending(round.filter { !$0.conflict }.map(\.incoming)) }
      var outcomes: [String: Result<NoteWriteOutcome, any Error>] = [:]
      for (type, notes) in Dictionary(grouping: round, by: { $0.payload.activityType }) {
        guard let folder = folders[type] else { continue }
        let results = folder.writeNotes(
          notes.map { n in
            // For a conflict, "replacing" the incoming hash makes the folder keep
            // the local file and write the incoming bytes to a conflict copy.
            NoteWrite(
              relativePath: n.payload.path, bytes: n.payload.content,
              expected: n.conflict ? n.payload.hash : n.local?.entry.hash,
              peer: n.payload.originName.isEmpty ? peer : n.payload.originName)
          })
        for (n, result) in zip(notes, results) { outcomes[n.key] = result }
      }
      batched {
        for note in round {
          record(note, outcomes[note.key] ?? .failure(NotesError.notANote(path: note.payload.path, reason: "not written")), from: peer, summary: &summary)
        }
      }
    }
  }

  /// Checks one incoming note and decides what to do with it; nil when there
  /// is nothing to write (declined, refused, or not newer).
  private func check(_ p: ActivityPayload, from peer: String, summary: inout SessionSummary)
    -> IncomingNote?
  {
    let type = p.activityType
    let key = Self.key(type, p.path)
    let stored = index[key]
    var p = p
    switch admission.verdict(on: p, folder: folders[type], local: stored?.entry) {
    case .admitted(let kept):
      p.vouchers = kept
    case .declined(let reason):
      decline(
        HandoffIndexEntry(
          activityType: type, path: p.path, hash: p.hash, size: p.content.count,
          version: p.version, origin: p.origin), from: peer, reason: reason)
      summary.declined += 1
      return nil
    case .refused(let reason):
      fail(activityType: type, peer: peer, reason: reason)
      summary.failed += 1
      return nil
    }
    guard let incoming = index.incoming(p) else { return nil }
    if let gate = gates[type] {
      switch gate.decision(for: Self.incomingActivity(p, at: p.path, from: peer, summary)) {
      case .accept:
        break
      case .decline(let reason):
        decline(
          HandoffIndexEntry(
            activityType: type, path: p.path, hash: p.hash, size: p.content.count,
            version: p.version, origin: p.origin), from: peer, reason: reason)
        summary.declined += 1
        return nil
      case .pending:
        // Asked, not answered yet: applied when it is (incomingDecided);
        // should it not be kept, it is fetched again (unwritten).
        if !awaitDecision(p, from: peer, summary) { summary.unwritten += 1 }
        return nil
      }
    }
    return incoming
  }

  /// How a failed write (`verb` "write") or read ("send") of a note is
  /// logged: a disk error (which a retry may cure), or the folder's refusal
  /// of the name (a symlink in its path, an invalid name, too large), which
  /// no retry changes and which the error itself describes.
  static func noteFailure(_ verb: String, _ path: String, _ error: any Error) -> String {
    if let refusal = error as? NotesError, !refusal.isRetryable {
      return "did not \(verb) \(path): \(refusal)"
    }
    return "disk error \(verb == "write" ? "writing" : "reading") \(path): \(error)"
  }

  /// Records what writing one incoming note did.
  private func record(
    _ n: IncomingNote, _ result: Result<NoteWriteOutcome, any Error>, from peer: String,
    summary: inout SessionSummary
  ) {
    let (p, key, type, merged, conflict) = (n.payload, n.key, n.payload.activityType, n.merged, n.conflict)
    let outcome: NoteWriteOutcome
    switch result {
    case .success(let o):
      outcome = o
    case .failure(let error):
      if !conflict { persistCompleteWrite(type, p.path, saving: nil) }
      fail(activityType: type, peer: peer, reason: Self.noteFailure("write", p.path, error))
      summary.failed += 1
      if (error as? NotesError)?.isRetryable ?? true { summary.unwritten += 1 }
      return
    }
    switch outcome {
    case .written(let path) where path == p.path, .unchanged(let path) where path == p.path:
      let note = n.incoming
      index[key] = note
      recent.keep(
        key, hash: p.hash, modified: folders[type]?.modificationTime(p.path), bytes: p.content)
      persistCompleteWrite(type, p.path, saving: note)
      summary.received.append("\(type):\(p.path)")
      count(HandoffCounter.received)
      logger.info("continued \(type):\(p.path) from \(peer) (version \(merged))")
      tellWritten(n, at: p.path, from: peer, summary)
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
      note.entry.vouchers = n.incoming.entry.vouchers
      note.deleted = false
      index[key] = note
      persistCompleteWrite(type, p.path, saving: note)
      if !conflict, let folder = folders[type] { reconcile(type, p.path, folder: folder) }  // an unreported local edit
      recordLocal(type, path, hash: p.hash, size: p.content.count)
      summary.received.append("\(type):\(path)")
      summary.conflictCopies.append("\(type):\(path)")
      count(HandoffCounter.received)
      count(HandoffCounter.conflicts)
      tellWritten(n, at: path, from: peer, summary)
      fail(
        activityType: type, peer: peer,
        reason: "concurrent edit of \(p.path): the incoming version was written to \(path)")
    }
  }

  /// Tells the folder's gate (`after-command`), and whoever watches
  /// arrivals, that an incoming note was written at `path`.
  private func tellWritten(
    _ n: IncomingNote, at path: String, from peer: String, _ summary: SessionSummary
  ) {
    let activity = Self.incomingActivity(n.payload, at: path, from: peer, summary)
    gates[n.payload.activityType]?.written(activity)
    arrivals?(.written(activity))
  }

  /// What a gate is told of an incoming note written (or to be written) at
  /// `path`: the peer by its name when known, else as in logs.
  private static func incomingActivity(
    _ p: ActivityPayload, at path: String, from peer: String, _ summary: SessionSummary
  ) -> IncomingActivity {
    IncomingActivity(
      activityType: p.activityType, path: path, hash: p.hash, size: p.content.count,
      peer: summary.peerName.isEmpty ? peer : summary.peerName, origin: p.originName,
      title: p.title)
  }

  /// Re-reads one note from disk and records it as a local version if it differs.
  private func reconcile(_ type: String, _ path: String, folder: any NoteFolderAccess) {
    guard let bytes = try? folder.readNote(path) else { return }
    recordLocal(type, path, hash: ContentHash(of: bytes), size: bytes.count)
  }

  // MARK: Serving

  /// Sends one note (NOTE), or NOTE_UNAVAILABLE; returns the entry sent
  /// (nil for none), as it was when sent: the index may change while the
  /// send waits. The bytes are those carried in `recent` when the index
  /// still names them and the file is unchanged, else read from the folder
  /// once (a file found changed since it was indexed is first a new local
  /// version; one gone is a local deletion).
  @discardableResult
  func serveNote(
    _ type: String, _ path: String, _ ch: inout SecureChannel, _ summary: inout SessionSummary
  ) async throws -> HandoffIndexEntry? {
    let key = Self.key(type, path)
    guard let folder = folders[type], var note = index[key], !note.deleted,
      note.entry.unencodableReason == nil
    else {
      try await ch.send(.noteUnavailable(activityType: type, path: path, reason: .unknown))
      return nil
    }
    guard note.entry.size <= policy.maxNoteSize else {
      warnOversize(type, path, note.entry.size)
      try await ch.send(.noteUnavailable(activityType: type, path: path, reason: .tooLarge))
      return nil
    }
    let bytes: [UInt8]
    do {
      bytes = try carried(note.entry, in: folder) ?? folder.readNote(path)
    } catch NotesError.noSuchNote {
      // Deleted since the peer saw our index (the watcher may not have told
      // us yet): nothing to send, and nothing failed.
      deleteLocally(type, [path])
      try await ch.send(.noteUnavailable(activityType: type, path: path, reason: .unknown))
      return nil
    } catch {
      fail(activityType: type, peer: ch.peerLabel, reason: Self.noteFailure("send", path, error))
      summary.failed += 1
      try await ch.send(.noteUnavailable(activityType: type, path: path, reason: .unreadable))
      return nil
    }
    guard bytes.count <= policy.maxNoteSize else {
      warnOversize(type, path, bytes.count)
      try await ch.send(.noteUnavailable(activityType: type, path: path, reason: .tooLarge))
      return nil
    }
    let hash = ContentHash(of: bytes)
    if hash != note.entry.hash {
      // Changed on disk since it was indexed: that is a new local version.
      recordLocal(type, path, hash: hash, size: bytes.count)
      note = index[key]!
      guard note.entry.hash == hash else {
        // No new version could be made (logged): never send these bytes under an old version.
        try await ch.send(.noteUnavailable(activityType: type, path: path, reason: .unreadable))
        return nil
      }
    }
    let originName =
      note.entry.origin == me.device
      ? me.name : ((try? store.peers())?.first { $0.device == note.entry.origin }?.name ?? "")
    let payload = ActivityPayload(
      activityType: type, title: ActivityPayload.title(of: bytes, path: path), path: path,
      version: note.entry.version, vouchers: note.entry.vouchers, origin: note.entry.origin,
      originName: originName, hash: hash, content: bytes)
    let sent = note.entry
    try await ch.send(.note(payload))
    summary.sent.append("\(type):\(path)")
    count(HandoffCounter.sent)
    return sent
  }

  /// The bytes of `entry`'s content carried from its save or arrival
  /// (`recent`), while the file is as it was then (its modification time,
  /// one `lstat` when they are there); nil when they must be read.
  func carried(_ entry: HandoffIndexEntry, in folder: any NoteFolderAccess) -> [UInt8]? {
    recent.bytes(
      Self.key(entry.activityType, entry.path), hash: entry.hash,
      modified: folder.modificationTime(entry.path))
  }

  private func warnOversize(_ type: String, _ path: String, _ size: Int) {
    if once.first("oversize|" + Self.key(type, path) + "|\(size)") {
      logger.warning(
        "\(type):\(path) is \(size) bytes, over the \(policy.maxNoteSize)-byte limit; not sent")
    }
  }
}
