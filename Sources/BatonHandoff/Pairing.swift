import BatonSystem

/// Runs a pairing over a connected `MessageChannel`: the async drivers of
/// `PairingMember` and `PairingNewcomer` (PROTOCOL.md section 14). Each
/// message is awaited for at most `timeout`; on any failure the channel is
/// closed and the error thrown, and nothing was committed.
public enum Pairing {
  public static let defaultTimeout: Duration = .seconds(20)

  /// The member's side, for one connection while `offer` is shown. `enrol`
  /// is called at most once, after P3 proved the newcomer typed this code,
  /// with the newcomer's identity; it returns the enrolment (opaque here)
  /// and must not commit anything: the caller commits the addition when
  /// this returns, which is after P5 (the newcomer's acknowledgement of
  /// every enrolment byte) arrived. A throw from `enrol` refuses the
  /// newcomer. `now` is the clock the code's lifetime is measured by.
  public static func run(
    over channel: any MessageChannel, member offer: PairingOffer, me: PairingIdentity,
    timeout: Duration = defaultTimeout,
    now: @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now },
    enrol: @Sendable (PairingIdentity) async throws -> [UInt8]
  ) async throws(PairingError) -> PairingOutcome {
    var machine = PairingMember(code: offer.code, me: me)
    defer { if machine.claimed { offer.finish() } }
    try await check(channel, .member)
    var expecting = "P1"
    while true {
      let m = try await receive(channel, step: expecting, timeout: timeout, role: .member)
      var step = machine.receive(m) { offer.claim(at: now()) }
      if case .enrol(let newcomer) = step {
        do {
          let enrolment = try await enrol(newcomer)
          step = machine.enrol(enrolment, messageSize: channel.maximumMessageSize)
        } catch {
          step = machine.refuse("\(error)")
        }
      }
      switch step {
      case .send(let messages):
        try await send(messages, over: channel, role: .member)
        expecting = expecting == "P1" ? "P3" : "P5"
      case .enrol:
        preconditionFailure("the member asks for the enrolment once")
      case .finished(let messages, let outcome):
        try await send(messages, over: channel, role: .member)
        await channel.close()
        return outcome
      case .failed(let error, let messages):
        try? await send(messages, over: channel, role: .member)
        await channel.close()
        throw error
      }
    }
  }

  /// The newcomer's side, once connected to the member whose advertisement
  /// shows `code.slot`. Returns the member's identity and the enrolment,
  /// after P5 went out: the caller commits the enrolment then.
  public static func run(
    over channel: any MessageChannel, newcomer code: PairingCode, me: PairingIdentity,
    timeout: Duration = defaultTimeout
  ) async throws(PairingError) -> PairingOutcome {
    var machine: PairingNewcomer
    do { machine = try PairingNewcomer(code: code, me: me) } catch {
      await channel.close()
      throw error
    }
    return try await run(over: channel, machine: &machine, timeout: timeout)
  }

  /// The newcomer's side with a given machine (tests give fixed randomness).
  static func run(
    over channel: any MessageChannel, machine: inout PairingNewcomer, timeout: Duration
  ) async throws(PairingError) -> PairingOutcome {
    do {
      try await check(channel, .newcomer)
      try await send([machine.hello], over: channel, role: .newcomer)
    } catch {
      await channel.close()
      throw error
    }
    var expecting = "P2"
    while true {
      let m = try await receive(channel, step: expecting, timeout: timeout, role: .newcomer)
      switch machine.receive(m) {
      case .send(let messages):
        try await send(messages, over: channel, role: .newcomer)
        expecting = "P4"
      case .enrol:
        preconditionFailure("only the member enrols")
      case .finished(let messages, let outcome):
        try await send(messages, over: channel, role: .newcomer)
        await channel.close()
        return outcome
      case .failed(let error, let messages):
        try? await send(messages, over: channel, role: .newcomer)
        await channel.close()
        throw error
      }
    }
  }

  private static func check(_ channel: any MessageChannel, _ role: PairingRole)
    async throws(PairingError)
  {
    guard channel.maximumMessageSize >= PairingMessage.minimumMessageSize else {
      await channel.close()
      throw .channelTooSmall(channel.maximumMessageSize)
    }
  }

  private static func send(
    _ messages: [[UInt8]], over channel: any MessageChannel, role: PairingRole
  )
    async throws(PairingError)
  {
    for m in messages {
      do { try await channel.send(m) } catch {
        await channel.close()
        throw .channel("\(error)", role)
      }
    }
  }

  /// The next message within `timeout`; the channel is closed on a timeout,
  /// a close or an error.
  private static func receive(
    _ channel: any MessageChannel, step: String, timeout: Duration, role: PairingRole
  ) async throws(PairingError) -> [UInt8] {
    let message: [UInt8]?
    switch await channel.withinDeadline(timeout, { try await channel.receive() }) {
    case .finished(let received): message = received
    case .failed: message = nil
    case .expired:
      await channel.close()
      throw .timeout(step: step, after: timeout, role)
    }
    guard let message else {
      await channel.close()
      throw .interrupted(step: step, role)
    }
    return message
  }
}
