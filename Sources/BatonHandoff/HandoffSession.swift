import BatonSystem

/// One session after the handshake (PROTOCOL.md 6): the initiator pulls the
/// current activity and what it lacks, hands the turn over with its own
/// index, and serves what the responder lacks; the responder ends with
/// DONE. Only one side asks at a time, so neither can wait on the other.
///
/// The driver of one session: it owns its channel and what the session has
/// done so far, reads and sends the messages, and asks the engine, whose
/// executor it runs on (`isolated`), for every decision and change of the
/// index (what to fetch, applying a note, serving one). A link runs on
/// `HandoffLink` instead (HandoffEngine+Link.swift).
struct HandoffSession {
  /// The channel, after the handshake and the membership exchange.
  private var channel: SecureChannel
  private let initiator: Bool
  /// What the session did so far.
  private var summary: SessionSummary
  /// The responder's first message, when already read (a responder that
  /// can link reads it to tell a link from a session).
  private var first: HandoffMessage?

  init(_ admitted: SecureChannel, initiator: Bool, first: HandoffMessage?) {
    channel = admitted
    self.initiator = initiator
    summary = SessionSummary(peerName: admitted.peer.name, peerDevice: admitted.peer.device)
    self.first = first
  }

  /// Runs the session to its end and closes the channel. Throws
  /// `HandoffError` when it is cut short (recorded as a failure); whatever
  /// was applied before stays applied, and the next session finishes the job.
  mutating func run(_ engine: isolated HandoffEngine) async throws -> SessionSummary {
    let peer = channel.peer
    engine.logger.debug(
      "session with \(channel.peerLabel) (\(initiator ? "initiator" : "responder"))")
    defer { engine.endTransfer(from: peer.device) }
    do {
      if initiator {
        try await runInitiator(engine)
      } else {
        try await runResponder(engine)
      }
    } catch {
      await channel.channel.close()
      if let (type, path) = channel.transferring {
        engine.fail(
          activityType: type, peer: channel.peerLabel, reason: "transfer of \(path): \(error)")
      } else {
        engine.fail(activityType: "-", peer: channel.peerLabel, reason: "\(error)")
      }
      throw error
    }
    await channel.channel.close()
    engine.count(HandoffCounter.sessions)
    engine.logger.info(
      "session with \(channel.peerLabel): received \(summary.received.count), sent \(summary.sent.count)"
        + (summary.conflictCopies.isEmpty
          ? "" : ", \(summary.conflictCopies.count) conflict copies"))
    return summary
  }

  private mutating func runInitiator(_ engine: isolated HandoffEngine) async throws {
    try await channel.send(.getActivity)
    guard case .activity(let activity, let title, let peerDigest) = try await channel.receive()
    else {
      throw engine.violation(channel, "expected ACTIVITY")
    }
    if let activity {
      engine.logger.debug(
        "\(channel.peerLabel) is on \(activity.activityType):\(activity.path) '\(title)'")
      // The current activity first, on its own: usually all a session has to do.
      let wanted = engine.needs([activity], from: channel.peerLabel, summary: &summary)
      try await engine.pull(wanted, &channel, &summary)
      engine.recordHandedOver(
        activity, title: title, from: channel.peer.device, name: channel.peer.name,
        arrived: !wanted.isEmpty)
    }
    if HandoffCrypto.constantTimeEqual(engine.index.summary.digest, peerDigest) {
      // Same notes on both sides: nothing to catch up in either direction.
      let mine = engine.indexDigest
      try await channel.send(
        .done(activityHash: engine.currentEntry?.activityHash ?? 0, indexDigest: mine))
      settle(ConnectionMemory.DigestPair(peer: mine, mine: mine))
      _ = try? await receiveWithTimeout(channel.channel, .seconds(2), peer: channel.peerLabel)
      return
    }
    // Catch-up: find what differs, pulling the peer's side as it is found.
    let offer = try await engine.reconcile(&channel, &summary, skipping: activity)
    engine.transferTotalsKnown(from: channel.peer.device)
    // Settle on the index the peer saw, not on one changed since by a save.
    let turnDigest = engine.indexDigest
    try await channel.send(.turn(indexDigest: turnDigest, offer))
    while true {
      switch try await channel.receive() {
      case .getNote(let type, let path):
        try await serve(type, path, engine)
      case .done(_, let peerDigest):
        settle(ConnectionMemory.DigestPair(peer: peerDigest, mine: turnDigest))
        return
      case .error(_, let text):
        throw HandoffError.peerError(peer: channel.peerLabel, text: text)
      default:
        throw engine.violation(channel, "expected GET_NOTE or DONE")
      }
    }
  }

