import BatonSystem

/// What an agent remembers of the connections it made for peers' beacons,
/// and the bounds on them (PROTOCOL.md section 3, "Replays"): the settled
/// (peer digest, own digest) pairs, the attempt made for each address, and
/// the addresses held back after a failed handshake.
///
/// It belongs to the radio's side (`AgentRadio` keeps it beside its peer
/// scheduler), which decides on each beacon heard without waiting for the
/// engine's thread: the engine only publishes its index digest
/// (`HandoffEngine.currentIndexDigest`) and tells, in each session's
/// summary, the digest pair it settled.
///
/// A synchronous value with no clock and no I/O: every instant and the own
/// index digest are passed in, so each rule is unit-tested without actors
/// (`ConnectionMemoryTests`). Every part is bounded, and none is stored: after
/// a restart it costs at most one extra session per peer (PROTOCOL.md 10).
package struct ConnectionMemory: Sendable {
  /// A peer's index digest and ours when a session between them settled.
  package struct DigestPair: Hashable, Sendable {
    package var peer: UInt32
    package var mine: UInt32
  }

  /// A connection made for a beacon content: our digest then, when, how many
  /// attempts for the same content came before it without a finished session
  /// or link, and how long after it the next may come.
  package struct Attempt: Sendable {
    package var content: BeaconContent
    package var mine: UInt32
    package var time: ContinuousClock.Instant
    package var retries: Int
    package var retryAfter: Duration
  }

  /// Past these counts, the expired attempts and held addresses go, and the
  /// settled pairs all go.
  package static let settledLimit = 1024
  package static let attemptLimit = 512
  package static let heldLimit = 1024

  let policy: HandoffPolicy
  private var settled: Set<DigestPair> = []
  /// The last attempt per address.
  package private(set) var attempts: [String: Attempt] = [:]
  /// `address|content` pairs whose handshake failed, and until when they are
  /// held back.
  package private(set) var heldBack: [String: ContinuousClock.Instant] = [:]

  package init(policy: HandoffPolicy) {
    self.policy = policy
  }

  /// Whether to connect to `address` for a one-shot session on `content`:
  /// only when it is a beacon of this protocol, its index differs from ours
  /// (`mine`) in a way no finished session has already settled, and
  /// `mayLink` allows it. Records the attempt.
  package mutating func mayConnect(
    for content: BeaconContent, from address: String, mine: UInt32,
    addressIsKnown: Bool, now: ContinuousClock.Instant
  ) -> Bool {
    guard content.version == Beacon.protocolVersion, content.indexDigest != mine,
      !settled.contains(DigestPair(peer: content.indexDigest, mine: mine))
    else { return false }
    return mayLink(
      for: content, from: address, mine: mine, addressIsKnown: addressIsKnown, now: now)
  }

  /// Whether to connect to `address` for `content` at all (a link needs no
  /// difference of digests): not while the address is held back for this
  /// content after a failed handshake, nor before the last attempt's retry
  /// delay (2, 5, 10 s, then `retryInterval`: `HandoffPolicy.retryDelay`),
  /// nor while the same content was attempted from another address within
  /// `retryInterval`, unless `addressIsKnown` (the address resolves to a
  /// peer this agent has had a session with). Records the attempt; a link
  /// and a session at one address share the count.
  package mutating func mayLink(
    for content: BeaconContent, from address: String, mine: UInt32,
    addressIsKnown: Bool, now: ContinuousClock.Instant
  ) -> Bool {
    if let until = heldBack[Self.heldKey(address, content)], now < until { return false }
    var retries = 0
    if let last = attempts[address], last.content == content, last.mine == mine {
      if now - last.time < last.retryAfter { return false }
      retries = last.retries &+ 1
    }
    let elsewhere = attempts.contains {
      $0.key != address && $0.value.content == content && now - $0.value.time < policy.retryInterval
    }
    if elsewhere, !addressIsKnown { return false }
    if attempts.count > Self.attemptLimit {
      attempts = attempts.filter { now - $0.value.time < policy.retryInterval }
    }
    attempts[address] = Attempt(
      content: content, mine: mine, time: now, retries: retries,
      retryAfter: policy.retryDelay(after: retries))
    return true
  }

  /// A session or link with `address` finished its handshake and ran: its
  /// attempt is cleared, so the next change is tried at once.
  package mutating func succeeded(at address: String) {
    attempts[address] = nil
  }

  /// The handshake with `address` failed in a way a replayer's would (no key,
  /// a version notice): the content attempted there is held back for
  /// `retryInterval`. Not for good: a handshake broken by a transport fault
  /// (a lost or garbled message) looks the same, and a version notice comes
  /// before anything is authenticated, so anyone there could have sent it.
  package mutating func handshakeFailed(at address: String, now: ContinuousClock.Instant) {
    guard let attempt = attempts[address] else { return }
    if heldBack.count > Self.heldLimit { heldBack = heldBack.filter { $0.value > now } }
    heldBack[Self.heldKey(address, attempt.content)] = now + policy.retryInterval
  }

  /// What became of a session or link at `address`, started or served:
  /// one that ran (`summary`: a session's, nil for a link) clears the
  /// attempt (`succeeded`) and keeps the digest pair it settled; a
  /// handshake that failed as a replayer's would (no key, a version notice:
  /// `HandoffError.endsHandshakesWithThisAddress`) holds that beacon
  /// content back at that address (`handshakeFailed`). Other failures
  /// leave the attempt to its retry delay.
  package mutating func ended(
    at address: String, _ outcome: Result<SessionSummary?, any Error>,
    now: ContinuousClock.Instant
  ) {
    switch outcome {
    case .success(let summary):
      succeeded(at: address)
      if let settled = summary?.settled { settle(settled) }
    case .failure(let error):
      if let error = error as? HandoffError, error.endsHandshakesWithThisAddress {
        handshakeFailed(at: address, now: now)
      }
    }
  }

  /// A session left both indexes as `pair` says: the same beacon again
  /// while ours is unchanged needs no connection.
  package mutating func settle(_ pair: DigestPair) {
    if settled.count > Self.settledLimit { settled.removeAll() }
    settled.insert(pair)
  }

  /// Whether a session already settled `pair`.
  package func isSettled(_ pair: DigestPair) -> Bool { settled.contains(pair) }

  private static func heldKey(_ address: String, _ content: BeaconContent) -> String {
    address + "|\(content)"
  }
}
