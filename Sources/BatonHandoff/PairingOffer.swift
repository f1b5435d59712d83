import BatonSystem
import Synchronization

/// A member's pairing code while `baton pair` waits (PROTOCOL.md section
/// 14): valid for `lifetime` from when it was issued, for one attempt.
///
/// Shared by every connection the member accepts while the code is shown:
/// the first P1 that names the code's slot claims it (`claim`), whatever
/// follows; a P1 on another connection while that attempt runs is refused
/// as "in use", and once the attempt ends (`finish`, however it ended) the
/// code is spent. Time is what the caller says it is (`now`), so tests use
/// their own clock.
public final class PairingOffer: Sendable {
  public typealias Instant = ContinuousClock.Instant
  public static let defaultLifetime: Duration = .seconds(300)

  public enum State: Equatable, Sendable {
    case waiting
    case inUse
    case spent
  }

  public let code: PairingCode
  public let issued: Instant
  public let lifetime: Duration
  private let state = Mutex(State.waiting)

  public init(code: PairingCode, issued: Instant, lifetime: Duration = defaultLifetime) {
    self.code = code
    self.issued = issued
    self.lifetime = lifetime
  }

  /// A new random code issued at `now`.
  public convenience init(issued now: Instant, lifetime: Duration = defaultLifetime) {
    self.init(code: .generate(), issued: now, lifetime: lifetime)
  }

  public var current: State { state.withLock { $0 } }

  /// Whether the code's time is over at `now` (a clock that went backwards
  /// does not make it valid again: the age is measured, not compared).
  public func expired(at now: Instant) -> Bool { now - issued >= lifetime || now < issued }

  /// Claims the code for the attempt of a P1 that arrived at `now`: nil
  /// when the attempt may go on, else the reason it is refused. An expired
  /// code stays refused; the first claim spends it for every other.
  public func claim(at now: Instant) -> PairingError? {
    state.withLock { state in
      switch state {
      case .inUse: return .codeInUse
      case .spent: return .codeSpent
      case .waiting:
        guard !expired(at: now) else {
          state = .spent
          return .codeExpired(minutes: lifetime.wholeMinutes, .member)
        }
        state = .inUse
        return nil
      }
    }
  }

  /// The attempt that claimed the code ended (whichever way): spent.
  public func finish() { state.withLock { $0 = .spent } }
}

extension Duration {
  /// Whole minutes, at least 1 (for "valid for N minutes").
  var wholeMinutes: Int { max(1, Int(components.seconds / 60)) }
}
