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
}
