import BatonSystem

/// The bound on connections caused by a replayed beacon across addresses
/// (PROTOCOL.md section 3, "Replays").
extension HandoffEngine {
  /// Whether a connection for the same beacon `content` went to another address
  /// less than `retryInterval` ago and has not ended in a finished session (a
  /// finished session clears its attempt). A replayer that records one beacon
  /// and plays it from many fresh addresses so gets one connection per content
  /// per `retryInterval`, not one per address. An address that resolves to a
  /// peer we have had a session with is never held back by this rule, so a
  /// replayer cannot keep a known peer waiting; an unknown real peer waits at
  /// most `retryInterval` (and it connects to us itself meanwhile).
  func isContentAttemptedElsewhere(
    _ content: BeaconContent, from address: String, now: ContinuousClock.Instant
  ) -> Bool {
    let elsewhere = attempts.contains {
      $0.key != address && $0.value.content == content
        && now - $0.value.time < policy.retryInterval
    }
    guard elsewhere else { return false }
    if let bytes = littleEndianBytes(printedAddress: address), peerName(resolving: bytes) != nil {
      return false
    }
    return true
  }

  /// Whether to connect to `address` for a link (PROTOCOL.md 6.2), on the
  /// beacon `data` heard from it: the bounds of `shouldConnect` hold on this
  /// path too, and the two paths share one count of attempts. An address
  /// whose handshake failed for this content (another protocol version
  /// included) waits `retryInterval`; other failed attempts for the same
  /// content and address are retried after `policy.retryDelay` (2, 5, 10 s,
  /// then `retryInterval`), whether they were made for a link or a session;
  /// the same content from another unknown address waits while an attempt
  /// for it is under way or failed within `retryInterval`. Records the
  /// attempt; a link's successful handshake clears it (`openLink`).
  public func shouldLink(beacon data: [UInt8], from address: String) -> Bool {
    ensureScanned()
    guard let content = openBeacon(data, from: address) else { return false }
    let now = ContinuousClock.now
    guard let retries = attemptsBefore(content, from: address, now: now) else { return false }
    record(content, from: address, retries: retries, now: now)
    return true
  }

  /// How many attempts for `content` at `address` came before without a
  /// finished session or link, or nil when the bounds say to wait: the
  /// address failed the handshake for this content, the last attempt's
  /// retry delay has not passed, or the content was attempted elsewhere.
  func attemptsBefore(
    _ content: BeaconContent, from address: String, now: ContinuousClock.Instant
  ) -> Int? {
    if let until = failedBeacons[address + "|\(content)"], now < until { return nil }
    var retries = 0
    if let last = attempts[address], last.content == content, last.mine == indexDigest {
      if now - last.time < last.retryAfter { return nil }
      retries = last.retries &+ 1
    }
    guard !isContentAttemptedElsewhere(content, from: address, now: now) else { return nil }
    return retries
  }

  /// Records a connection for `content` to `address`, the `retries`th in a
  /// row without a finished session or link.
  func record(
    _ content: BeaconContent, from address: String, retries: Int, now: ContinuousClock.Instant
  ) {
    if attempts.count > 512 {
      attempts = attempts.filter { now - $0.value.time < policy.retryInterval }
    }
    attempts[address] = (content, indexDigest, now, retries, policy.retryDelay(after: retries))
  }
}
