import Testing

@testable import BatonHandoff

/// Membership records and their merge (PROTOCOL.md section 13): the issue's
/// "Bad input and faults" for membership, each as a test.
@Suite struct MembershipTests {
  static func key(_ n: UInt8) -> DeviceKey { DeviceKey(seed: [UInt8](repeating: n, count: 32))! }
  static let groupKey = GroupKey(bytes: Array(0..<32))!

  /// alice founds with the key file and adds bob and carol in epoch 0.
  struct Group {
    let alice = MembershipTests.key(1)
    let bob = MembershipTests.key(2)
    let carol = MembershipTests.key(3)
    let dave = MembershipTests.key(4)
    var a: Membership
    var records: [MembershipRecord] = []

    init() throws {
      a = Membership(device: alice, groupKey: MembershipTests.groupKey)
      try apply(a.found(name: "alice", wallTime: 100))
      try apply(a.makeAddition(of: bob.publicKey, name: "bob", wallTime: 200))
      try apply(a.makeAddition(of: carol.publicKey, name: "carol", wallTime: 300))
    }

    mutating func apply(_ record: MembershipRecord) {
      records.append(record)
      let update = a.insert(record)
      precondition(update.outcomes == [.accepted], "\(record): \(update.outcomes)")
    }

    /// `device`'s view holding every record so far.
    func view(of device: DeviceKey, extra: [MembershipRecord] = []) -> Membership {
      var view = Membership(device: device)
      _ = view.insert(records + extra)
      return view
    }
  }

  @Test func foundingAddingAndRekeyingGiveEveryMemberTheSameSecret() throws {
    var g = try Group()
    #expect(g.a.epoch == 0)
    #expect(g.a.epochSecret == Self.groupKey.bytes)
    #expect(g.a.memberIDs == [g.alice.deviceID, g.bob.deviceID, g.carol.deviceID])
    try g.apply(g.a.makeRekey())
    #expect(g.a.epoch == 1)
    let secret = try #require(g.a.epochSecret)
    #expect(secret.count == 32 && secret != Self.groupKey.bytes)
    let b = g.view(of: g.bob)
    #expect(b.epoch == 1)
    #expect(b.epochSecret == secret)
    #expect(b.secret(ofEpoch: 0) == nil)  // bob joined by pairing: no key file
    #expect(b.digest == g.a.digest)
    #expect(b.isMember(g.carol.publicKey) && !b.isMember(g.dave.publicKey))
    let carol = try #require(b.members.first { $0.id == g.carol.deviceID })
    #expect(carol.name == "carol" && carol.addedBy == g.alice.deviceID && carol.epoch == 0)
    #expect(carol.wallTime == 300 && carol.isMember && carol.removedBy == nil)
    #expect(!b.needsRekey)
  }

  @Test func aPhonePairedByALostLaptopStaysWhenTheLaptopIsRemoved() throws {
    let laptop = Self.key(1)
    let phone = Self.key(2)
    var l = Membership(device: laptop, groupKey: Self.groupKey)
    _ = l.insert(try l.found(name: "laptop", wallTime: 1))
    let admission = try l.makeAdmission(of: phone.publicKey, name: "phone", wallTime: 2)
    #expect(l.insert(admission).outcomes == [.accepted, .accepted])
    #expect(!l.needsRekey && l.epoch == 1)
    var p = Membership(device: phone)
    _ = p.insert(l.allRecords)
    #expect(p.epochSecret != nil && p.epochSecret == l.epochSecret)  // sent in the rekey
    // The laptop is lost: the phone removes it and, its turn, re-keys.
    _ = p.insert(try p.makeRemoval(of: laptop.deviceID, wallTime: 3))
    #expect(p.memberIDs == [phone.deviceID] && p.needsRekey && p.shouldRekey)
    _ = p.insert(try p.makeRekey())
    #expect(p.epoch == 2 && !p.needsRekey && p.epochSecret != nil)
    _ = l.insert(p.allRecords)
    #expect(l.epochSecret == nil && l.secret(ofEpoch: 1) != nil)
    // An addition with no rekey after it rests on its sponsor alone: it
    // asks for a rekey, and falls if the sponsor is removed first.
    var bare = Membership(device: laptop, groupKey: Self.groupKey)
    _ = bare.insert(try bare.found(name: "laptop", wallTime: 1))
    _ = bare.insert(try bare.makeAddition(of: phone.publicKey, name: "phone", wallTime: 2))
    #expect(bare.awaitingSecret == [phone.deviceID] && bare.needsRekey)
  }

