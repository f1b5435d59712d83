import BatonSystem
import Synchronization

/// One long-lived, authenticated link with a peer (PROTOCOL.md section 6.2):
/// the handshake is made once, then either side pushes, at any time, every
/// note the other lacks, over the same channel, for as long as the link
/// stays up. `HandoffEngine.runLink(_:)` runs it; this object holds what the
/// link's reader, sender and watchdog share, and is how the agent (or the
/// engine, after a change of the index) wakes its sender.
///
/// Liveness: the link sends PING after `keepAlive` (the policy's) without
/// receiving anything, and closes when nothing at all (any frame counts)
/// arrives for `silenceLimit` after the PING went out. A PING waits behind a message
/// being sent (a large note takes many seconds on a slow radio): meanwhile
/// the link lives as long as that message's frames keep going out, and is
/// closed after `silenceLimit` with nothing out or in. `probe()` sends one at once (the agent does
/// so when it hears the peer's beacon under a new address: rotated, or
/// restarted with this link left half-open).
public final class HandoffLink: Sendable {
  /// Quiet time after which a PING is sent.
  let keepAlive: Duration
  /// Time without receiving after which a PING is sent while we send.
  let busyKeepAlive: Duration
  /// The least time between two INDEX messages of the peer's that are
  /// applied (PROTOCOL.md 6.2, "Retry"): each may make us push every note
  /// again, so a peer sending an empty one over and over costs one push of
  /// the folder per interval, not one per message.
  let peerIndexInterval: Duration
  /// How long after a PING with nothing received the link counts as dead.
  let silenceLimit: Duration

  /// Who the handshake proved the peer to be.
  public let peerName: String
  public let peerDevice: DeviceID
  /// Whether we connected (and so sent LINK first).
  public let initiator: Bool
  /// The peer's note size limit, from its LINK message.
  let peerMaxNoteSize: Int
  /// The peer's answer for its summary's root, from its LINK: our walk's
  /// first answer (section 6.2).
  let peerRoot: IndexReconciliation.Answer
  /// The engine's `lackRevision` before our LINK was made.
  let lackingSince: UInt64
  let peerLabel: String
  let channel: WatchedChannel
  /// The channel after the handshake: the reader and the sender each take a
  /// copy (each uses only its own direction's key and counter).
  let secure: SecureChannel
  let wakes: AsyncStream<Void>
  private let wakeContinuation: AsyncStream<Void>.Continuation
  /// Wakes the engine's applier: received messages wait in the inbox.
  let arrivals: AsyncStream<Void>
  private let arrivalContinuation: AsyncStream<Void>.Continuation

  /// The most bytes of received messages (notes, INDEX, HAVE, GONE, MOVED)
  /// the inbox holds before the reader stops reading and applies them itself
  /// (back-pressure on the peer).
  static let inboxLimit = 4 << 20

  /// What the peer is known to hold, per index key.
  struct PeerCopy {
    var version: VersionVector
    var hash: ContentHash
  }

  private struct State {
    var pingDue = false
    var pongDue = false
    /// Our walk of the peer's summary (catch-up) is due when the link comes up.
    var walkDue = true
    /// Our INDEX is sent when a note could not be written here (so that the
    /// peer pushes it again).
    var indexDue = false
    /// When our PING went out (the sender sent it).
    var pingSent: ContinuousClock.Instant?
    /// When a PING was asked for (it waits for the sender).
    var pingAsked: ContinuousClock.Instant?
    /// nil until our walk (or the peer's INDEX) told what the peer holds:
    /// nothing is pushed before.
    var peerHas: [String: PeerCopy]?
    /// Changes to look at on the next flush: every offered note (after the
    /// peer's holdings became known), else these keys.
    var fullScan = true
    var dirty: Set<String> = []
    /// What the peer sent us before `peerHas` was known: held by it too.
    var heldBeforeKnown: [String: PeerCopy] = [:]
    /// NODES answers to the peer's GET_NODES, for the sender to send.
    var nodesToSend: [[IndexReconciliation.Answer]] = []
    /// Our GET_NODES is out and unanswered; its answer once it arrived.
    var awaitingNodes = false
    var nodesReceived: [IndexReconciliation.Answer]?
    var resyncAt: ContinuousClock.Instant?
    /// When the peer's last INDEX was applied; one that came sooner than
    /// `peerIndexInterval` after it waits here (the newest only) until then.
    var peerIndexApplied: ContinuousClock.Instant?
    var deferredPeerIndex: (entries: [HandoffIndexEntry], at: ContinuousClock.Instant)?
    var closed: String?
    /// What the peer did that ended the link, if it broke the protocol or
    /// sent ERROR (recorded before the channel closes, so that it wins over
    /// the error that closing gives the other tasks).
    var failure: HandoffError?
    var dead = false
    /// Entries to announce with HAVE.
    var haves: [HandoffIndexEntry] = []
    /// Our membership records, to send with MEMBERS (the newest only).
    var members: (digest: [UInt8], records: [UInt8])?
    /// A wake-up scheduled for held relays, and when.
    var wakeAt: ContinuousClock.Instant?
    var wakeTask: Task<Void, Never>?
    /// The watchdog's sleep until its next deadline; `probe()` and a
    /// resync cancel it so that it looks again at once.
    var watchdogNap: Task<Void, Never>?
    /// Received messages that change the index or what the peer holds, in
    /// the order they came, until the engine applies them: those from
    /// `inboxHead` on wait (a taken one is nil, so that its bytes are freed
    /// at once), each with its bytes (`queuedBytes`); with the bytes of all
    /// that wait.
    var inbox: [(message: HandoffMessage, bytes: Int)?] = []
    var inboxHead = 0
    var inboxBytes = 0
    /// Whether the inbox has filled with messages other than notes (logged once).
    var inboxOverflowLogged = false
  }
  private let state = Mutex(State())

