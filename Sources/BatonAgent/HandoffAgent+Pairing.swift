import BatonHandoff
import BatonSystem

/// `baton pair` in the agent (PROTOCOL.md 14.7, 14.8): a member shows a
/// code and enrols the newcomer that types it; a device in no group yet
/// waits for `baton pair CODE`, pairs, stores the enrolment and starts.
extension HandoffAgent {
  static let notInAGroup =
    "this device is not in a group yet: run 'baton pair' on a member, then"
    + " 'baton pair CODE' here with the code it shows (or give this agent the group's key file)"

  public func pair(code: String?) async throws -> (code: String?, message: String) {
    if let code { return (nil, try await pairAsNewcomer(code)) }
    return try await showCode()
  }

  public func pairingResult() async throws -> String {
    guard let session = state.withLock({ $0.memberPairing }) else {
      throw ControlFailure("no code is shown here: run 'baton pair' for one")
    }
    switch await session.result() {
    case .success(let message): return message
    case .failure(let failure): throw failure
    }
  }

  /// The member's side: a new code (an older one still shown is withdrawn).
  private func showCode() async throws -> (code: String?, message: String) {
    let (engine, radio, unpaired) = state.withLock { ($0.engine, $0.radio, $0.unpaired) }
    guard let engine else {
      throw ControlFailure(
        unpaired != nil
          ? "this device is not in a group yet, so it cannot show a code: type the code a member"
            + " shows here, as 'baton pair CODE'"
          : "the agent is starting; try again in a moment")
    }
    guard await engine.isMember else {
      throw ControlFailure(
        "this device is not a member of the group (it was removed), so it cannot add others;"
          + " pair from a member")
    }
    let session = MemberPairing(offer: PairingOffer(issued: .now))
    let previous = state.withLock { s -> MemberPairing? in
      defer { s.memberPairing = session }
      return s.memberPairing
    }
    previous?.finish(.failure(ControlFailure("this code was withdrawn: 'baton pair' showed a new one")))
    let code = session.offer.code
    let minutes = session.offer.lifetime.components.seconds / 60
    log.notice("showing pairing code \(code.slotText)-…: valid for \(minutes) minutes, one attempt")
    radio?.beaconChanged()
    Task { [weak self] in
      try? await Timers.shared.sleep(for: session.offer.lifetime)
      guard session.offer.current == .waiting else { return }
      session.finish(
        .failure(
          ControlFailure(
            "the code \(code) expired after \(minutes) minutes without being used; run 'baton"
              + " pair' again for a new one")))
      self?.state.withLock { $0.radio }?.beaconChanged()
    }
    return (
      code.description,
      "on the new device, run: baton pair \(code)\n(valid for \(minutes) minutes, for one attempt;"
        + " this device is \(engine.pairingIdentity.name), fingerprint"
        + " \(engine.pairingIdentity.fingerprint))"
    )
  }

  /// The newcomer's side: pairs with the member showing `text`, stores the
  /// enrolment and starts the agent in the group.
  private func pairAsNewcomer(_ text: String) async throws -> String {
    let code: PairingCode
    do { code = try PairingCode(parsing: text) } catch { throw ControlFailure("\(error)") }
    let (store, configuration, busy) = state.withLock { s -> ((any HandoffStateStore)?, AgentConfiguration, Bool) in
      defer { if s.unpaired != nil { s.seeking = true } }
      return (s.unpaired, s.configuration, s.seeking)
    }
    guard let store else {
      throw ControlFailure(
        state.withLock({ $0.engine }) != nil
          ? "this device is in a group already; to add another device, run 'baton pair' (no"
            + " code) here and type the code it shows on the other one"
          : "the agent is starting; try again in a moment")
    }
    guard !busy else { throw ControlFailure("a pairing is running here already; wait for its end") }
    defer { state.withLock { $0.seeking = false } }
    let me = PairingIdentity(name: configuration.name, key: store.deviceKey.publicKey)
    let outcome: PairingOutcome
    do {
      outcome = try await PairingSeeker.pair(
        code: code, me: me, configuration: configuration, log: log)
    } catch {
      log.warning("pairing failed: \(error)")
      throw ControlFailure("\(error)")
    }
    let membership: Membership
    do {
      membership = try Enrolment.open(outcome.enrolment ?? [], device: store.deviceKey)
      try store.saveMembershipRecords(membership.allRecords.map(\.encoded))
    } catch {
      log.error("pairing with \(outcome.peer.name) ended, but: \(error)")
      throw ControlFailure("\(error)")
    }
    let peer = outcome.peer
    log.notice(
      "paired with \(peer.name) (fingerprint \(peer.fingerprint)); this device is a member at"
        + " epoch \(membership.epoch): starting")
    restartGeneration()
    return "paired with \(peer.name) (fingerprint \(peer.fingerprint)); this device"
      + " (\(me.name), fingerprint \(me.fingerprint)) is a member now and starts syncing"
  }

  /// A generation while this device is in no group: nothing is advertised
  /// or scanned, the folders are left alone (their notes go out once it is
  /// in one), and `baton pair CODE` is awaited.
  func waitForPairing(_ store: any HandoffStateStore, _ configuration: AgentConfiguration)
    async throws
  {
    log.notice(Self.notInAGroup)
    state.withLock { $0.unpaired = store }
    defer { state.withLock { $0.unpaired = nil } }
    // Until cancelled: a pairing (restartGeneration), a reload or a stop.
    let (never, keep) = AsyncStream.makeStream(of: Void.self)
    for await _ in never {}
    withExtendedLifetime(keep) {}
    if !Task.isCancelled { throw CancellationError() }
  }
}
