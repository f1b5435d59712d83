import BatonSystem

/// The link as the driver of its channel (PROTOCOL.md section 6.2): its
/// reader and its sender are the only code that receives from or sends on
/// it. They ask the engine for every decision and change of the index:
/// the reader hands what arrives to the engine's applier
/// (`HandoffEngine.linkApplyWaiting`), and the sender, which runs on the
/// engine's executor (`isolated`), asks it what the peer lacks
/// (`linkPending`) and for each note's bytes (`serveNote`), and sends it as
/// `PushPlan` splits it. `HandoffEngine.runLink` runs both, with the
/// applier and the watchdog.
extension HandoffLink {
  // MARK: Reader

  /// Reads the peer's messages, off the engine's thread. Those that change
  /// the index or what the peer holds go, in order, to the inbox that the
  /// engine's applier applies; when the link ends, what arrived is applied
  /// before the reader returns. The reader never sends, so two sides
  /// pushing large notes to each other at once cannot deadlock on L2CAP
  /// credits.
  func read(for engine: HandoffEngine) async throws {
    var rx = secure
    rx.timeout = .zero  // the watchdog tells a quiet peer from a dead one
    let meter = MessageMeter()
    rx.meter = meter
    await engine.watch(meter, from: peerDevice)
    do {
      try await read(&rx, for: engine)
    } catch {
      await engine.unwatch(meter, from: peerDevice)
      await engine.linkApplyWaiting(self)
      throw error
    }
    await engine.unwatch(meter, from: peerDevice)
  }

  private func read(_ rx: inout SecureChannel, for engine: HandoffEngine) async throws {
    while true {
      let message = try await rx.receive()
      switch message {
      case .note, .index, .have, .gone, .moved, .members:
        let (full, firstFlood) = queueReceived(message)
        if firstFlood {
          engine.logger.warning(
            "\(peerLabel) sent more than \(HandoffLink.inboxLimit >> 20) MiB of"
              + " \(message.kind) and other index messages before they could be applied;"
              + " reading from it waits until they are (if this repeats, check that peer's agent)")
        }
        if full { await engine.linkApplyWaiting(self) }
      case .getNodes(let requests):
        guard queueNodes(await engine.answerNodes(requests)) else {
          throw await ending(
            HandoffError.protocolViolation(
              peer: peerLabel, reason: "GET_NODES before its last NODES was sent"))
        }
      case .nodes(let answers):
        guard deliverNodes(answers) else {
          throw await ending(
            HandoffError.protocolViolation(peer: peerLabel, reason: "NODES not asked for"))
        }
      case .ping:
        requestPong()
      case .pong, .noteUnavailable:
        break
      case .error(_, let text):
        throw await ending(HandoffError.peerError(peer: peerLabel, text: text))
      default:
        throw await ending(
          HandoffError.protocolViolation(
            peer: peerLabel, reason: "unexpected \(message.kind) on a link"))
      }
    }
  }

  /// Ends the link for `error` before the channel's close ends the sender
  /// too: whichever task then ends first, the link ends, and is counted,
  /// for what the reader found.
  private func ending(_ error: HandoffError) async -> HandoffError {
    await close(failing: error)
    return error
  }

  // MARK: Sender

  /// Sends, on the engine's executor, whenever woken: what is due, then
  /// what the peer lacks; until the link ends.
  func send(_ engine: isolated HandoffEngine) async throws {
    var tx = secure
    var wakes = self.wakes.makeAsyncIterator()
    while await wakes.next(isolation: engine) != nil {
      try await flush(engine, &tx, &wakes)
    }
  }

  /// Sends what is due: PONG, PING, NODES, our walk (catch-up) or INDEX
  /// (resync), then every note the peer lacks, the current activity first;
  /// again until nothing is left.
  private func flush(
    _ engine: isolated HandoffEngine, _ tx: inout SecureChannel,
    _ wakes: inout AsyncStream<Void>.Iterator
  ) async throws {
    while endReason == nil {
      try await sendControl(engine, &tx, &wakes)
      guard let pending = engine.linkPending(self), !pending.isEmpty else { return }
      var summary = SessionSummary(peerName: peerName, peerDevice: peerDevice)
      let plan = PushPlan(pending) { self.peerCopy($0)?.hash }
      for move in plan.moves {
        let (gone, new) = (move.gone, move.new)
        try await sendControl(engine, &tx, &wakes)
        try await tx.send(.moved(from: gone, to: new))
        for e in [gone, new] {
          peerHolds(HandoffEngine.key(e.activityType, e.path), version: e.version, hash: e.hash)
        }
      }
      let tombstones = plan.tombstones
      for chunk in stride(from: 0, to: tombstones.count, by: Self.goneBatch) {
        try await sendControl(engine, &tx, &wakes)
        let batch = Array(tombstones[chunk..<min(chunk + Self.goneBatch, tombstones.count)])
        try await tx.send(.gone(batch))
        for e in batch {
          peerHolds(HandoffEngine.key(e.activityType, e.path), version: e.version, hash: e.hash)
        }
      }
      for e in plan.notes {
        try await sendControl(engine, &tx, &wakes)
        let key = HandoffEngine.key(e.activityType, e.path)
        // Still lacking (a save or an arrival meanwhile may have changed it)?
        guard let now = engine.index[key], !now.deleted, lacking([now.entry])?.isEmpty == false
        else { continue }
        // The entry sent, as it was then: a note applied while the send
        // waited (a conflict resolved) is still to be pushed.
        if let sent = try await engine.serveNote(e.activityType, e.path, &tx, &summary) {
          peerHolds(key, version: sent.version, hash: sent.hash)
        } else if let unsendable = engine.index[key] {
          // Not sendable: not retried before the next INDEX.
          peerHolds(key, version: unsendable.entry.version, hash: unsendable.entry.hash)
        }
      }
    }
  }

