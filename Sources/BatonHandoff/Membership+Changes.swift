import BatonSystem

/// The records this device makes (PROTOCOL.md section 13): each is signed
/// with its device key; the caller inserts it and sends it to its peers.
extension Membership {
  /// A key-file agent's founding of itself (epoch 0); refused once this
  /// device knows of a rekey, or when it was removed.
  public func found(name: String, wallTime: UInt64) throws(MembershipRefusal) -> MembershipRecord {
    guard groupKey != nil else { throw .noGroupKey }
    if let removal = state.removed[device.deviceID] {
      throw .readdAfterRemoval(device.deviceID, by: removal.by)
    }
    guard state.winners[1] == nil else { throw .foundedAfterRekey(device.deviceID) }
    return .signed(
      .found(
        subject: device.publicKey, name: name.prefix(utf8Bytes: MembershipRecord.maxNameBytes),
        wallTime: wallTime), by: device)
  }

  /// This member adds `key` (named `name`) to the current epoch.
  public func makeAddition(of key: DevicePublicKey, name: String, wallTime: UInt64)
    throws(MembershipRefusal) -> MembershipRecord
  {
    try requireMember()
    let id = key.deviceID
    if let removal = state.removed[id] {
      throw id == device.deviceID
        ? .readdAfterRemoval(id, by: removal.by) : .subjectRemoved(id, by: removal.by)
    }
    guard !state.members.contains(id) else { throw .alreadyMember(id) }
    guard state.members.count < MembershipRecord.maxMembers else {
      throw .groupFull(epoch: state.epoch)
    }
    return .signed(
      .add(
        subject: key, name: name.prefix(utf8Bytes: MembershipRecord.maxNameBytes),
        sponsor: device.deviceID, epoch: state.epoch, wallTime: wallTime), by: device)
  }

  /// What pairing records: this member adds `key`, then re-keys so that
  /// the new device is sent the epoch's secret and its membership rests on
  /// the epoch rather than on this sponsor alone (were this device removed
  /// before that rekey, the addition would fall with it). Insert both.
  /// A device listed already (its earlier pairing ended before it had the
  /// enrolment, PROTOCOL.md 14.5) gets the rekey alone: a secret sealed to
  /// it, and no second addition.
  public func makeAdmission(of key: DevicePublicKey, name: String, wallTime: UInt64)
    throws(MembershipRefusal) -> [MembershipRecord]
  {
    if state.members.contains(key.deviceID), key.deviceID != device.deviceID,
      state.removed[key.deviceID] == nil
    {
      return [try makeRekey()]
    }
    let add = try makeAddition(of: key, name: name, wallTime: wallTime)
    var next = self
    _ = next.insert(add)
    return [add, try next.makeRekey()]
  }

  /// This member removes `id` for good (then a rekey is due: `needsRekey`).
  public func makeRemoval(of id: DeviceID, wallTime: UInt64) throws(MembershipRefusal)
    -> MembershipRecord
  {
    try requireMember()
    if let removal = state.removed[id] { throw .subjectRemoved(id, by: removal.by) }
    guard keys[id] != nil || state.members.contains(id) || state.holders.contains(id) else {
      throw .unknownDevice(id)
    }
    return .signed(
      .remove(subject: id, signer: device.deviceID, epoch: state.epoch, wallTime: wallTime),
      by: device)
  }

  /// This member moves the group to the next epoch: a new random secret
  /// sealed to every current member (removed devices are not members).
  public func makeRekey() throws(MembershipRefusal) -> MembershipRecord {
    try requireMember()
    guard state.epoch < UInt32.max else { throw .unknownEpoch(state.epoch, current: state.epoch) }
    var secret = HandoffCrypto.random(MembershipRecord.secretBytes)
    defer { HandoffCrypto.wipe(&secret) }
    var sealed: [MembershipRecord.SealedSecret] = []
    for id in state.members.sorted() {
      guard let key = keys[id], let box = key.seal(secret) else { throw .cannotSeal(id) }
      sealed.append(MembershipRecord.SealedSecret(device: id, sealed: box))
    }
    return .signed(
      .rekey(epoch: state.epoch + 1, signer: device.deviceID, secrets: sealed), by: device)
  }

  private func requireMember() throws(MembershipRefusal) {
    guard state.members.contains(device.deviceID) else { throw .notAMember(device.deviceID) }
  }
}
