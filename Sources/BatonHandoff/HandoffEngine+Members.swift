import BatonSystem
import FoundationEssentials

/// The group's membership in sessions and links (PROTOCOL.md 6.3): records
/// exchanged right after the handshake, a peer refused unless a member, and
/// the epoch moved on when the records say so.
extension HandoffEngine {
  /// ERROR code sent to a peer that is not a member.
  static let notAMemberCode: UInt8 = 2

  /// The stored records, with this device's founding added in a key-file
  /// group it is not yet a member of (epoch 0, PROTOCOL.md 6.3): what the
  /// founding did, for the log.
  static func loadMembership(
    store: any HandoffStateStore, device: DeviceKey, groupKey: GroupKey?, name: String
  ) -> (Membership, String?) {
    var membership = Membership(device: device, groupKey: groupKey)
    let stored = ((try? store.membershipRecords()) ?? []).compactMap {
      try? MembershipRecord(decoding: $0)
    }
    _ = membership.insert(stored)
    guard !membership.isMember(device.publicKey), membership.removal(of: device.deviceID) == nil,
      let founding = try? membership.found(name: name, wallTime: Self.wallTime)
    else { return (membership, nil) }
    _ = membership.insert(founding)
    try? store.saveMembershipRecords([founding.encoded])
    return (
      membership,
      "this device (\(device.deviceID), fingerprint \(device.publicKey.fingerprint)) is a member"
        + " of the key file's group"
    )
  }

  /// Seconds since 1970, for records (informational: no rule reads it).
  static var wallTime: UInt64 { UInt64(max(0, Date().timeIntervalSince1970)) }

  /// After the handshake: refuses a removed peer, exchanges the records,
  /// then refuses a peer that is still not a member. Throws (after an ERROR
  /// and closing) when the peer is refused, or when the peer refused us.
  /// Returns the initiator's first message when the responder read it
  /// ahead of the initiator's records (see `exchangeMembership`).
  func settleMembership(_ secure: inout SecureChannel, initiator: Bool, asksForLink: Bool)
    async throws -> HandoffMessage?
  {
    let peer = secure.peer
    if let removal = membership.removal(of: peer.device) {
      try await refuse(
        &secure,
        "\(peer.name) (\(peer.device)) was removed from the group by \(memberName(removal.by));"
          + " it gets nothing")
    }
    let first = try await exchangeMembership(
      &secure, initiator: initiator, asksForLink: asksForLink)
    guard membership.isMember(peer.key) else {
      try await refuse(
        &secure,
        "\(peer.name) (\(peer.device), fingerprint \(peer.key.fingerprint)) is not a member of"
          + " this group (once a device was removed, the key file admits nobody new)")
    }
    return first
  }

  /// Sends `.error(code: 2)`, closes, records the failure and throws.
  private func refuse(_ secure: inout SecureChannel, _ reason: String) async throws -> Never {
    try? await secure.send(.error(code: Self.notAMemberCode, text: reason))
    await secure.channel.close()
    count(HandoffCounter.refusedDevices)
    throw HandoffError.notAMember(peer: secure.peerLabel, reason: reason)
  }

  /// I sends its digest (and, for a link, LINK at once: section 6.2); R
  /// answers with its digest and, when they differ, its records; I then
  /// sends its records if the digests differed. R takes I's records after
  /// I's first message when that came first (a pipelined LINK), and returns
  /// that message.
  private func exchangeMembership(
    _ secure: inout SecureChannel, initiator: Bool, asksForLink: Bool
  ) async throws -> HandoffMessage? {
    let mine = membership.digest
    if initiator {
      try await secure.send(.members(digest: mine, records: nil))
      if asksForLink { try await secure.send(linkMessage()) }
      let (theirs, records) = try await receiveMembers(&secure)
      if let records { try learn(records, from: secure.peerLabel) }
      if !HandoffCrypto.constantTimeEqual(theirs, mine) {
        try await secure.send(.members(digest: membership.digest, records: membership.encodedRecords))
      }
      return nil
    }
    let (theirs, _) = try await receiveMembers(&secure)
    let differ = !HandoffCrypto.constantTimeEqual(theirs, mine)
    try await secure.send(.members(digest: mine, records: differ ? membership.encodedRecords : nil))
    guard differ else { return nil }
    var first: HandoffMessage?
    var message = try await secure.receive()
    if case .link = message {
      first = message
      message = try await secure.receive()
    }
    let (_, records) = try await members(in: message, &secure)
    if let records { try learn(records, from: secure.peerLabel) }
    return first
  }

  private func receiveMembers(_ secure: inout SecureChannel) async throws -> (
    [UInt8], [UInt8]?
  ) {
    try await members(in: try await secure.receive(), &secure)
  }

  /// MEMBERS' digest and records; closes and throws for anything else.
  private func members(in message: HandoffMessage, _ secure: inout SecureChannel) async throws
    -> ([UInt8], [UInt8]?)
  {
    switch message {
    case .members(let digest, let records): return (digest, records)
    case .error(Self.notAMemberCode, let text):
      await secure.channel.close()
      throw HandoffError.refusedByMember(peer: secure.peerLabel, text: text)
    case .error(_, let text):
      await secure.channel.close()
      throw HandoffError.peerError(peer: secure.peerLabel, text: text)
    default:
      await secure.channel.close()
      throw HandoffError.protocolViolation(peer: secure.peerLabel, reason: "expected MEMBERS")
    }
  }

