import BatonSystem

/// Notes received over a link, held back from the other links for a while
/// (PROTOCOL.md 6.2, "Relays"): their peers may be getting them from the
/// sender too, and say so with HAVE. A note is relayed to a link whose
/// peer still lacks it once its hold is over.
///
/// A value with no clock: every instant is passed in. Links are told apart
/// by an identity the caller chooses (the engine uses each link's object
/// identity). Bounded: past `limit` holds, those over are dropped at the
/// next note received.
struct RelayHolds {
  /// How long a note received over a link waits before it is relayed.
  static let hold: Duration = .seconds(2)
  /// How many holds are kept before those over are dropped.
  static let limit = 1024

  private struct Hold {
    var until: ContinuousClock.Instant
    var hash: ContentHash
    var from: ObjectIdentifier
  }
  /// By index key.
  private var holds: [String: Hold] = [:]

  /// A note, under index key `key`, of content `hash`, received over link
  /// `link` at `now`: held back from the other links until `now + hold`.
  mutating func received(
    _ key: String, hash: ContentHash, over link: ObjectIdentifier, at now: ContinuousClock.Instant
  ) {
    if holds.count > Self.limit { holds = holds.filter { $0.value.until > now } }
    holds[key] = Hold(until: now + Self.hold, hash: hash, from: link)
  }

  /// When the hold on the note under `key` with content `hash` ends for
  /// link `link`, if it is held back from it at `now`; nil when it may go
  /// (never held back from the link it came over, nor another content).
  func heldUntil(
    _ key: String, hash: ContentHash, for link: ObjectIdentifier, at now: ContinuousClock.Instant
  ) -> ContinuousClock.Instant? {
    guard let hold = holds[key], hold.from != link, hold.hash == hash, hold.until > now else {
      return nil
    }
    return hold.until
  }

  /// The number of holds kept, over or not.
  var count: Int { holds.count }
}
