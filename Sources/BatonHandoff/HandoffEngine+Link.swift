import BatonNotes
import BatonSystem
import FoundationEssentials

/// Links (PROTOCOL.md section 6.2): one handshake, then both sides push
/// every change over the same channel for as long as it stays up.
///
/// A link runs four tasks. Its driver's two own the channel
/// (HandoffLink+Driver.swift): the reader queues what arrives (NOTE, the
/// peer's GET_NODES and NODES, INDEX, PING), the sender pushes what the
/// peer lacks and sends the replies (PONG, NODES). The applier, here,
/// applies what the reader queued; the watchdog (`HandoffLink.watch`)
/// pings a quiet peer and closes a dead link. The reader never sends, so
/// two sides pushing large notes to each other at once cannot deadlock on
/// L2CAP credits.
///
/// Catch-up when a link comes up is the sender's walk: each side walks the
/// other's index summary (section 6.1's GET_NODES and NODES, both walks at
/// once), which tells it what the peer holds where the two differ, and
/// pushes what the peer lacks. A peer that missed k changes costs about k
/// entries on the wire, not the whole index.
extension HandoffEngine {
  /// The result of serving an incoming channel.
  public enum IncomingOutcome: Sendable {
    /// The peer asked for a link: run it with `runLink`.
    case link(HandoffLink)
    /// A one-shot session (section 6) that has finished.
    case session(SessionSummary)
  }

  /// Opens a link as the initiator: handshake, LINK (sent with MEMBERS,
  /// section 6.2), the peer's LINK. Throws (after closing the channel) if
  /// the peer is not admitted or does not speak links.
  public func openLink(
    over channel: any MessageChannel, peerAddress: String,
    authenticated: (@Sendable (_ name: String, _ device: DeviceID) -> Void)? = nil
  ) async throws -> HandoffLink {
    let watched = WatchedChannel(channel)
    let lackingSince = lackRevision
    var (secure, _) = try await admit(
      over: watched, initiator: true, peerAddress: peerAddress, asksForLink: true,
      authenticated: authenticated)
    do {
      let answer = try await secure.receive()
      guard case .link(let limit, let root) = answer else {
        throw HandoffError.protocolViolation(
          peer: secure.peerLabel, reason: "expected LINK, got \(answer.kind)")
      }
      return HandoffLink(
        secure: secure, channel: watched, initiator: true, peerMaxNoteSize: Int(limit),
        peerRoot: root, lackingSince: lackingSince, keepAlive: policy.keepAlive,
        busyKeepAlive: policy.busyKeepAlive,
        silenceLimit: policy.silenceLimit, peerIndexInterval: policy.retryInterval)
    } catch {
      await watched.close()
      fail(activityType: "-", peer: secure.peerLabel, reason: "link: \(error)")
      throw error
    }
  }

  /// Serves a channel a peer opened: the handshake, then a link if the peer
  /// asks for one (its first message is LINK), else a one-shot session as
  /// the responder.
  public func respond(
    over channel: any MessageChannel, peerAddress: String,
    authenticated: (@Sendable (_ name: String, _ device: DeviceID) -> Void)? = nil
  ) async throws -> IncomingOutcome {
    let watched = WatchedChannel(channel)
    let lackingSince = lackRevision
    var (secure, ahead) = try await admit(
      over: watched, initiator: false, peerAddress: peerAddress, authenticated: authenticated)
    let first: HandoffMessage
    do {
      if let ahead {
        first = ahead
      } else {
        first = try await secure.receive()
      }
      if case .link(let limit, let root) = first {
        try await secure.send(linkMessage())
        return .link(
          HandoffLink(
            secure: secure, channel: watched, initiator: false, peerMaxNoteSize: Int(limit),
            peerRoot: root, lackingSince: lackingSince, keepAlive: policy.keepAlive,
            busyKeepAlive: policy.busyKeepAlive,
            silenceLimit: policy.silenceLimit, peerIndexInterval: policy.retryInterval))
      }
    } catch {
      await watched.close()
      fail(activityType: "-", peer: secure.peerLabel, reason: "\(error)")
      throw error
    }
    return .session(
      try await runAdmitted(secure, initiator: false, peerAddress: peerAddress, first: first))
  }