  /// Inserts a peer's records and keeps what is new; a record refused is
  /// logged (once per session), never fatal: the rest still count.
  func learn(_ encoded: [UInt8], from peer: String) throws {
    let records: [MembershipRecord]
    do {
      records = try Membership.decodeRecords(encoded)
    } catch {
      throw HandoffError.protocolViolation(peer: peer, reason: "\(error)")
    }
    let update = membership.insert(records)
    var kept: [[UInt8]] = []
    var refused: [String] = []
    for (record, outcome) in zip(records, update.outcomes) {
      switch outcome {
      case .accepted, .waiting: kept.append(record.encoded)
      case .alreadyKnown: break
      case .refused(let why): refused.append("\(why)")
      }
    }
    if let first = refused.first {
      logger.warning(
        "\(peer) sent \(refused.count) membership record(s) refused, such as: \(first)")
    }
    persist { try store.saveMembershipRecords(kept) }
    membershipChanged(update)
    if !kept.isEmpty { announceMembers(exceptTo: peer) }
  }

  /// Logs who joined and left, re-keys when this device should, and asks
  /// the agent to start again when the epoch moved on.
  func membershipChanged(_ update: Membership.Update) {
    let removed = RemovedDevices.names(in: membership)
    removedDevices.withLock { $0.names = removed }
    for id in update.joined { logger.info("\(memberName(id)) (\(id)) joined the group") }
    for id in update.left {
      logger.notice("\(memberName(id)) (\(id)) left the group (removed)")
    }
    // A link with a device that is no longer a member ends now, not when
    // the agent starts again on the new epoch.
    let gone = links.values.filter { !membership.memberIDs.contains($0.peerDevice) }
    for link in gone {
      Task { await link.close("\(link.peerDevice) is no longer a member of the group") }
    }
    if membership.shouldRekey, let rekey = try? membership.makeRekey() {
      _ = membership.insert(rekey)
      persist { try store.saveMembershipRecords([rekey.encoded]) }
      logger.notice("moved the group to epoch \(membership.epoch): a new secret for the members")
    }
    if membership.epoch != epoch, let moved = epochMoved {
      epochMoved = nil
      moved(membership.epoch)
    }
  }

  /// Sends the records over every running link (but the one they came
  /// from), so that a change reaches linked members at once.
  func announceMembers(exceptTo peer: String? = nil) {
    let digest = membership.digest
    let records = membership.encodedRecords
    for link in links.values where link.peerLabel != peer {
      link.queueMembers(records, digest: digest)
    }
  }

  /// The name a member's records give it, else its id.
  func memberName(_ id: DeviceID) -> String {
    membership.members.first { $0.id == id }?.name ?? "device \(id)"
  }

  // MARK: The agent's side

  /// Sets what is called when the epoch moves on.
  public func onEpochMove(_ body: @escaping @Sendable (UInt32) -> Void) {
    epochMoved = body
    if membership.epoch != epoch {
      epochMoved = nil
      body(membership.epoch)
    }
  }

  /// `baton devices`: every device the records name.
  public func devices() -> [DeviceRecord] {
    let seen = Dictionary(
      ((try? store.peers()) ?? []).map { ($0.device, $0.lastSeen) }, uniquingKeysWith: max)
    let linked = Set(links.values.map(\.peerDevice))
    return membership.members.map { m in
      DeviceRecord(
        id: m.id, name: m.name, fingerprint: m.publicKey.fingerprint, addedBy: m.addedBy,
        isMember: m.isMember, removedBy: m.removedBy, isThisDevice: m.id == me.device,
        linked: linked.contains(m.id), lastSeen: seen[m.id])
    }
  }

  /// `baton devices remove NAME`: removes the member called `name` (or with
  /// that device id or fingerprint) and moves the group to a new epoch whose
  /// secret only the others get.
  public func removeDevice(_ name: String) throws(HandoffError) -> DeviceRecord {
    let matches = membership.members.filter {
      $0.isMember && ($0.name == name || $0.id.description == name || $0.publicKey.fingerprint == name)
    }
    guard let target = matches.first, matches.count == 1 else {
      throw HandoffError.noSuchDevice(
        name: name,
        reason: matches.isEmpty
          ? "no member is called that ('baton devices' lists them)"
          : "\(matches.count) members are called that: give its device id instead")
    }
    guard target.id != me.device else {
      throw HandoffError.noSuchDevice(
        name: name, reason: "that is this device: remove it from another member")
    }
    do {
      let removal = try membership.makeRemoval(of: target.id, wallTime: Self.wallTime)
      var update = membership.insert(removal)
      var made = [removal.encoded]
      if membership.needsRekey {
        let rekey = try membership.makeRekey()
        update = membership.insert(rekey)
        made.append(rekey.encoded)
      }
      persist { try store.saveMembershipRecords(made) }
      logger.notice(
        "removed \(target.name) (\(target.id)); the group is at epoch \(membership.epoch) now")
      announceMembers()
      membershipChanged(update)
    } catch {
      throw HandoffError.noSuchDevice(name: name, reason: "\(error)")
    }
    return devices().first { $0.id == target.id }!
  }
}

/// One device of the group, as `baton devices` shows it.
public struct DeviceRecord: Sendable, Equatable {
  public var id: DeviceID
  public var name: String
  public var fingerprint: String
  public var addedBy: DeviceID
  public var isMember: Bool
  public var removedBy: DeviceID?
  public var isThisDevice: Bool
  public var linked: Bool
  public var lastSeen: Date?
}