  init(
    secure: SecureChannel, channel: WatchedChannel, initiator: Bool, peerMaxNoteSize: Int,
    peerRoot: IndexReconciliation.Answer, lackingSince: UInt64, keepAlive: Duration,
    busyKeepAlive: Duration, silenceLimit: Duration,
    peerIndexInterval: Duration = .seconds(30)
  ) {
    self.peerIndexInterval = peerIndexInterval
    self.keepAlive = keepAlive
    self.busyKeepAlive = busyKeepAlive
    self.silenceLimit = silenceLimit
    self.secure = secure
    self.channel = channel
    self.initiator = initiator
    self.peerMaxNoteSize = peerMaxNoteSize
    self.peerRoot = peerRoot
    self.lackingSince = lackingSince
    peerName = secure.peer.name
    peerDevice = secure.peer.device
    peerLabel = secure.peerLabel
    (wakes, wakeContinuation) = AsyncStream.makeStream(
      of: Void.self, bufferingPolicy: .bufferingNewest(1))
    (arrivals, arrivalContinuation) = AsyncStream.makeStream(
      of: Void.self, bufferingPolicy: .bufferingNewest(1))
    wakeContinuation.yield()
    // A send starting on a quiet link shortens the watchdog's wait.
    channel.onSendStart { [weak self] in self?.wakeWatchdog() }
  }

  /// Makes the watchdog look again at once (it sleeps until its next
  /// deadline, which a change may have brought closer).
  private func wakeWatchdog() {
    state.withLock { $0.watchdogNap }?.cancel()
  }

  /// Why the link ended, once it has (nil while it runs).
  public var endReason: String? { state.withLock { $0.closed } }

  /// The peer's protocol violation or ERROR that ended the link, if any.
  var failure: HandoffError? { state.withLock { $0.failure } }


  /// Ends the link for what the peer did (`failure`), then closes it.
  func close(failing error: HandoffError) async {
    state.withLock { s in
      if s.closed == nil {
        s.closed = "\(error)"
        s.failure = error
      }
    }
    await close()
  }

  /// Whether the link ended because the peer stopped answering, or was
  /// replaced by a newer link with the same peer (it restarted): then the
  /// connection is of no more use, though a controller may still hold it.
  public var isDead: Bool { state.withLock { $0.dead } }

  /// The note under `key` changed: push it if the peer lacks it. Costs O(1)
  /// in the size of the index; a full pass happens only once the peer's
  /// holdings become known (catch-up, INDEX).
  func changed(key: String) {
    state.withLock { _ = $0.dirty.insert(key) }
    wakeContinuation.yield()
  }

  /// Looks at `keys` again on the next flush, without waking the sender
  /// (relays held back: `wake(at:)` wakes it when they are due).
  func recheck(_ keys: some Sequence<String>) {
    state.withLock { $0.dirty.formUnion(keys) }
  }

