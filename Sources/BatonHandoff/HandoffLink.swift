import BatonSystem
import Synchronization

/// One long-lived, authenticated link with a peer (PROTOCOL.md section 6.2):
/// the handshake is made once, then either side pushes, at any time, every
/// note the other lacks, over the same channel, for as long as the link
/// stays up. `HandoffEngine.runLink(_:)` runs it; this object holds what the
/// link's reader, sender and watchdog share, and is how the agent (or the
/// engine, after a change of the index) wakes its sender.
///
/// Liveness: the link sends PING after `keepAlive` without receiving
/// anything, and closes when nothing at all (any frame counts) arrives for
/// `silenceLimit` after a PING; `probe()` sends one at once (the agent does
/// so when it hears the peer's beacon under a new address: rotated, or
/// restarted with this link left half-open).
public final class HandoffLink: Sendable {
  /// Quiet time after which a PING is sent.
  public static let keepAlive: Duration = .seconds(3)
  /// How long after a PING with nothing received the link counts as dead.
  public static let silenceLimit: Duration = .seconds(6)

  /// Who the handshake proved the peer to be.
  public let peerName: String
  public let peerDevice: DeviceID
  /// Whether we connected (and so sent LINK first).
  public let initiator: Bool
  /// The peer's note size limit, from its LINK message.
  let peerMaxNoteSize: Int
  let peerLabel: String
  let channel: WatchedChannel
  /// The channel after the handshake: the reader and the sender each take a
  /// copy (each uses only its own direction's key and counter).
  let secure: SecureChannel
  let wakes: AsyncStream<Void>
  private let wakeContinuation: AsyncStream<Void>.Continuation

  /// What the peer is known to hold, per index key.
  struct PeerCopy {
    var version: VersionVector
    var hash: ContentHash
  }

  private struct State {
    var pingDue = false
    var pongDue = false
    /// Our INDEX is sent when the link comes up (catch-up) and when a note
    /// could not be written here (so that the peer pushes it again).
    var indexDue = true
    var pingSent: ContinuousClock.Instant?
    /// nil until the peer's INDEX arrives: nothing is pushed before.
    var peerHas: [String: PeerCopy]?
    var resyncAt: ContinuousClock.Instant?
    var closed: String?
    var dead = false
    /// Entries to announce with HAVE.
    var haves: [HandoffIndexEntry] = []
    /// A wake-up scheduled for held relays, and when.
    var wakeAt: ContinuousClock.Instant?
    var wakeTask: Task<Void, Never>?
  }
  private let state = Mutex(State())

  init(secure: SecureChannel, channel: WatchedChannel, initiator: Bool, peerMaxNoteSize: Int) {
    self.secure = secure
    self.channel = channel
    self.initiator = initiator
    self.peerMaxNoteSize = peerMaxNoteSize
    peerName = secure.peer.name
    peerDevice = secure.peer.device
    peerLabel = secure.peerLabel
    (wakes, wakeContinuation) = AsyncStream.makeStream(
      of: Void.self, bufferingPolicy: .bufferingNewest(1))
    wakeContinuation.yield()
  }

  /// Why the link ended, once it has (nil while it runs).
  public var endReason: String? { state.withLock { $0.closed } }

  /// Whether the link ended because the peer stopped answering, or was
  /// replaced by a newer link with the same peer (it restarted): then the
  /// connection is of no more use, though a controller may still hold it.
  public var isDead: Bool { state.withLock { $0.dead } }

  /// The index changed: push what the peer lacks.
  public func changed() { wakeContinuation.yield() }

  /// Checks at once that the peer still answers (PING now, unless one is out).
  public func probe() {
    let send = state.withLock { s -> Bool in
      guard s.pingSent == nil, s.closed == nil else { return false }
      s.pingDue = true
      s.pingSent = .now
      return true
    }
    if send { wakeContinuation.yield() }
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

  /// The control messages due, each taken once.
  func takeControl() -> (ping: Bool, pong: Bool, index: Bool) {
    state.withLock { s in
      defer {
        s.pingDue = false
        s.pongDue = false
        s.indexDue = false
      }
      return (s.pingDue, s.pongDue, s.indexDue)
    }
  }

  /// Announce `entry` (received from another peer) with HAVE.
  func queueHave(_ entry: HandoffIndexEntry) {
    state.withLock { if $0.closed == nil { $0.haves.append(entry) } }
    wakeContinuation.yield()
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
  func setPeerIndex(_ entries: [HandoffIndexEntry]) {
    var map: [String: PeerCopy] = [:]
    map.reserveCapacity(entries.count)
    for e in entries {
      map[HandoffEngine.key(e.activityType, e.path)] = PeerCopy(version: e.version, hash: e.hash)
    }
    state.withLock { $0.peerHas = map }
    wakeContinuation.yield()
  }

  /// The peer holds (at least) this version: it sent it, or we did.
  func peerHolds(_ key: String, version: VersionVector, hash: ContentHash) {
    state.withLock { s in
      guard s.peerHas != nil else { return }
      if let known = s.peerHas?[key], version.compare(known.version) == .older { return }
      s.peerHas?[key] = PeerCopy(version: version, hash: hash)
    }
  }

  /// Which of `entries` the peer lacks (nil before its INDEX arrived).
  func lacking(_ entries: [HandoffIndexEntry]) -> [HandoffIndexEntry]? {
    state.withLock { s in
      guard let peerHas = s.peerHas else { return nil }
      return entries.filter { e in
        guard e.size <= peerMaxNoteSize else { return false }
        guard let copy = peerHas[HandoffEngine.key(e.activityType, e.path)] else { return true }
        if copy.hash == e.hash { return false }
        switch e.version.compare(copy.version) {
        case .newer, .concurrent: return true
        case .equal: return HandoffEngine.wins(e.hash, over: copy.hash)
        case .older: return false
        }
      }
    }
  }

  /// A note could not be written here: ask the peer for everything again
  /// (our INDEX) after `delay`.
  func scheduleResync(after delay: Duration) {
    state.withLock { if $0.resyncAt == nil { $0.resyncAt = .now + delay } }
  }

  /// The watchdog: PING after `keepAlive` of silence, close after
  /// `silenceLimit` more; a due resync sends our INDEX. Returns when the link
  /// ends.
  func watch() async {
    while true {
      do {
        try await Timers.shared.sleep(for: Self.keepAlive)
      } catch {
        return
      }
      let now = ContinuousClock.now
      let last = channel.lastReceived
      enum Verdict { case fine, wake, dead }
      let verdict = state.withLock { s -> Verdict in
        guard s.closed == nil else { return .dead }
        var verdict = Verdict.fine
        if let sent = s.pingSent {
          if last >= sent {
            s.pingSent = nil
          } else if now - sent >= Self.silenceLimit {
            s.closed = "the peer has not answered for \(Self.silenceLimit) (a PING went unanswered)"
            s.dead = true
            return .dead
          }
        }
        if s.pingSent == nil, now - last >= Self.keepAlive {
          s.pingDue = true
          s.pingSent = now
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