  /// Runs a link until it ends (the peer closes it, it dies, or
  /// `HandoffLink.close`); returns why it ended. Whatever was applied stays
  /// applied; the next link's catch-up finishes the job.
  @discardableResult
  public func runLink(_ link: HandoffLink) async -> String {
    ensureScanned()
    let id = ObjectIdentifier(link)
    links[id] = link
    // Notes this side came to lack after its LINK carried its root: the
    // peer learns of them by INDEX, as a running link's peer does.
    if link.lackingSince != lackRevision { link.resyncNow() }
    logger.info(
      "link with \(link.peerLabel) up (\(link.initiator ? "we connected" : "it connected"))")
    var reason = "closed"
    var thrown: HandoffError?
    do {
      try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { try await link.read(for: self) }
        group.addTask { try await link.send(self) }
        group.addTask { await self.linkApplier(link) }
        group.addTask { await link.watch() }
        // The first task to end ends the link: closing the channel wakes a
        // reader blocked on it and a sender waiting for credits.
        do {
          _ = try await group.next()
        } catch {
          await link.close("\(error)")
          group.cancelAll()
          throw error
        }
        await link.close()
        group.cancelAll()
      }
    } catch {
      reason = "\(error)"
      thrown = error as? HandoffError
    }
    // A peer that broke the protocol or sent ERROR is a failure, as in a
    // session (logged as a warning, counted, in `baton status`); a link
    // that merely ends (the peer left, went quiet) is not. The reader
    // records it before the channel closes, so it counts whichever task
    // ended first.
    switch link.failure ?? thrown {
    case let failure? where failure.isPeerFailure:
      fail(activityType: "-", peer: link.peerLabel, reason: "link: \(failure)")
    default:
      break
    }
    links[id] = nil
    endTransfer(from: link.peerDevice)
    await link.close(reason)
    let why = link.endReason ?? reason
    logger.info("link with \(link.peerLabel) down: \(why)")
    return why
  }

  /// Applies the link's inbox whenever the reader has queued something.
  private func linkApplier(_ link: HandoffLink) async {
    var arrivals = link.arrivals.makeAsyncIterator()
    while await arrivals.next(isolation: self) != nil { await linkApplyWaiting(link) }
  }

  /// The most notes written as one batch (one store transaction, one flush
  /// of the folder: `applyAll`), and the most messages applied in one turn
  /// of the engine's thread.
  static var linkApplyBatch: Int { 64 }

  /// Applies every message waiting in the link's inbox, `linkApplyBatch` at
  /// a time, letting the engine's other work run between two turns: during
  /// a catch-up the inbox can hold thousands of notes, and a status request
  /// or a local save then waits for one batch, not for all of them.
  func linkApplyWaiting(_ link: HandoffLink) async {
    while linkApplyReceived(link) { await Task.yield() }
  }

  /// Applies up to `linkApplyBatch` messages waiting in the link's inbox,
  /// in order, runs of notes as batches (a batch ends before a note whose
  /// path it holds); returns whether more wait.
  private func linkApplyReceived(_ link: HandoffLink) -> Bool {
    var notes: [ActivityPayload] = []
    var keys: Set<String> = []
    func flush() {
      if !notes.isEmpty { linkApply(notes, link) }
      notes = []
      keys = []
    }
    let (messages, more) = link.takeReceived(upTo: Self.linkApplyBatch)
    for message in messages {
      switch message {
      case .note(let payload):
        transferArrived(payload, from: link.peerDevice)
        let key = Self.key(payload.activityType, payload.path)
        if keys.contains(key) { flush() }
        keys.insert(key)
        notes.append(payload)
      case .index(let entries):
        flush()
        if link.receivePeerIndex(entries) {
          logger.debug(
            "link with \(link.peerLabel): its INDEX came within \(link.peerIndexInterval) of the"
              + " last one; applied when that is over")
        }
      case .have(let entries):
        flush()
        for e in entries {
          link.peerHolds(Self.key(e.activityType, e.path), version: e.version, hash: e.hash)
        }
      case .gone(let entries):
        flush()
        linkGone(entries, link)
      case .moved(let from, let to):
        flush()
        linkMoved(from, to, link)
      case .members(_, let records):
        flush()
        if let records {
          do {
            try learn(records, from: link.peerLabel)
          } catch {
            logger.warning("link with \(link.peerLabel): \(error)")
          }
        }
      default:
        break
      }
    }
    flush()
    return more
  }

  /// Notes pushed by the peer, of distinct paths: written as one batch.
  func linkApply(_ payloads: [ActivityPayload], _ link: HandoffLink) {
    var accepted: [ActivityPayload] = []
    for payload in payloads {
      let key = Self.key(payload.activityType, payload.path)
      link.peerHolds(key, version: payload.version, hash: payload.hash)
      // Only the initiator resolves a conflict (`HandoffIndex.conflicts`).
      if !link.initiator, index.conflicts(with: payload) {
        logger.debug("\(payload.path): concurrent versions; \(link.peerLabel) resolves the conflict")
        continue
      }
      // A name the folder refuses is declined as a session would (counted once
      // per version), not written and failed at every push.
      if let reason = folders[payload.activityType]?.refusal(of: payload.path) {
        decline(
          HandoffIndexEntry(
            activityType: payload.activityType, path: payload.path, hash: payload.hash,
            size: payload.content.count, version: payload.version, origin: payload.origin),
          from: link.peerLabel, reason: "the folder refuses the name: \(reason)")
        continue
      }
      accepted.append(payload)
    }
    guard !accepted.isEmpty else { return }
    // Pushed again (a relay, a resend after a cut): written already, so no news.
    let held = Set(accepted.filter(index.holds).map { Self.key($0.activityType, $0.path) })
    var summary = SessionSummary(peerName: link.peerName, peerDevice: link.peerDevice)
    applyAll(accepted, from: link.peerLabel, summary: &summary)
    if summary.unwritten > 0 { link.scheduleResync(after: policy.retryInterval) }
    // A note made on the peer, pushed: what it is working on now. Of a
    // batch (a catch-up pushes many), only the last is told as news.
    let made = accepted.filter { $0.origin == link.peerDevice }
    for (n, payload) in made.enumerated() {
      recordHandedOver(
        payload, from: link.peerDevice, name: link.peerName,
        arrived: n == made.count - 1 && !held.contains(Self.key(payload.activityType, payload.path)))
    }
    // Received: the other links' peers may be getting it from its sender
    // too. Tell them we hold it (HAVE), and relay it to them only if they
    // still lack it after `RelayHolds.hold`.
    let now = ContinuousClock.now
    for payload in accepted where index.holds(payload) {
      let key = Self.key(payload.activityType, payload.path)
      guard let note = index[key] else { continue }
      relayHolds.received(key, hash: payload.hash, over: ObjectIdentifier(link), at: now)
      for other in links.values where other !== link { other.queueHave(note.entry) }
    }
  }

  /// Tombstones pushed by the peer (section 7.2).
  private func linkGone(_ entries: [HandoffIndexEntry], _ link: HandoffLink) {
    for e in entries {
      link.peerHolds(Self.key(e.activityType, e.path), version: e.version, hash: e.hash)
    }
    var summary = SessionSummary(peerName: link.peerName, peerDevice: link.peerDevice)
    batched { _ = needs(entries, from: link.peerLabel, summary: &summary) }
  }

  /// A rename pushed by the peer (section 7.3). Where it cannot be taken as
  /// a rename here, the new note's bytes are still needed: our INDEX then
  /// tells the peer what we hold, and it pushes them.
  private func linkMoved(_ from: HandoffIndexEntry, _ to: HandoffIndexEntry, _ link: HandoffLink) {
    let newKey = Self.key(to.activityType, to.path)
    link.peerHolds(Self.key(from.activityType, from.path), version: from.version, hash: from.hash)
    link.peerHolds(newKey, version: to.version, hash: to.hash)
    var summary = SessionSummary(peerName: link.peerName, peerDevice: link.peerDevice)
    guard let from = admitted(from, from: link.peerLabel, summary: &summary),
      let to = admitted(to, from: link.peerLabel, summary: &summary)
    else { return }
    var moved = false
    batched { moved = applyMove(from, to: to, from: link.peerLabel) }
    if moved { transferDropped(to.activityType, to.path, from: link.peerDevice) }
    if !moved, needs([to], from: link.peerLabel, summary: &summary).isEmpty == false {
      link.scheduleResync(after: .zero)
    }
  }

  // MARK: What the reader and the sender ask

  /// Tells every link's peer, by INDEX now, what this side lacks (section
  /// 6.2, "Retry"); a link made before it resyncs as it starts (`runLink`).
  func resyncLinks() {
    lackRevision &+= 1
    for link in links.values { link.resyncNow() }
  }

  /// This side's LINK: its note size limit, and its summary's root as it
  /// would answer GET_NODES for it now (section 6.2).
  func linkMessage() -> HandoffMessage {
    .link(
      maxNoteSize: UInt32(clamping: policy.maxNoteSize),
      root: answerNodes([IndexReconciliation.Request.root])[0])
  }

  /// The answer to a peer's GET_NODES on a link, from the index as it is now.
  func answerNodes(_ requests: [IndexReconciliation.Request])
    -> [IndexReconciliation.Answer]
  {
    ensureScanned()
    return IndexReconciliation.answer(requests, from: index)
  }

  /// What the peer lacks among the notes changed since the last call (all
  /// of them after the catch-up), in push order; nil before the catch-up
  /// told what the peer holds (which then makes a full pass anyway).
  func linkPending(_ link: HandoffLink) -> [HandoffIndexEntry]? {
    let changes = link.takeChanges()
    let candidates =
      changes.all ? offered : changes.keys.compactMap { index[$0].flatMap(offeredEntry) }
    guard var lacking = link.lacking(candidates) else { return nil }
    // Relays held back (section 6.2, "Relays"): wake again when they are due.
    let now = ContinuousClock.now
    var due: ContinuousClock.Instant?
    let id = ObjectIdentifier(link)
    var held: [String] = []
    lacking.removeAll { e in
      let key = Self.key(e.activityType, e.path)
      guard let until = relayHolds.heldUntil(key, hash: e.hash, for: id, at: now) else {
        return false
      }
      due = min(due ?? until, until)
      held.append(key)
      return true
    }
    link.recheck(held)
    if let due { link.wake(at: due) }
    if let current = currentEntry, let i = lacking.firstIndex(of: current), i != 0 {
      lacking.remove(at: i)
      lacking.insert(current, at: 0)
    }
    return lacking
  }
}
