import Testing

@testable import BatonHandoff

/// What a member hands a newcomer and how the newcomer finds it
/// (PROTOCOL.md 14.7, 14.8): the enrolment makes exactly the newcomer a
/// member, and anything else is refused with the reason; the pairing
/// advertisement carries the slot and nothing a scanner could mistake.
@Suite struct EnrolmentTests {
  static func key(_ n: UInt8) -> DeviceKey { DeviceKey(seed: [UInt8](repeating: n, count: 32))! }
  static let groupKey = GroupKey(bytes: Array(0..<32))!

  /// alice founds a group from the key file and bob joins it.
  static func group() throws -> Membership {
    var a = Membership(device: key(1), groupKey: groupKey)
    _ = a.insert(try a.found(name: "alice", wallTime: 1))
    _ = a.insert(try a.makeAddition(of: key(2).publicKey, name: "bob", wallTime: 2))
    return a
  }

  @Test func anEnrolmentMakesTheNewcomerAMemberOfTheNextEpoch() throws {
    let a = try Self.group()
    let carol = Self.key(3)
    let made = try Enrolment.make(
      a, admitting: PairingIdentity(name: "carol", key: carol.publicKey), wallTime: 3)
    #expect(made.records.count == 2)
    // Nothing is recorded on the member by making it.
    #expect(!a.isMember(carol.publicKey) && a.epoch == 0)
    let c = try Enrolment.open(made.bytes, device: carol)
    #expect(c.isMember(carol.publicKey) && c.epoch == 1)
    #expect(c.secret(ofEpoch: 0) == nil)  // no key file's secret travels
    var member = a
    _ = member.insert(made.records)
    #expect(c.epochSecret != nil && c.epochSecret == member.epochSecret)
    #expect(c.digest == member.digest)
    #expect(c.memberIDs == member.memberIDs)
  }

  /// The member records a newcomer that proved the code even when the
  /// exchange broke after that (PROTOCOL.md 14.5): if the enrolment never
  /// reached it, pairing again hands it a rekey sealed to it, no second
  /// addition, and makes it a member.
  @Test func aListedDeviceWhoseEnrolmentWasLostPairsAgain() throws {
    var a = try Self.group()
    let carol = Self.key(3)
    let identity = PairingIdentity(name: "carol", key: carol.publicKey)
    let first = try Enrolment.make(a, admitting: identity, wallTime: 3)
    _ = a.insert(first.records)  // P4 lost: carol has nothing
    #expect(a.isMember(carol.publicKey) && a.epoch == 1)
    let again = try Enrolment.make(a, admitting: identity, wallTime: 4)
    #expect(again.records.count == 1)
    #expect(again.records.map(\.kind) == [.rekey])
    let c = try Enrolment.open(again.bytes, device: carol)
    _ = a.insert(again.records)
    #expect(c.epoch == 2 && c.epochSecret != nil && c.epochSecret == a.epochSecret)
    #expect(c.members.filter { $0.id == carol.deviceID }.count == 1)
    // A removed device is not re-admitted that way.
    _ = a.insert(try a.makeRemoval(of: carol.deviceID, wallTime: 5))
    #expect(throws: MembershipRefusal.self) {
      try Enrolment.make(a, admitting: identity, wallTime: 6)
    }
  }

  @Test func anEnrolmentForAnotherDeviceIsRefused() throws {
    let a = try Self.group()
    let made = try Enrolment.make(
      a, admitting: PairingIdentity(name: "carol", key: Self.key(3).publicKey), wallTime: 3)
    let dave = Self.key(4)
    #expect(throws: Enrolment.Refused.self) { try Enrolment.open(made.bytes, device: dave) }
    do {
      _ = try Enrolment.open(made.bytes, device: dave)
    } catch {
      #expect(error.description.contains("they do not list this device (\(dave.deviceID))"))
      #expect(error.description.contains("run 'baton pair' on the member again"))
    }
  }

  @Test func anEnrolmentWithoutTheRekeyOrOfARemovedDeviceIsRefused() throws {
    var a = try Self.group()
    let carol = Self.key(3)
    // The addition alone: a member with no secret of the epoch.
    let addition = try a.makeAddition(of: carol.publicKey, name: "carol", wallTime: 3)
    var added = a
    _ = added.insert(addition)
    do {
      _ = try Enrolment.open(added.encodedRecords, device: carol)
      Issue.record("an enrolment with no secret for the newcomer was taken")
    } catch {
      #expect(error.reason.contains("no secret of epoch"))
    }
    // carol added and removed: refused as removed.
    _ = a.insert(addition)
    _ = a.insert(try a.makeRemoval(of: carol.deviceID, wallTime: 4))
    do {
      _ = try Enrolment.open(a.encodedRecords, device: carol)
      Issue.record("an enrolment that removes the newcomer was taken")
    } catch {
      #expect(error.reason.contains("removed by"))
    }
  }

  @Test func bytesThatAreNoEnrolmentAreRefusedNotTrapped() {
    let carol = Self.key(3)
    for bytes: [UInt8] in [[], [0xFF], [0x00, 0x01], [UInt8](repeating: 0xAB, count: 300)] {
      #expect(throws: Enrolment.Refused.self) { try Enrolment.open(bytes, device: carol) }
    }
  }

  @Test func thePairingAdvertisementCarriesTheSlotAndNothingElseMatches() {
    let ad = PairingAdvertisement.make(slot: 7)
    #expect(ad == [0x02, 0x01, 0x06, 0x07, 0xFF, 0xFF, 0xFF, 0x62, 0x70, 0x01, 0x07])
    #expect(PairingAdvertisement.slot(in: ad) == 7)
    #expect(PairingAdvertisement.slot(in: PairingAdvertisement.make(slot: 99)) == 99)
    // Behind another AD structure (a scan response's name, say).
    #expect(PairingAdvertisement.slot(in: [0x03, 0x09, 0x61, 0x62] + ad) == 7)
    // Another version, a slot past 99, a truncated list, a zero length.
    var other = ad
    other[9] = 2
    #expect(PairingAdvertisement.slot(in: other) == nil)
    #expect(PairingAdvertisement.slot(in: PairingAdvertisement.make(slot: 100)) == nil)
    for cut in 0..<ad.count { #expect(PairingAdvertisement.slot(in: Array(ad[..<cut])) == nil) }
    #expect(PairingAdvertisement.slot(in: [0x00] + ad) == nil)
    #expect(PairingAdvertisement.slot(in: [0xFF] + ad) == nil)
    // A beacon-like manufacturer AD of the same company is not one.
    #expect(PairingAdvertisement.slot(in: [0x07, 0xFF, 0xFF, 0xFF, 0x62, 0x61, 0x01, 0x07]) == nil)
  }
}