  /// What changed since the last call: everything, or these keys.
  func takeChanges() -> (all: Bool, keys: Set<String>) {
    state.withLock { s in
      defer {
        s.fullScan = false
        s.dirty = []
      }
      return (s.fullScan, s.dirty)
    }
  }

  /// Checks at once that the peer still answers (PING now, unless one is out).
  public func probe() {
    let send = state.withLock { s -> Bool in
      guard s.pingSent == nil, s.pingAsked == nil, s.closed == nil else { return false }
      s.pingDue = true
      s.pingAsked = .now
      return true
    }
    guard send else { return }
    wakeContinuation.yield()
    wakeWatchdog()
  }

  /// Ends the link (its channel closes; `runLink` returns); `peerGone`: the
  /// peer is not coming back on this connection (`isDead`).
  public func close(_ reason: String = "closed locally", peerGone: Bool = false) async {
    let timer = state.withLock { s -> Task<Void, Never>? in
      if s.closed == nil { s.closed = reason }
      if peerGone { s.dead = true }
      defer { s.wakeTask = nil }
      return s.wakeTask
    }
    timer?.cancel()
    wakeContinuation.finish()
    await channel.close()
  }

  // MARK: For the engine

  /// Queues a received message for the engine's applier, which takes up to
  /// a batch of those that wait at once (`takeReceived`): notes that arrive
  /// while it writes are written together. Returns whether the inbox holds more than
  /// `inboxLimit` bytes of messages, and whether that is the first time on
  /// this link the inbox filled with messages that are not notes (a peer
  /// flooding INDEX, HAVE or GONE: the caller logs it once).
  func queueReceived(_ message: HandoffMessage) -> (full: Bool, firstFlood: Bool) {
    let bytes = Self.queuedBytes(message)
    var isNote = false
    if case .note = message { isNote = true }
    let result = state.withLock { s -> (Bool, Bool) in
      s.inbox.append((message, bytes))
      s.inboxBytes = s.inboxBytes &+ bytes
      let full = s.inboxBytes > Self.inboxLimit
      let flood = full && !isNote && !s.inboxOverflowLogged
      if flood { s.inboxOverflowLogged = true }
      return (full, flood)
    }
    arrivalContinuation.yield()
    return result
  }

  /// The bytes a received message holds while it waits in the inbox: a
  /// note's content, and each index entry's encoded size.
  static func queuedBytes(_ message: HandoffMessage) -> Int {
    func sum(_ entries: [HandoffIndexEntry]) -> Int {
      entries.reduce(0) { $0 &+ $1.encodedSize }
    }
    switch message {
    case .note(let payload):
      return payload.content.count &+ payload.path.utf8.count &+ payload.activityType.utf8.count
    case .index(let entries), .have(let entries), .gone(let entries):
      return sum(entries)
    case .moved(let from, let to):
      return from.encodedSize &+ to.encodedSize
    default:
      return 0
    }
  }

  /// How many received messages wait for the engine.
  var waitingCount: Int { state.withLock { $0.inbox.count - $0.inboxHead } }

  /// The oldest `count` received messages not yet applied (all, if fewer
  /// wait), in order, and whether more wait after them.
  func takeReceived(upTo count: Int) -> (messages: [HandoffMessage], more: Bool) {
    state.withLock { s in
      let end = s.inboxHead + min(max(count, 0), s.inbox.count - s.inboxHead)
      var taken: [HandoffMessage] = []
      taken.reserveCapacity(end - s.inboxHead)
      for i in s.inboxHead..<end {
        if let (message, bytes) = s.inbox[i] {
          taken.append(message)
          s.inboxBytes = max(0, s.inboxBytes &- bytes)
        }
        s.inbox[i] = nil
      }
      s.inboxHead = end
      if s.inboxHead == s.inbox.count {
        s.inbox = []  // its storage too: a catch-up's inbox may have been large
        s.inboxHead = 0
      } else if s.inboxHead * 2 >= s.inbox.count {
        // Taking a batch at a time from the front: drop the taken slots once
        // they are half the array, so each message is moved about once.
        s.inbox.removeFirst(s.inboxHead)
        s.inboxHead = 0
      }
      return (taken, s.inboxHead < s.inbox.count)
    }
  }

  /// The replies due (PONG, PING, NODES answers), each taken once.
  func takeReplies() -> (ping: Bool, pong: Bool, nodes: [[IndexReconciliation.Answer]]) {
    state.withLock { s in
      defer {
        s.pingDue = false
        s.pongDue = false
        s.nodesToSend = []
      }
      return (s.pingDue, s.pongDue, s.nodesToSend)
    }
  }

