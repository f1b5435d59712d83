import BatonHandoff
import BatonSystem
import Synchronization

/// A member's `baton pair` while its code is shown (PROTOCOL.md 14.7): the
/// offer (one attempt, five minutes), what the radio advertises meanwhile,
/// and how it ended, for the `baton pair` that waits. It outlives the
/// agent's generations: a pairing that moves the group to a new epoch
/// restarts the engine, and the waiting command still hears the outcome.
final class MemberPairing: Sendable {
  let offer: PairingOffer
  private struct State {
    var outcome: Result<String, ControlFailure>?
    var waiters: [CheckedContinuation<Result<String, ControlFailure>, Never>] = []
  }
  private let state = Mutex(State())

  init(offer: PairingOffer) { self.offer = offer }

  /// Whether the radio should advertise the code's slot and take P1s now.
  func isOpen(at now: ContinuousClock.Instant = .now) -> Bool {
    offer.current == .waiting && !offer.expired(at: now) && !isFinished
  }

  var isFinished: Bool { state.withLock { $0.outcome != nil } }

  /// The pairing ended (or the code expired): every waiter hears `outcome`;
  /// only the first call counts.
  func finish(_ outcome: Result<String, ControlFailure>) {
    let waiters = state.withLock { s -> [CheckedContinuation<Result<String, ControlFailure>, Never>] in
      guard s.outcome == nil else { return [] }
      s.outcome = outcome
      defer { s.waiters = [] }
      return s.waiters
    }
    offer.finish()
    for waiter in waiters { waiter.resume(returning: outcome) }
  }

  /// How the pairing ended, once it has.
  func result() async -> Result<String, ControlFailure> {
    await withCheckedContinuation { continuation in
      let done = state.withLock { s -> Result<String, ControlFailure>? in
        if let outcome = s.outcome { return outcome }
        s.waiters.append(continuation)
        return nil
      }
      if let done { continuation.resume(returning: done) }
    }
  }
}
