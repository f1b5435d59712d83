import BatonSystem

/// What a member hands a newcomer at the end of a pairing (PROTOCOL.md
/// 14.8): the group's membership records as `Membership.encodedRecords`
/// carries them, with the two that admit the newcomer (its addition, and
/// the rekey that seals the new epoch's secret to it). The secret travels
/// only inside that rekey, sealed to the newcomer's device key, so the
/// bytes are no use to anyone else.
public enum Enrolment {
  /// Why an enrolment does not make this device a member.
  public struct Refused: Error, Sendable, Equatable, CustomStringConvertible {
    public let reason: String
    public var description: String {
      "the enrolment the member sent does not make this device a member: \(reason);"
        + " run 'baton pair' on the member again for a new code"
    }
  }

  /// The member's side: the records that admit `newcomer` (to insert once
  /// the exchange ended, PROTOCOL.md 14.5, and not before) and the
  /// enrolment bytes.
  public static func make(
    _ membership: Membership, admitting newcomer: PairingIdentity, wallTime: UInt64
  ) throws(MembershipRefusal) -> (records: [MembershipRecord], bytes: [UInt8]) {
    let records = try membership.makeAdmission(
      of: newcomer.key, name: newcomer.name, wallTime: wallTime)
    var next = membership
    _ = next.insert(records)
    return (records, next.encodedRecords)
  }

  /// The newcomer's side: the membership `bytes` give `device`, which must
  /// make it a member holding the current epoch's secret.
  public static func open(_ bytes: [UInt8], device: DeviceKey) throws(Refused) -> Membership {
    let records: [MembershipRecord]
    do { records = try Membership.decodeRecords(bytes) } catch {
      throw Refused(reason: "\(error)")
    }
    var membership = Membership(device: device)
    _ = membership.insert(records)
    if let removal = membership.removal(of: device.deviceID) {
      throw Refused(reason: "they say this device was removed by \(removal.by)")
    }
    guard membership.isMember(device.publicKey) else {
      throw Refused(reason: "they do not list this device (\(device.deviceID))")
    }
    guard membership.epochSecret != nil else {
      throw Refused(reason: "they hold no secret of epoch \(membership.epoch) for this device")
    }
    return membership
  }

  /// Whether an agent with these stored records (and the key file's key,
  /// if it has one) can take part in the group: a key file founds or
  /// keeps a key-file group; without one, only a pairing's records do.
  public static func inGroup(store: any HandoffStateStore, key: GroupKey?) -> Bool {
    if key != nil { return true }
    var membership = Membership(device: store.deviceKey)
    _ = membership.insert(
      ((try? store.membershipRecords()) ?? []).compactMap { try? MembershipRecord(decoding: $0) })
    return membership.isMember(store.deviceKey.publicKey) && membership.epochSecret != nil
  }
}