  /// The sender is about to send the PING asked for. Recorded before the
  /// send, not after it: the peer's PONG can arrive before the sending
  /// task runs again, and an answer older than the PING would count as
  /// none (with nothing else coming, the link would be closed).
  func pingSending() {
    state.withLock { s in
      if s.pingAsked != nil { s.pingSent = .now }
      s.pingAsked = nil
    }
  }

  /// Whether our INDEX (a resync) or our walk (catch-up) is due, each taken once.
  func takeDue() -> (index: Bool, walk: Bool) {
    state.withLock { s in
      defer {
        s.indexDue = false
        s.walkDue = false
      }
      return (s.indexDue, s.walkDue)
    }
  }

  /// The most NODES answers waiting to be sent: a peer walks with one
  /// GET_NODES out at a time, so more is a peer flooding us.
  static let maxQueuedNodes = 2

  /// Queues the answer to the peer's GET_NODES; false when the peer has more
  /// requests out than a walk makes (a protocol violation).
  func queueNodes(_ answers: [IndexReconciliation.Answer]) -> Bool {
    let queued = state.withLock { s -> Bool in
      guard s.nodesToSend.count < Self.maxQueuedNodes else { return false }
      s.nodesToSend.append(answers)
      return true
    }
    if queued { wakeContinuation.yield() }
    return queued
  }

  /// Our GET_NODES is about to go out.
  func expectNodes() {
    state.withLock { s in
      s.awaitingNodes = true
      s.nodesReceived = nil
    }
  }

  /// The peer's NODES; false when none was asked for (a protocol violation).
  func deliverNodes(_ answers: [IndexReconciliation.Answer]) -> Bool {
    let expected = state.withLock { s -> Bool in
      guard s.awaitingNodes, s.nodesReceived == nil else { return false }
      s.nodesReceived = answers
      return true
    }
    if expected { wakeContinuation.yield() }
    return expected
  }

  /// The answer to our GET_NODES, once it arrived (taken once).
  func takeNodes() -> [IndexReconciliation.Answer]? {
    state.withLock { s in
      guard let answers = s.nodesReceived else { return nil }
      s.nodesReceived = nil
      s.awaitingNodes = false
      return answers
    }
  }

  /// Wakes the sender now (a walk's wait for NODES ran out of time).
  func wakeSender() { wakeContinuation.yield() }

  /// Announce `entry` (received from another peer) with HAVE.
  func queueHave(_ entry: HandoffIndexEntry) {
    state.withLock { if $0.closed == nil { $0.haves.append(entry) } }
    wakeContinuation.yield()
  }

  /// Send our membership records (they changed since the link came up).
  func queueMembers(_ records: [UInt8], digest: [UInt8]) {
    state.withLock { if $0.closed == nil { $0.members = (digest, records) } }
    wakeContinuation.yield()
  }

  func takeMembers() -> (digest: [UInt8], records: [UInt8])? {
    state.withLock { s in
      defer { s.members = nil }
      return s.members
    }
  }

  func takeHaves() -> [HandoffIndexEntry] {
    state.withLock { s in
      defer { s.haves = [] }
      return s.haves
    }
  }

  /// Wakes the sender at `instant` (for relays held until then).
  func wake(at instant: ContinuousClock.Instant) {
    let task = state.withLock { s -> Task<Void, Never>? in
      guard s.closed == nil else { return nil }
      if let at = s.wakeAt, at <= instant, s.wakeTask != nil { return nil }
      s.wakeTask?.cancel()
      s.wakeAt = instant
      let task = Task { [weak self] in
        try? await Timers.shared.sleep(until: instant)
        guard !Task.isCancelled, let self else { return }
        self.state.withLock { s in
          s.wakeAt = nil
          s.wakeTask = nil
        }
        self.wakeContinuation.yield()
      }
      s.wakeTask = task
      return task
    }
    _ = task
  }

  func requestPong() {
    state.withLock { $0.pongDue = true }
    wakeContinuation.yield()
  }

