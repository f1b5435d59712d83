import BatonHCI

/// How often a connection we are central of has its events: at the pace it
/// was made with (30 to 50 ms, the kernel's default) while data crosses, and
/// every 180 to 200 ms once none has crossed for a quiet spell (5 s), so that
/// an idle link costs about a fifth of the air and of the controller's
/// schedule. Data that crosses again brings the busy pace back.
///
/// The numbers: an idle link's event is two empty PDUs and the space between
/// them (310 us on the 1M PHY), 25 times a second at 40 ms and 5 at 200 ms.
/// A save on an idle link waits for the next event, 100 ms on average at
/// 200 ms, under what a person notices in a note that appears on another
/// machine; a longer interval saves little more air (the idle link's share
/// of the air is 0.16 % at 200 ms) and adds its whole length to that wait,
/// and to each of the six events before the busy pace takes effect (a
/// large note's cost: on the timed radio, with 6 PDUs an event, a 20 KB
/// note took 1.4 to 1.8 s on an idle link against 0.6 s on a busy one).
/// Five seconds of quiet: an editor's saves of one burst of typing, and the
/// walk of a catch-up, keep the busy pace.
///
/// A value with no clock: the host's driver (BLEHost+LinkPace.swift) passes
/// the time, asks the controller for what `pace` says and calls `check(at:)`
/// when told. A peripheral keeps whatever its central asks for.
public struct LinkPace: Sendable, Equatable {
  public enum Pace: Sendable, Equatable, CustomStringConvertible {
    case busy, idle
    public var description: String { self == .busy ? "busy" : "idle" }
  }

  /// What the driver does next.
  public enum Action: Sendable, Equatable {
    /// Ask the controller for the parameters of `pace` (LE Connection
    /// Update); what it asks for is the pace at the time it sends.
    case askForPace
    /// Call `check(at:)` at this time.
    case check(at: ContinuousClock.Instant)
  }

  /// The parameters of each pace and how long a link is quiet before it
  /// idles.
  public struct Schedule: Sendable, Equatable {
    public var busy: HCICommand.ConnectionUpdateParameters
    public var idle: HCICommand.ConnectionUpdateParameters
    public var quietSpell: Duration

    public init(
      busy: HCICommand.ConnectionUpdateParameters, idle: HCICommand.ConnectionUpdateParameters,
      quietSpell: Duration
    ) {
      self.busy = busy
      self.idle = idle
      self.quietSpell = quietSpell
    }

    /// 30 to 50 ms busy (LE Create Connection's), 180 to 200 ms idle, after
    /// 5 s of quiet.
    public static let standard = Schedule(
      busy: .init(intervalMin: 0x0018, intervalMax: 0x0028),
      idle: .init(intervalMin: 0x0090, intervalMax: 0x00A0), quietSpell: .seconds(5))

    public func parameters(for pace: Pace) -> HCICommand.ConnectionUpdateParameters {
      pace == .busy ? busy : idle
    }
  }

  public let schedule: Schedule
  /// The pace asked for last (a connection starts busy).
  public private(set) var pace: Pace = .busy
  private var lastTraffic: ContinuousClock.Instant
  private var checkDue = false

  /// A connection made at `now`: busy, with no check due yet (the driver
  /// calls `traffic(at:)` for the connection's start).
  public init(schedule: Schedule, madeAt now: ContinuousClock.Instant) {
    self.schedule = schedule
    lastTraffic = now
  }

  /// Data crossed at `now`, either way.
  public mutating func traffic(at now: ContinuousClock.Instant) -> [Action] {
    lastTraffic = max(lastTraffic, now)
    var actions: [Action] = []
    if pace == .idle {
      pace = .busy
      actions.append(.askForPace)
    }
    if !checkDue {
      checkDue = true
      actions.append(.check(at: lastTraffic + schedule.quietSpell))
    }
    return actions
  }

  /// The time a `.check` named has come: idles the link if it has been quiet
  /// for the spell, or names the next time to look.
  public mutating func check(at now: ContinuousClock.Instant) -> [Action] {
    checkDue = false
    guard pace == .busy else { return [] }
    if now - lastTraffic >= schedule.quietSpell {
      pace = .idle
      return [.askForPace]
    }
    checkDue = true
    return [.check(at: lastTraffic + schedule.quietSpell)]
  }
}