  /// The most tombstones in one GONE.
  static var goneBatch: Int { 512 }

  private func sendControl(
    _ engine: isolated HandoffEngine, _ tx: inout SecureChannel,
    _ wakes: inout AsyncStream<Void>.Iterator
  ) async throws {
    try await sendReplies(&tx)
    let due = takeDue()
    if due.index { try await tx.send(.index(engine.offered)) }
    if due.walk { try await walk(engine, &tx, &wakes) }
    let haves = takeHaves()
    if !haves.isEmpty { try await tx.send(.have(haves)) }
    if let members = takeMembers() {
      try await tx.send(.members(digest: members.digest, records: members.records))
    }
  }

  /// What is sent whenever due, even in the middle of our walk: PONG, PING,
  /// and the answers to the peer's walk (so that two walks never wait on
  /// each other).
  private func sendReplies(_ tx: inout SecureChannel) async throws {
    let due = takeReplies()
    if due.pong { try await tx.send(.pong) }
    if due.ping {
      pingSending()
      try await tx.send(.ping)
    }
    for answers in due.nodes { try await tx.send(.nodes(answers)) }
  }

  /// The catch-up step of a link: walks the peer's summary (the root as its
  /// LINK answered it, then GET_NODES, the reader handing over each NODES)
  /// against our index as it was when the walk began, then knows what the
  /// peer holds and pushes what it lacks. A peer that leaves a GET_NODES
  /// unanswered for `receiveTimeout` ends the link.
  private func walk(
    _ engine: isolated HandoffEngine, _ tx: inout SecureChannel,
    _ wakes: inout AsyncStream<Void>.Iterator
  ) async throws {
    engine.ensureScanned()
    let snapshot = engine.index
    var walk = IndexReconciliation()
    var peerEntries: [HandoffIndexEntry] = []
    let receiveTimeout = engine.policy.receiveTimeout
    var root: IndexReconciliation.Answer? = peerRoot
    while let request = walk.nextRequest() {
      if let answer = root, request == [.root] {
        root = nil
        try absorb([answer], request, &walk, &peerEntries, engine, snapshot)
        continue
      }
      expectNodes()
      try await tx.send(.getNodes(request))
      let deadline = ContinuousClock.now + receiveTimeout
      let timer = Task { [weak self] in
        try? await Timers.shared.sleep(until: deadline)
        self?.wakeSender()
      }
      defer { timer.cancel() }
      var answers = takeNodes()
      while answers == nil {
        try await sendReplies(&tx)
        answers = takeNodes()
        if answers != nil { break }
        guard ContinuousClock.now < deadline else {
          throw HandoffError.protocolViolation(
            peer: peerLabel, reason: "no NODES within \(receiveTimeout)")
        }
        guard await wakes.next(isolation: engine) != nil else { throw CancellationError() }
        answers = takeNodes()
      }
      try absorb(answers!, request, &walk, &peerEntries, engine, snapshot)
    }
    engine.transferTotalsKnown(from: peerDevice)
    setPeerHoldings(snapshot: snapshot, differing: walk.differingKeys, peerEntries: peerEntries)
  }

  /// One step of the walk: the peer's answers to `request`.
  private func absorb(
    _ answers: [IndexReconciliation.Answer], _ request: [IndexReconciliation.Request],
    _ walk: inout IndexReconciliation, _ peerEntries: inout [HandoffIndexEntry],
    _ engine: isolated HandoffEngine, _ snapshot: HandoffIndex
  ) throws {
    let found: [HandoffIndexEntry]
    do {
      found = try walk.absorb(request, answers, mine: snapshot).peerEntries
    } catch {
      throw HandoffError.protocolViolation(peer: peerLabel, reason: error.reason)
    }
    // What the peer will push: its progress, for `baton status`.
    engine.expectPushes(found, before: snapshot, self)
    peerEntries += found
  }
}