  /// The peer's INDEX: from now on, exactly what it holds.
  /// The peer's INDEX: what it holds (and so what we push), at once or,
  /// within `peerIndexInterval` of the last one applied, when that is over
  /// (only the newest waits). Returns whether this one waits.
  @discardableResult
  func receivePeerIndex(_ entries: [HandoffIndexEntry]) -> Bool {
    let now = ContinuousClock.now
    let deferred = state.withLock { s -> Bool in
      guard let last = s.peerIndexApplied, now - last < peerIndexInterval else {
        s.peerIndexApplied = now
        s.deferredPeerIndex = nil
        return false
      }
      s.deferredPeerIndex = (entries, last + peerIndexInterval)
      return true
    }
    if deferred {
      wakeWatchdog()
    } else {
      setPeerIndex(entries)
    }
    return deferred
  }

  /// Whether a peer's INDEX waits for `peerIndexInterval` to pass.
  var peerIndexWaits: Bool { state.withLock { $0.deferredPeerIndex != nil } }

  private func setPeerIndex(_ entries: [HandoffIndexEntry]) {
    var map: [String: PeerCopy] = [:]
    map.reserveCapacity(entries.count)
    for e in entries {
      map[HandoffEngine.key(e.activityType, e.path)] = PeerCopy(version: e.version, hash: e.hash)
    }
    state.withLock { s in
      for (key, copy) in s.heldBeforeKnown where map[key] == nil { map[key] = copy }
      s.heldBeforeKnown = [:]
      s.peerHas = map
      s.fullScan = true
    }
    wakeContinuation.yield()
  }

  /// What our walk of the peer's summary found (PROTOCOL.md 6.2): the peer
  /// holds what `snapshot` (our index when the walk began) held, except our
  /// entries under `differing`, where it holds `peerEntries` (or nothing).
  /// An INDEX the peer sent meanwhile wins: the walk began from the root
  /// its LINK carried, which may be older than that INDEX (a note wanted
  /// back, section 7.4), and taking the peer to lack a note costs at most
  /// a NOTE sent again, while taking it to hold one loses the note.
  func setPeerHoldings(
    snapshot: HandoffIndex, differing: Set<String>, peerEntries: [HandoffIndexEntry]
  ) {
    guard state.withLock({ $0.peerHas == nil }) else { return }
    var map: [String: PeerCopy] = [:]
    map.reserveCapacity(snapshot.summary.count)
    for (key, note) in snapshot where !differing.contains(key) && snapshot.isOffered(note) {
      map[key] = PeerCopy(version: note.entry.version, hash: note.entry.hash)
    }
    for e in peerEntries {
      map[HandoffEngine.key(e.activityType, e.path)] = PeerCopy(version: e.version, hash: e.hash)
    }
    state.withLock { s in
      guard s.peerHas == nil else { return }
      for (key, copy) in s.heldBeforeKnown {
        if let known = map[key], copy.version.compare(known.version) == .older { continue }
        map[key] = copy
      }
      s.heldBeforeKnown = [:]
      s.peerHas = map
      s.fullScan = true
    }
    wakeContinuation.yield()
  }

  /// The peer holds (at least) this version: it sent it, or we did.
  func peerHolds(_ key: String, version: VersionVector, hash: ContentHash) {
    state.withLock { s in
      guard s.peerHas != nil else {
        if let known = s.heldBeforeKnown[key], version.compare(known.version) == .older { return }
        s.heldBeforeKnown[key] = PeerCopy(version: version, hash: hash)
        return
      }
      if let known = s.peerHas?[key], version.compare(known.version) == .older { return }
      s.peerHas?[key] = PeerCopy(version: version, hash: hash)
    }
  }

  /// The copy the peer holds of a note, as far as we know.
  func peerCopy(_ key: String) -> PeerCopy? {
    state.withLock { $0.peerHas?[key] }
  }

  /// Which of `entries` the peer lacks (nil before our walk or its INDEX told).
  func lacking(_ entries: [HandoffIndexEntry]) -> [HandoffIndexEntry]? {
    state.withLock { s in
      guard let peerHas = s.peerHas else { return nil }
      return entries.filter { e in
        guard e.size <= peerMaxNoteSize else { return false }
        guard let copy = peerHas[HandoffEngine.key(e.activityType, e.path)] else { return true }
        // Same bytes: only a newer version is worth sending (a conflict
        // resolved here, whose merged version the peer must adopt; what we
        // take the peer to hold may be a push it ignored, section 6.2 step 4).
        if copy.hash == e.hash { return e.version.compare(copy.version) == .newer }
        switch e.version.compare(copy.version) {
        case .newer, .concurrent: return true
        case .equal: return IncomingVersion.wins(e.hash, over: copy.hash)
        case .older: return false
        }
      }
    }
  }