  @Test func aRecordWithABadSignatureIsRefusedAndNotKept() throws {
    var g = try Group()
    let forged = MembershipRecord.signed(
      .add(
        subject: g.dave.publicKey, name: "dave", sponsor: g.bob.deviceID, epoch: 0, wallTime: 1),
      by: g.dave)  // claims bob as sponsor, signed by dave
    let update = g.a.insert(forged)
    #expect(update.outcomes == [.refused(.badSignature(signer: g.bob.deviceID))])
    #expect(g.a.recordCount == 3 && !update.changed)
    var bent = try #require(g.a.allRecords.first).encoded
    bent[bent.count - 1] ^= 1
    #expect(g.a.insert(encoded: bent).outcomes.first.map(isRefused) == true)
    #expect(g.a.recordCount == 3)
    #expect(g.a.memberIDs.count == 3)
  }

  @Test func aRecordFromAnUnknownSignerWaitsAndAForgedOneIsDroppedWhenItsKeyArrives() throws {
    let g = try Group()
    let erin = Self.key(5)
    let byDave = MembershipRecord.signed(
      .add(
        subject: erin.publicKey, name: "erin", sponsor: g.dave.deviceID, epoch: 0, wallTime: 1),
      by: g.dave)
    let forgedDave = MembershipRecord.signed(
      .remove(subject: g.bob.deviceID, signer: g.dave.deviceID, epoch: 0, wallTime: 1), by: erin)
    var view = Membership(device: g.bob)
    let early = view.insert([byDave, forgedDave])
    #expect(
      early.outcomes == [
        .waiting(.signerUnknown(g.dave.deviceID)), .waiting(.signerUnknown(g.dave.deviceID)),
      ])
    let addDave = try g.a.makeAddition(of: g.dave.publicKey, name: "dave", wallTime: 2)
    let late = view.insert(g.records + [addDave])
    #expect(late.outcomes.allSatisfy { $0 == .accepted })
    #expect(view.status(of: byDave) == .effective)
    #expect(view.status(of: forgedDave) == nil)  // dropped: dave's key does not verify it
    #expect(view.memberIDs.contains(erin.deviceID) && view.memberIDs.contains(g.bob.deviceID))
  }

  @Test func aRemovedDevicesRecordsAreRefused() throws {
    var g = try Group()
    try g.apply(g.a.makeRemoval(of: g.bob.deviceID, wallTime: 400))
    #expect(g.a.needsRekey)  // bob holds the key file's epoch-0 secret
    let byBob = MembershipRecord.signed(
      .add(
        subject: g.dave.publicKey, name: "dave", sponsor: g.bob.deviceID, epoch: 0, wallTime: 500),
      by: g.bob)
    let update = g.a.insert(byBob)
    #expect(update.outcomes == [.refused(.signerRemoved(g.bob.deviceID, by: g.alice.deviceID))])
    #expect(!g.a.memberIDs.contains(g.dave.deviceID))
    // bob's own view still lets it sign, but nobody takes the result.
    var b = g.view(of: g.bob)
    #expect(throws: MembershipRefusal.notAMember(g.bob.deviceID)) { try b.makeRekey() }
    let bobRekey = MembershipRecord.signed(
      .rekey(
        epoch: 1, signer: g.bob.deviceID,
        secrets: [
          .init(
            device: g.bob.deviceID, sealed: g.bob.publicKey.seal(Array(repeating: 9, count: 32))!)
        ]), by: g.bob)
    #expect(
      g.a.insert(bobRekey).outcomes == [
        .refused(.signerRemoved(g.bob.deviceID, by: g.alice.deviceID))
      ])
    #expect(g.a.epoch == 0)
    _ = b.insert(bobRekey)
    #expect(b.epoch == 0 && b.epochSecret == nil)
  }

  @Test func aRemovedDeviceCannotForkAnEpochItBelongedTo() throws {
    let alice = Self.key(1)
    let bob = Self.key(2)
    let carol = Self.key(3)
    let dave = Self.key(4)
    var a = Membership(device: alice, groupKey: Self.groupKey)
    _ = a.insert(try a.found(name: "alice", wallTime: 1))
    _ = a.insert(try a.makeAdmission(of: bob.publicKey, name: "bob", wallTime: 2))  // epoch 1
    _ = a.insert(try a.makeAdmission(of: carol.publicKey, name: "carol", wallTime: 3))  // 2
    let realTwo = try #require(a.state.winners[2])
    _ = a.insert(try a.makeRemoval(of: carol.deviceID, wallTime: 4))
    _ = a.insert(try a.makeRekey())  // epoch 3: alice and bob
    let secret = try #require(a.epochSecret)
    // carol, a member of epoch 1, signs a rival rekey to epoch 2 listing
    // only itself, with a lower digest than the real one (it can try until
    // it gets one), and an addition of dave naming epoch 1.
    var fork: MembershipRecord
    repeat {
      let sealed = try #require(carol.publicKey.seal(HandoffCrypto.random(32)))
      fork = .signed(
        .rekey(
          epoch: 2, signer: carol.deviceID, secrets: [.init(device: carol.deviceID, sealed: sealed)]
        ),
        by: carol)
    } while !fork.digest.lexicographicallyPrecedes(realTwo.digest)
    let plant = MembershipRecord.signed(
      .add(subject: dave.publicKey, name: "dave", sponsor: carol.deviceID, epoch: 1, wallTime: 5),
      by: carol)
    let update = a.insert([fork, plant])
    #expect(update.outcomes[0] == .refused(.superseded(epoch: 2)))
    #expect(update.outcomes[1] == .refused(.signerRemoved(carol.deviceID, by: alice.deviceID)))
    #expect(!update.changed)
    #expect(a.epoch == 3 && a.epochSecret == secret && a.state.winners[2] == realTwo)
    #expect(a.memberIDs == [alice.deviceID, bob.deviceID])
  }

  @Test func aRemovalAndAnAdditionOfTheSameDeviceAtOnceLeaveItRemoved() throws {
    let g = try Group()
    let b = g.view(of: g.bob)
    let add = try b.makeAddition(of: g.dave.publicKey, name: "dave", wallTime: 600)
    // carol heard of dave's addition and removes it at the same time.
    var c = g.view(of: g.carol, extra: [add])
    let removal = try c.makeRemoval(of: g.dave.deviceID, wallTime: 601)
    _ = c.insert(removal)
    for order in [[add, removal], [removal, add]] {
      var view = g.view(of: g.alice)
      _ = view.insert(order)
      #expect(!view.memberIDs.contains(g.dave.deviceID))
      #expect(view.removal(of: g.dave.deviceID)?.by == g.carol.deviceID)
      #expect(
        view.status(of: add) == .ignored(.subjectRemoved(g.dave.deviceID, by: g.carol.deviceID)))
      #expect(view.digest == c.digest)
      #expect(throws: MembershipRefusal.subjectRemoved(g.dave.deviceID, by: g.carol.deviceID)) {
        try view.makeAddition(of: g.dave.publicKey, name: "dave again", wallTime: 700)
      }
    }
  }

  @Test func aMemberThatReAddsItselfAfterRemovalIsRefused() throws {
    var g = try Group()
    try g.apply(g.a.makeRemoval(of: g.carol.deviceID, wallTime: 400))
    let selfAdd = MembershipRecord.signed(
      .add(
        subject: g.carol.publicKey, name: "carol", sponsor: g.carol.deviceID, epoch: 0,
        wallTime: 900), by: g.carol)
    let update = g.a.insert(selfAdd)
    #expect(
      update.outcomes == [.refused(.readdAfterRemoval(g.carol.deviceID, by: g.alice.deviceID))])
    #expect(
      "\(MembershipRefusal.readdAfterRemoval(g.carol.deviceID, by: g.alice.deviceID))".contains(
        "new device"))
    // With the key file, a fresh founding does not bring it back either.
    var c = Membership(device: g.carol, groupKey: Self.groupKey)
    _ = c.insert(g.records)
    #expect(throws: MembershipRefusal.readdAfterRemoval(g.carol.deviceID, by: g.alice.deviceID)) {
      try c.found(name: "carol", wallTime: 901)
    }
    let refound = MembershipRecord.signed(
      .found(subject: g.carol.publicKey, name: "carol", wallTime: 902), by: g.carol)
    #expect(
      g.a.insert(refound).outcomes == [
        .refused(.readdAfterRemoval(g.carol.deviceID, by: g.alice.deviceID))
      ])
    #expect(!g.a.memberIDs.contains(g.carol.deviceID))
    // The machine comes back only with a new device key.
    let newCarol = Self.key(33)
    try g.apply(g.a.makeAddition(of: newCarol.publicKey, name: "carol", wallTime: 903))
    #expect(g.a.memberIDs.contains(newCarol.deviceID))
  }

  @Test func recordsForAnUnknownEpochOrFromANonMemberWaitAndSayWhy() throws {
    var g = try Group()
    let future = MembershipRecord.signed(
      .remove(subject: g.bob.deviceID, signer: g.alice.deviceID, epoch: 7, wallTime: 1),
      by: g.alice)
    #expect(g.a.insert(future).outcomes == [.waiting(.unknownEpoch(7, current: 0))])
    #expect(g.a.memberIDs.contains(g.bob.deviceID))
    // dave (not a member) adds erin: kept, waiting for dave's own addition.
    let erin = Self.key(5)
    let daveFound = MembershipRecord.signed(
      .add(
        subject: g.dave.publicKey, name: "dave", sponsor: g.dave.deviceID, epoch: 0, wallTime: 0),
      by: g.dave)
    let byDave = MembershipRecord.signed(
      .add(subject: erin.publicKey, name: "erin", sponsor: g.dave.deviceID, epoch: 0, wallTime: 0),
      by: g.dave)
    let outcomes = g.a.insert([daveFound, byDave]).outcomes
    #expect(
      outcomes == Array(repeating: .waiting(.signerNotMember(g.dave.deviceID, epoch: 0)), count: 2))
    #expect(
      "\(MembershipRefusal.signerNotMember(g.dave.deviceID, epoch: 0))".contains("held until"))
    #expect(throws: MembershipRefusal.notAMember(g.dave.deviceID)) {
      try Membership(device: g.dave).makeAddition(of: erin.publicKey, name: "erin", wallTime: 0)
    }
    // bob adds dave: both take effect.
    let b = g.view(of: g.bob)
    let update = g.a.insert(try b.makeAddition(of: g.dave.publicKey, name: "dave", wallTime: 0))
    #expect(update.outcomes == [.accepted])
    #expect(g.a.status(of: byDave) == .effective && update.joined.count == 2)
    // A record built in code with a field over its limit is refused, not cut.
    let longName = MembershipRecord.signed(
      .found(subject: g.bob.publicKey, name: String(repeating: "b", count: 65), wallTime: 0),
      by: g.bob)
    #expect(g.a.insert(longName).outcomes.first.map(isRefused) == true)
    #expect(throws: MembershipRefusal.noGroupKey) {
      try Membership(device: g.dave).found(name: "dave", wallTime: 0)
    }
  }

  @Test func concurrentRekeysSettleOnTheLowestDigest() throws {
    let g = try Group()
    let b = g.view(of: g.bob)
    let c = g.view(of: g.carol)
    let first = try b.makeRekey()
    let second = try c.makeRekey()
    let winner = first.digest.lexicographicallyPrecedes(second.digest) ? first : second
    let loser = winner == first ? second : first
    var secrets: [[UInt8]] = []
    for device in [g.alice, g.bob, g.carol] {
      for order in [[first, second], [second, first]] {
        let view = g.view(of: device, extra: order)
        #expect(view.epoch == 1)
        #expect(view.status(of: winner) == .effective)
        #expect(view.status(of: loser) == .ignored(.superseded(epoch: 1)))
        secrets.append(try #require(view.epochSecret))
      }
    }
    #expect(Set(secrets).count == 1)
  }

  @Test func aRemovalRacingARekeyAsksForAnotherRekeyThatLeavesTheDeviceOut() throws {
    var g = try Group()
    try g.apply(g.a.makeRekey())  // epoch 1: alice, bob, carol
    let removal = try g.a.makeRemoval(of: g.carol.deviceID, wallTime: 1000)
    let racing = try g.view(of: g.bob).makeRekey()  // bob has not heard: lists carol
    var views = [g.alice, g.bob, g.carol].map { g.view(of: $0, extra: [removal, racing]) }
    for view in views {
      #expect(view.epoch == 2)
      #expect(view.needsRekey)
      #expect(!view.memberIDs.contains(g.carol.deviceID))
    }
    // Exactly one member, the lowest id among alice and bob, is asked to re-key.
    let duty = views.filter(\.shouldRekey)
    #expect(duty.count == 1)
    #expect(duty.first?.device.deviceID == min(g.alice.deviceID, g.bob.deviceID))
    let fix = try duty[0].makeRekey()
    for index in views.indices { _ = views[index].insert(fix) }
    for view in views {
      #expect(view.epoch == 3)
      #expect(!view.needsRekey && !view.shouldRekey)
    }
    // carol holds every record and its old secrets, but not epoch 3's.
    let carol = views[2]
    #expect(carol.device.deviceID == g.carol.deviceID)
    #expect(carol.epochSecret == nil)
    #expect(carol.secret(ofEpoch: 2) != nil && carol.secret(ofEpoch: 1) != nil)
    #expect(views[0].epochSecret != nil && views[0].epochSecret == views[1].epochSecret)
    #expect(throws: MembershipRefusal.notAMember(g.carol.deviceID)) { try carol.makeRekey() }
  }

  @Test func theRemovedDeviceCannotOpenTheNewEpochsSecret() throws {
    var g = try Group()
    try g.apply(g.a.makeRemoval(of: g.carol.deviceID, wallTime: 1))
    try g.apply(g.a.makeRekey())
    let carol = Membership(device: g.carol, groupKey: Self.groupKey)
    var full = carol
    _ = full.insert(g.records)
    #expect(full.epoch == 1)
    #expect(full.epochSecret == nil)
    #expect(full.secret(ofEpoch: 0) == Self.groupKey.bytes)  // the old one it always had
    #expect(!full.isMember(g.carol.publicKey))
    // Nor can it open any entry of the rekey with its own key.
    guard case .rekey(_, _, let secrets) = g.records.last!.body else {
      Issue.record("last record is not a rekey")
      return
    }
    #expect(!secrets.contains { $0.device == g.carol.deviceID })
    #expect(secrets.allSatisfy { g.carol.openSealed($0.sealed) == nil })
    #expect(throws: MembershipRefusal.readdAfterRemoval(g.carol.deviceID, by: g.alice.deviceID)) {
      try full.found(name: "carol", wallTime: 2)
    }
  }

  @Test func aFoundingAfterARekeyIsIgnored() throws {
    var g = try Group()
    try g.apply(g.a.makeRekey())
    var dave = Membership(device: g.dave, groupKey: Self.groupKey)
    let late = try dave.found(name: "dave", wallTime: 5)  // dave knows no rekey yet
    _ = dave.insert(late)
    #expect(dave.memberIDs == [g.dave.deviceID])
    #expect(g.a.insert(late).outcomes == [.refused(.foundedAfterRekey(g.dave.deviceID))])
    _ = dave.insert(g.records)
    #expect(
      dave.epoch == 1 && dave.memberIDs.count == 3 && !dave.memberIDs.contains(g.dave.deviceID))
    // dave keeps its own founding (it took it before it knew a rekey), but
    // it is not in effect; alice never kept it.
    #expect(dave.status(of: late) == .ignored(.foundedAfterRekey(g.dave.deviceID)))
    #expect(g.a.status(of: late) == nil && dave.recordCount == g.a.recordCount + 1)
    #expect(throws: MembershipRefusal.foundedAfterRekey(g.dave.deviceID)) {
      try dave.found(name: "dave", wallTime: 6)
    }
  }

  @Test func aKeyFileCopyCannotRaceEpochOneOnADeviceThatKnowsARekey() throws {
    var g = try Group()
    try g.apply(g.a.makeRekey())
    let real = try #require(g.a.state.winners[1])
    let secret = try #require(g.a.epochSecret)
    // A stolen copy of the key file: a fresh device key founds itself and
    // signs a rival rekey to epoch 1 listing only itself, with a lower digest.
    let thief = Self.key(66)
    let found = MembershipRecord.signed(
      .found(subject: thief.publicKey, name: "alice", wallTime: 0), by: thief)
    var rival: MembershipRecord
    repeat {
      let sealed = try #require(thief.publicKey.seal(HandoffCrypto.random(32)))
      rival = .signed(
        .rekey(
          epoch: 1, signer: thief.deviceID,
          secrets: [.init(device: thief.deviceID, sealed: sealed)]), by: thief)
    } while !rival.digest.lexicographicallyPrecedes(real.digest)
    for batch in [[found, rival], [rival, found]] {
      var view = g.view(of: g.bob)
      let update = view.insert(batch)
      #expect(update.outcomes.contains(.refused(.foundedAfterRekey(thief.deviceID))))
      #expect(!update.changed)
      #expect(view.state.winners[1] == real && view.epochSecret == secret)
    }
    #expect(
      g.a.insert([found, rival]).outcomes.first == .refused(.foundedAfterRekey(thief.deviceID)))
    #expect(g.a.epochSecret == secret)
  }

  @Test func wallTimesInTheFutureOrPastChangeNothing() throws {
    func run(_ times: [UInt64]) throws -> (UInt32, Set<DeviceID>, [DeviceID: DeviceID], Bool) {
      let alice = Self.key(1)
      let bob = Self.key(2)
      let carol = Self.key(3)
      var a = Membership(device: alice, groupKey: Self.groupKey)
      _ = a.insert(try a.found(name: "alice", wallTime: times[0]))
      _ = a.insert(try a.makeAddition(of: bob.publicKey, name: "bob", wallTime: times[1]))
      _ = a.insert(try a.makeAddition(of: carol.publicKey, name: "carol", wallTime: times[2]))
      // A removal stamped before carol's addition still wins.
      _ = a.insert(try a.makeRemoval(of: carol.deviceID, wallTime: times[3]))
      _ = a.insert(try a.makeRekey())
      var removed: [DeviceID: DeviceID] = [:]
      for member in a.members { if let by = member.removedBy { removed[member.id] = by } }
      return (a.epoch, a.memberIDs, removed, a.needsRekey)
    }
    let sane = try run([100, 200, 300, 400])
    for skewed: [UInt64] in [[UInt64.max, 0, UInt64.max, 1], [0, 0, 0, 0], [400, 300, 200, 100]] {
      let got = try run(skewed)
      #expect(got.0 == sane.0 && got.1 == sane.1 && got.2 == sane.2 && got.3 == sane.3)
    }
    #expect(sane.0 == 1 && sane.1.count == 2 && sane.2.count == 1 && !sane.3)
  }

  @Test func mergingInEveryOrderGivesTheSameState() throws {
    var g = try Group()
    let add = try g.a.makeAddition(of: g.dave.publicKey, name: "dave", wallTime: 10)
    g.apply(add)
    let removal = try g.a.makeRemoval(of: g.bob.deviceID, wallTime: 11)
    g.apply(removal)
    try g.apply(g.a.makeRekey())
    let reference = g.view(of: g.carol)
    #expect(reference.epoch == 1 && reference.memberIDs.count == 3)
    var count = 0
    for order in permutations(g.records) {
      var view = Membership(device: g.carol)
      for record in order { _ = view.insert(record) }
      #expect(Fingerprint(view) == Fingerprint(reference))
      _ = view.insert(order)  // and again: idempotent
      #expect(Fingerprint(view) == Fingerprint(reference))
      count += 1
    }
    #expect(count == 720)
  }

  @Test func theRecordSetRoundTripsAndItsDigestTellsSetsApart() throws {
    var g = try Group()
    try g.apply(g.a.makeRekey())
    let encoded = g.a.encodedRecords
    let decoded = try Membership.decodeRecords(encoded)
    #expect(decoded == g.a.allRecords)
    var copy = Membership(device: g.bob)
    _ = copy.insert(decoded)
    #expect(copy.digest == g.a.digest && copy.encodedRecords == encoded)
    var less = Membership(device: g.bob)
    _ = less.insert(Array(decoded.dropLast()))
    #expect(less.digest != copy.digest)
    var tooMany = [UInt8]()
    tooMany.appendLE(UInt32(Membership.maxRecords + 1))
    #expect(throws: MembershipDecodeError.self) { try Membership.decodeRecords(tooMany) }
    #expect(throws: MembershipDecodeError.self) { try Membership.decodeRecords(encoded + [0]) }
    #expect(throws: MembershipDecodeError.self) {
      try Membership.decodeRecords(Array(encoded.dropLast()))
    }
  }

  @Test func decodingRefusesEachMalformedFieldWithAReason() throws {
    let alice = Self.key(1)
    let found = MembershipRecord.signed(
      .found(subject: alice.publicKey, name: "alice", wallTime: 1), by: alice)
    #expect(try MembershipRecord(decoding: found.encoded) == found)
    func reason(_ bytes: [UInt8]) -> String {
      do throws(MembershipDecodeError) {
        _ = try MembershipRecord(decoding: bytes)
        return "decoded"
      } catch { return error.reason }
    }
    #expect(reason([9] + found.encoded.dropFirst()).contains("unknown record kind 9"))
    #expect(reason(Array(found.encoded.dropLast())).contains("ends early"))
    #expect(reason(found.encoded + [0]).contains("unexpected bytes"))
    var longName = [UInt8(1)] + alice.publicKey.bytes
    longName.appendLE(UInt16(65))
    longName += Array(repeating: 0x61, count: 65) + Array(repeating: 0, count: 72)
    #expect(reason(longName).contains("exceeds 64"))
    var badUTF8 = [UInt8(1)] + alice.publicKey.bytes
    badUTF8.appendLE(UInt16(1))
    badUTF8 += [0xff] + Array(repeating: 0, count: 72)
    #expect(reason(badUTF8).contains("not UTF-8"))
    var zeroID = [UInt8(3)] + Array(repeating: 0, count: 8) + Array(repeating: 1, count: 8)
    zeroID += Array(repeating: 0, count: 12 + 64)
    #expect(reason(zeroID).contains("subject device id is 0"))
    func rekey(_ ids: [UInt64], sealed: Int = MembershipRecord.sealedBytes, count: UInt16? = nil)
      -> [UInt8]
    {
      var bytes = [UInt8(4)]
      bytes.appendLE(UInt32(1))
      bytes.appendLE(UInt64(7))
      bytes.appendLE(count ?? UInt16(ids.count))
      for id in ids {
        bytes.appendLE(id)
        bytes.appendLE(UInt32(sealed))
        bytes += Array(repeating: 0, count: sealed)
      }
      return bytes + Array(repeating: 0, count: 64)
    }
    #expect(reason(rekey([1, 2])) == "decoded")
    #expect(reason(rekey([2, 1])).contains("not sorted"))
    #expect(reason(rekey([1, 1])).contains("not sorted"))
    #expect(reason(rekey([1], sealed: 79)).contains("sealed secret of 79 bytes"))
    #expect(reason(rekey([])).contains("lists 0 members"))
    #expect(reason(rekey([1], count: 257)).contains("lists 257 members"))
    #expect(reason(rekey([1], count: 0xffff)).contains("lists 65535"))
    var epochZero = rekey([1])
    epochZero[1] = 0
    #expect(reason(epochZero).contains("epoch 0"))
    #expect(
      reason(Array(repeating: 4, count: MembershipRecord.maxEncodedBytes + 1)).contains("exceeds"))
  }

  @Test func randomBytesNeverTrapTheDecoderOrTheMerge() throws {
    var g = try Group()
    try g.apply(g.a.makeRekey())
    var rng = SplitMix64(seed: 26)
    let seeds = g.records.map(\.encoded)
    var view = Membership(device: g.bob)
    for round in 0..<3000 {
      var bytes = seeds[round % seeds.count]
      for _ in 0..<(1 + Int(rng.next() % 4)) {
        let position = Int(rng.next() % UInt64(bytes.count))
        switch rng.next() % 3 {
        case 0: bytes[position] = UInt8(truncatingIfNeeded: rng.next())
        case 1: bytes.removeSubrange(position...)
        default: bytes.insert(UInt8(truncatingIfNeeded: rng.next()), at: position)
        }
        if bytes.isEmpty { bytes = [4] }
      }
      _ = view.insert(encoded: bytes)
    }
    // Whatever was kept verifies; bob's view of the real records is unchanged.
    _ = view.insert(g.records)
    #expect(view.epoch == 1 && view.memberIDs.count == 3)
    #expect(view.epochSecret == g.a.epochSecret)
  }

  @Test func boundsRefuseWithAReason() throws {
    var g = try Group()
    // 256 members at most.
    var adds: [MembershipRecord] = []
    for n in 0..<(MembershipRecord.maxMembers - 3) {
      var seed = [UInt8](repeating: 0xA0, count: 32)
      seed[0] = UInt8(n & 0xff)
      seed[1] = UInt8(n >> 8)
      let key = try #require(DeviceKey(seed: seed))
      adds.append(try g.a.makeAddition(of: key.publicKey, name: "d\(n)", wallTime: 0))
    }
    _ = g.a.insert(adds)
    #expect(g.a.memberIDs.count == MembershipRecord.maxMembers)
    #expect(throws: MembershipRefusal.groupFull(epoch: 0)) {
      try g.a.makeAddition(of: g.dave.publicKey, name: "dave", wallTime: 0)
    }
    let overflow = MembershipRecord.signed(
      .add(
        subject: g.dave.publicKey, name: "dave", sponsor: g.alice.deviceID, epoch: 0, wallTime: 0),
      by: g.alice)
    #expect(g.a.insert(overflow).outcomes == [.refused(.groupFull(epoch: 0))])
    // 1024 records at most.
    var filler: [MembershipRecord] = []
    for n in 0..<(Membership.maxRecords - g.a.recordCount) {
      filler.append(
        .signed(
          .remove(
            subject: DeviceID(rawValue: UInt64(n) + 1_000_000), signer: g.alice.deviceID,
            epoch: 0, wallTime: 0), by: g.alice))
    }
    _ = g.a.insert(filler)
    #expect(g.a.recordCount == Membership.maxRecords)
    let more = try g.a.makeRemoval(of: g.bob.deviceID, wallTime: 0)
    let update = g.a.insert(more)
    #expect(update.outcomes == [.refused(.full("\(Membership.maxRecords) records"))])
    #expect(g.a.memberIDs.contains(g.bob.deviceID))
  }
}

private func isRefused(_ outcome: Membership.InsertOutcome) -> Bool {
  if case .refused = outcome { return true }
  return false
}

/// What two views must agree on.
struct Fingerprint: Equatable {
  let digest: [UInt8]
  let epoch: UInt32
  let members: Set<DeviceID>
  let removed: [DeviceID: DeviceID]
  let needsRekey: Bool
  let statuses: [[UInt8]: String]

  init(_ m: Membership) {
    digest = m.digest
    epoch = m.epoch
    members = m.memberIDs
    var removed: [DeviceID: DeviceID] = [:]
    for member in m.members { if let by = member.removedBy { removed[member.id] = by } }
    self.removed = removed
    needsRekey = m.needsRekey
    var statuses: [[UInt8]: String] = [:]
    for record in m.allRecords {
      statuses[record.digest] = "\(String(describing: m.status(of: record)))"
    }
    self.statuses = statuses
  }
}

func permutations<T>(_ items: [T]) -> [[T]] {
  guard items.count > 1 else { return [items] }
  var out: [[T]] = []
  for index in items.indices {
    var rest = items
    let first = rest.remove(at: index)
    for tail in permutations(rest) { out.append([first] + tail) }
  }
  return out
}
