/// Why a membership record is not (or not yet) in effect, or why this device
/// cannot make one: each case says what happened and what the user can do.
public enum MembershipRefusal: Error, Equatable, Hashable, Sendable, CustomStringConvertible {
  /// The bytes are not a record (PROTOCOL.md section 13).
  case malformed(String)
  /// The log holds `MembershipLog.maxRecords` records or `maxBytes` bytes.
  case full(String)
  /// The signature is not the signer's.
  case badSignature(signer: DeviceID)
  /// No record seen so far carries the signer's public key.
  case signerUnknown(DeviceID)
  /// The signer is not (or not yet known to be) a member of that epoch.
  case signerNotMember(DeviceID, epoch: UInt32)
  /// The record names an epoch this device has no rekey for yet.
  case unknownEpoch(UInt32, current: UInt32)
  /// The signer was removed (by `by`) at or before the record's epoch.
  case signerRemoved(DeviceID, by: DeviceID)
  /// The subject was removed by `by`; removal wins, for good.
  case subjectRemoved(DeviceID, by: DeviceID)
  /// A removed device tried to add or found itself again.
  case readdAfterRemoval(DeviceID, by: DeviceID)
  /// A founding (epoch 0, key file) while a rekey exists that does not list it.
  case foundedAfterRekey(DeviceID)
  /// Another rekey to the same epoch has the lower digest and is the epoch's.
  case superseded(epoch: UInt32)
  /// The epoch has `MembershipRecord.maxMembers` members already.
  case groupFull(epoch: UInt32)
  /// This device is not a member of the current epoch (making a record).
  case notAMember(DeviceID)
  /// The device is a member already (making an addition).
  case alreadyMember(DeviceID)
  /// No record names this device (making a removal).
  case unknownDevice(DeviceID)
  /// Founding needs the key file's group key, which this agent has not got.
  case noGroupKey
  /// A member's public key is unknown or has no X25519 form (making a rekey).
  case cannotSeal(DeviceID)

  public var description: String {
    switch self {
    case .malformed(let reason):
      "malformed membership record: \(reason)"
    case .full(let what):
      "membership log is full (\(what)); the record is refused"
    case .badSignature(let signer):
      "membership record with a bad signature (claimed signer \(signer)): refused; a device that sends these is damaged or hostile"
    case .signerUnknown(let signer):
      "membership record signed by \(signer), whose key no record carries yet: held until its addition arrives"
    case .signerNotMember(let signer, let epoch):
      "membership record signed by \(signer), not a member of epoch \(epoch) as far as this device knows: held until the records that make it one arrive"
    case .unknownEpoch(let epoch, let current):
      "membership record for epoch \(epoch), but this device is at epoch \(current): held until the rekeys in between arrive"
    case .signerRemoved(let signer, let by):
      "membership record signed by \(signer), which \(by) removed: refused; a removed device can no longer change the group"
    case .subjectRemoved(let subject, let by):
      "device \(subject) was removed by \(by) and cannot be a member again; the machine can come back only as a new device, with a new device key"
    case .readdAfterRemoval(let subject, let by):
      "device \(subject) tried to add itself back after \(by) removed it: refused; the machine can come back only as a new device, with a new device key"
    case .foundedAfterRekey(let subject):
      "device \(subject) founded itself with the key file after the group moved past epoch 0: ignored: the key file admits nobody new once a device was removed"
    case .superseded(let epoch):
      "another rekey to epoch \(epoch) has the lower digest and holds that epoch's secret; this one is kept but not used"
    case .groupFull(let epoch):
      "the group has \(MembershipRecord.maxMembers) members in epoch \(epoch), the most allowed; remove one first"
    case .notAMember(let device):
      "this device (\(device)) is not a member of the group's current epoch, so it cannot sign membership changes"
    case .alreadyMember(let device):
      "device \(device) is a member already"
    case .unknownDevice(let device):
      "no membership record names device \(device); 'baton devices' lists the members"
    case .noGroupKey:
      "founding a group needs its key file (the group key)"
    case .cannotSeal(let device):
      "cannot seal the new epoch's secret to device \(device): its public key is unknown or unusable"
    }
  }
}
