import BatonSystem

/// The member's side of a pairing in the engine (PROTOCOL.md 14.8): the
/// enrolment for a newcomer that proved the code, and its admission when
/// the exchange ended (PROTOCOL.md 14.5).
extension HandoffEngine {
  /// This device as a pairing shows it: its name and device key.
  public nonisolated var pairingIdentity: PairingIdentity {
    PairingIdentity(name: me.name, key: me.key.publicKey)
  }

  /// Whether this device is a member now (only a member can enrol others).
  public var isMember: Bool { membership.isMember(me.key.publicKey) }

  /// The records that would admit `newcomer` and the enrolment bytes to
  /// hand it; nothing is recorded (`admit` does that).
  public func prepareAdmission(of newcomer: PairingIdentity) throws(MembershipRefusal)
    -> (records: [MembershipRecord], enrolment: [UInt8])
  {
    let made = try Enrolment.make(membership, admitting: newcomer, wallTime: Self.wallTime)
    return (made.records, made.bytes)
  }

  /// Records the admission `prepareAdmission` made, once the exchange
  /// with a newcomer that proved the code ended: stored, sent over every
  /// link, and the group moves to the epoch whose secret the newcomer got.
  public func admit(_ records: [MembershipRecord], name: String) {
    let update = membership.insert(records)
    let kept = zip(records, update.outcomes).compactMap { record, outcome -> [UInt8]? in
      switch outcome {
      case .accepted, .waiting: record.encoded
      case .alreadyKnown, .refused: nil
      }
    }
    for case (let record, .refused(let why)) in zip(records, update.outcomes) {
      logger.error("the admission of \(name) was refused here: \(why) (record \(record.kind))")
    }
    persist { try store.saveMembershipRecords(kept) }
    logger.notice("paired with \(name): the group is at epoch \(membership.epoch) now")
    announceMembers()
    membershipChanged(update)
  }
}