  /// Resyncs at once, even when one was scheduled for later.
  func resyncNow() {
    state.withLock { s in s.resyncAt = .now }
    wakeWatchdog()
  }

  /// A note could not be written here: ask the peer for everything again
  /// (our INDEX) after `delay`.
  func scheduleResync(after delay: Duration) {
    let scheduled = state.withLock { s -> Bool in
      guard s.resyncAt == nil else { return false }
      s.resyncAt = .now + delay
      return true
    }
    if scheduled { wakeWatchdog() }
  }

  /// How long without receiving before a PING: `keepAlive` on a quiet
  /// link, `busyKeepAlive` while a send is under way (it may wait for the
  /// flow control of a peer that is gone). Not "sent since the peer last
  /// said anything": our PONG is such a send, and the two sides would then
  /// ping each other every `busyKeepAlive` for ever.
  private var quietLimit: Duration { channel.isSending ? busyKeepAlive : keepAlive }

  /// When the watchdog must look next: when a PING out (or waiting to go
  /// out) has had `silenceLimit`, when a quiet link is due a PING, or when a
  /// resync is due, whichever is first.
  private func nextWatch() -> ContinuousClock.Instant {
    let last = channel.lastReceived
    let lastOut = channel.lastSent
    return state.withLock { s in
      var next: ContinuousClock.Instant
      if let sent = s.pingSent {
        next = sent + silenceLimit
      } else if let asked = s.pingAsked {
        next = max(asked, lastOut) + silenceLimit
      } else {
        next = last + quietLimit
      }
      if let at = s.resyncAt { next = min(next, at) }
      if let at = s.deferredPeerIndex?.at { next = min(next, at) }
      return next
    }
  }

  /// The watchdog: PING after `keepAlive` of silence, close after
  /// `silenceLimit` more; a due resync sends our INDEX; a peer's INDEX that
  /// waited (`receivePeerIndex`) is applied when due. It sleeps until the
  /// next of these is due (an idle link wakes it once per `keepAlive`), or
  /// until `probe()` or a resync changes that. Returns when the link ends.
  func watch() async {
    while !Task.isCancelled {
      let deadline = nextWatch()
      let nap = Task { _ = try? await Timers.shared.sleep(until: deadline) }
      let closed = state.withLock { s -> Bool in
        s.watchdogNap = nap
        return s.closed != nil
      }
      if closed { nap.cancel() }
      await withTaskCancellationHandler {
        await nap.value
      } onCancel: {
        nap.cancel()
      }
      state.withLock { $0.watchdogNap = nil }
      if Task.isCancelled { return }
      let now = ContinuousClock.now
      let last = channel.lastReceived
      let lastOut = channel.lastSent
      enum Verdict { case fine, wake, dead }
      let dueIndex = state.withLock { s -> [HandoffIndexEntry]? in
        guard let waiting = s.deferredPeerIndex, now >= waiting.at, s.closed == nil else {
          return nil
        }
        s.deferredPeerIndex = nil
        s.peerIndexApplied = now
        return waiting.entries
      }
      if let dueIndex { setPeerIndex(dueIndex) }
      let verdict = state.withLock { s -> Verdict in
        guard s.closed == nil else { return .dead }
        var verdict = Verdict.fine
        if let sent = s.pingSent {
          if last >= sent {
            s.pingSent = nil
          } else if now - sent >= silenceLimit {
            s.closed = "the peer has not answered for \(silenceLimit) (a PING went unanswered)"
            s.dead = true
            return .dead
          }
        } else if let asked = s.pingAsked {
          // The PING waits behind a message being sent: alive while its
          // frames go out (or anything comes in).
          if last >= asked {
            s.pingAsked = nil
            s.pingDue = false
          } else if now - max(asked, lastOut) >= silenceLimit {
            s.closed =
              "nothing went out to the peer or came from it for \(silenceLimit) (sends blocked)"
            s.dead = true
            return .dead
          }
        }
        if s.pingSent == nil, s.pingAsked == nil,
          now - last >= quietLimit
        {
          s.pingDue = true
          s.pingAsked = now
          verdict = .wake
        }
        if let at = s.resyncAt, now >= at {
          s.resyncAt = nil
          s.indexDue = true
          verdict = .wake
        }
        return verdict
      }
      switch verdict {
      case .fine: continue
      case .wake: wakeContinuation.yield()
      case .dead:
        wakeContinuation.finish()
        await channel.close()
        return
      }
    }
  }
}