  private mutating func runResponder(_ engine: isolated HandoffEngine) async throws {
    // A note saved here while the session runs was never offered to the peer:
    // then DONE carries the digest of the index the peer did see (so that it
    // comes back for the rest) and nothing is settled (PROTOCOL.md, section 6).
    let revision = engine.localRevision
    var shownDigest = engine.indexDigest
    while true {
      let message: HandoffMessage
      if let pending = first {
        message = pending
        first = nil
      } else {
        message = try await channel.receive()
      }
      switch message {
      case .getActivity:
        shownDigest = engine.indexDigest
        var title = ""
        if let entry = engine.currentEntry, let folder = engine.folders[entry.activityType] {
          let bytes =
            engine.carried(entry, in: folder) ?? (try? folder.readNote(entry.path)) ?? []
          title = ActivityPayload.title(of: bytes, path: entry.path)
        }
        try await channel.send(
          .activity(engine.currentEntry, title: title, indexDigest: engine.index.summary.digest))
      case .getIndex:
        shownDigest = engine.indexDigest
        try await channel.send(.index(engine.offered))
      case .getNodes(let requests):
        shownDigest = engine.indexDigest
        try await channel.send(.nodes(IndexReconciliation.answer(requests, from: engine.index)))
      case .getNote(let type, let path):
        try await serve(type, path, engine)
      case .turn(let peerDigest, let peerEntries):
        let wanted = engine.needs(peerEntries, from: channel.peerLabel, summary: &summary)
        engine.expectTransfer(wanted, from: channel.peer.device, name: channel.peer.name)
        engine.transferTotalsKnown(from: channel.peer.device)
        try await engine.pull(wanted, &channel, &summary)
        let unchanged = engine.localRevision == revision
        let mine = unchanged ? engine.indexDigest : shownDigest
        try await channel.send(
          .done(activityHash: engine.currentEntry?.activityHash ?? 0, indexDigest: mine))
        if unchanged {
          settle(ConnectionMemory.DigestPair(peer: peerDigest, mine: mine))
        }
        // The initiator closes after DONE; wait for that so DONE is not lost in flight.
        _ = try? await receiveWithTimeout(channel.channel, .seconds(2), peer: channel.peerLabel)
        return
      case .done(_, let peerDigest):
        // The initiator found nothing to catch up.
        if engine.localRevision == revision {
          settle(ConnectionMemory.DigestPair(peer: peerDigest, mine: engine.indexDigest))
        }
        return
      case .error(_, let text):
        throw HandoffError.peerError(peer: channel.peerLabel, text: text)
      default:
        throw engine.violation(channel, "unexpected message")
      }
    }
  }

  /// Records the (peer digest, own digest) pair the session settled
  /// (`SessionSummary.settled`, for `ConnectionMemory.settle`). A session
  /// that could not write a note settles nothing: the beacons keep
  /// differing, so the note is fetched again in a later session.
  private mutating func settle(_ pair: ConnectionMemory.DigestPair) {
    guard summary.unwritten == 0 else { return }
    summary.settled = pair
  }

  /// Answers GET_NOTE; the note stays `transferring` if the send throws.
  private mutating func serve(
    _ type: String, _ path: String, _ engine: isolated HandoffEngine
  ) async throws {
    channel.transferring = (type, path)
    try await engine.serveNote(type, path, &channel, &summary)
    channel.transferring = nil
  }
}
