import Testing

@testable import BatonHandoff

/// Random group histories (additions, removals, rekeys, partial syncs, so
/// that changes race): merging every record in any order gives one state,
/// and once the member whose turn it is has re-keyed, no removed device can
/// open the current secret while every listed member can.
@Suite struct MembershipConvergenceTests {
  static let keys = (0..<7).map { n in
    DeviceKey(seed: [UInt8](repeating: 0x60 + UInt8(n), count: 32))!
  }
  static let groupKey = GroupKey(bytes: Array(repeating: 0x5a, count: 32))!

  /// Each device's view; nil until it is paired (added).
  struct World {
    var views: [Membership?]
    var rng: SplitMix64
    var records: [[UInt8]: MembershipRecord] = [:]

    init(seed: UInt64) throws {
      rng = SplitMix64(seed: seed)
      views = Array(repeating: nil, count: MembershipConvergenceTests.keys.count)
      var founder = Membership(
        device: MembershipConvergenceTests.keys[0], groupKey: MembershipConvergenceTests.groupKey)
      _ = founder.insert(try founder.found(name: "d0", wallTime: rng.next()))
      views[0] = founder
    }

    mutating func pick(_ count: Int) -> Int { Int(rng.next() % UInt64(count)) }

    mutating func sync(_ i: Int, _ j: Int) {
      guard let a = views[i], let b = views[j] else { return }
      _ = views[i]!.insert(b.allRecords)
      _ = views[j]!.insert(a.allRecords)
    }

    mutating func syncAll() {
      for i in views.indices { for j in views.indices where i < j { sync(i, j) } }
      for i in views.indices { for j in views.indices where i < j { sync(i, j) } }
    }

    mutating func step() throws {
      let members = views.indices.filter { i in
        views[i].map { $0.memberIDs.contains($0.device.deviceID) } ?? false
      }
      guard !members.isEmpty else { return }
      let actor = members[pick(members.count)]
      var view = views[actor]!
      switch rng.next() % 9 {
      case 0, 1, 2:
        let other = pick(views.count)
        sync(actor, other)
        return
      case 3, 4:
        let unpaired = views.indices.filter { views[$0] == nil }
        guard !unpaired.isEmpty else { return }
        let newcomer = unpaired[pick(unpaired.count)]
        let key = MembershipConvergenceTests.keys[newcomer]
        // Mostly as pairing does it (add, then rekey); sometimes the add alone.
        let name = "d\(newcomer)"
        let records =
          rng.next() % 4 == 0
          ? [try view.makeAddition(of: key.publicKey, name: name, wallTime: rng.next())]
          : try view.makeAdmission(of: key.publicKey, name: name, wallTime: rng.next())
        _ = view.insert(records)
        var joined = Membership(device: key)
        _ = joined.insert(view.allRecords)
        views[newcomer] = joined
      case 5:
        let others = view.memberIDs.filter { $0 != view.device.deviceID }.sorted()
        guard !others.isEmpty else { return }
        _ = view.insert(try view.makeRemoval(of: others[pick(others.count)], wallTime: rng.next()))
      default:
        _ = view.insert(try view.makeRekey())
      }
      views[actor] = view
    }

    var allRecords: [MembershipRecord] {
      var all: [[UInt8]: MembershipRecord] = [:]
      for view in views.compactMap({ $0 }) { for r in view.allRecords { all[r.digest] = r } }
      return Array(all.values)
    }
  }

  @Test func anyOrderOfARandomHistoryGivesOneState() throws {
    var histories = 0
    var raced = 0
    var emptied = 0
    var rekeyRounds: [Int] = []
    for seed in UInt64(0)..<300 {
      var world = try World(seed: seed)
      for _ in 0..<14 { try world.step() }
      var records = world.allRecords.sorted { $0.digest.lexicographicallyPrecedes($1.digest) }
      let observer = DeviceKey(seed: [UInt8](repeating: 0x7f, count: 32))!
      var reference = Membership(device: observer)
      _ = reference.insert(records)
      for _ in 0..<2 {
        records.shuffle(using: &world.rng)
        var view = Membership(device: observer)
        for record in records { _ = view.insert(record) }
        #expect(Fingerprint(view) == Fingerprint(reference), "seed \(seed)")
      }
      // Every device that holds all records agrees with the observer.
      world.syncAll()
      for view in world.views.compactMap({ $0 }) {
        #expect(Fingerprint(view) == Fingerprint(reference), "seed \(seed)")
      }
      if reference.needsRekey { raced += 1 }
      // The member whose turn it is re-keys; one round settles it (no loop).
      var rounds = 0
      while let duty = world.views.firstIndex(where: { $0?.shouldRekey == true }), rounds < 5 {
        _ = world.views[duty]!.insert(try world.views[duty]!.makeRekey())
        world.syncAll()
        rounds += 1
      }
      rekeyRounds.append(rounds)
      // A second round happens when the first one's epoch lets rekeys that
      // were waiting (made on a branch that lost) take effect after it; each
      // round uses such rekeys up, so the rounds end. (Sealing is random, so
      // the histories differ from run to run; the bounds leave room.)
      #expect(rounds < 5, "seed \(seed): \(rounds) rekey rounds")
      let settled = world.views.compactMap { $0 }
      // Removals that raced each other can leave no member at all (each
      // removed the other): then nobody can re-key, and nobody is accepted.
      guard !settled[0].memberIDs.isEmpty else {
        emptied += 1
        continue
      }
      #expect(settled.allSatisfy { !$0.needsRekey }, "seed \(seed)")
      let epoch = settled[0].epoch
      guard epoch > 0, let winner = settled[0].state.winners[epoch],
        case .rekey(_, _, let listed) = winner.body
      else { continue }
      histories += 1
      let listedIDs = Set(listed.map(\.device))
      var secrets = Set<[UInt8]>()
      for view in settled {
        let id = view.device.deviceID
        if view.removal(of: id) != nil {
          #expect(view.epochSecret == nil, "seed \(seed): removed \(id) opens epoch \(epoch)")
          #expect(!listedIDs.contains(id))
        } else if listedIDs.contains(id) {
          secrets.insert(try #require(view.epochSecret, "seed \(seed)"))
        }
      }
      #expect(secrets.count == 1, "seed \(seed)")
    }
    // The histories must exercise what they claim to.
    #expect(histories > 100)
    #expect(raced > 10)
    print(
      "membership histories: \(histories) past epoch 0 checked, \(raced) needing a rekey"
        + " after merge, \(emptied) left with no member; rekey rounds: "
        + "\((0...4).map { n in rekeyRounds.filter { $0 == n }.count })")
  }
}
