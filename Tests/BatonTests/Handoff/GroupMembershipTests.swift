import Foundation
import Synchronization
import Testing

@testable import BatonHandoff
@testable import BatonSystem

/// Membership in sessions (PROTOCOL.md 6.3): key-file agents found
/// themselves and learn of each other; a removed device is refused and
/// left behind on an old epoch; a member that was away catches up from the
/// first member it meets.
@Suite struct GroupMembershipTests {
  let key = GroupKey.generate()

  /// Records a restart request (the agent's part in `onEpochMove`).
  final class EpochWatch: Sendable {
    let moved = Mutex<[UInt32]>([])
    func watch(_ engine: HandoffEngine) async {
      await engine.onEpochMove { epoch in self.moved.withLock { $0.append(epoch) } }
    }
    var epochs: [UInt32] { moved.withLock { $0 } }
  }

  /// A session `initiator` starts after hearing `responder`'s beacon (so it
  /// picks the keys of the epoch the beacon opened with).
  func meet(_ initiator: HandoffTestAgent, _ responder: HandoffTestAgent) async -> (
    Result<SessionSummary, any Error>, Result<SessionSummary, any Error>
  ) {
    _ = await initiator.bounds.shouldConnect(
      beacon: await responder.engine.currentBeacon(), from: "addr-\(responder.name)")
    return await runSession(initiator, responder)
  }

  func memberNames(_ agent: HandoffTestAgent) async -> Set<String> {
    Set(await agent.engine.devices().filter(\.isMember).map(\.name))
  }

  @Test func keyFileAgentsFoundThemselvesAndLearnOfEachOther() async throws {
    let a = try HandoffTestAgent("alice", key: key)
    let b = try HandoffTestAgent("bob", key: key)
    #expect(await memberNames(a) == ["alice"])
    let (ra, rb) = await runSession(a, b)
    _ = try ra.get()
    _ = try rb.get()
    #expect(await memberNames(a) == ["alice", "bob"])
    #expect(await memberNames(b) == ["alice", "bob"])
    let bob = try #require(await a.engine.devices().first { $0.name == "bob" })
    #expect(bob.id == b.engine.deviceID)
    #expect(bob.fingerprint == (await b.engine.me.key.publicKey.fingerprint))
    #expect(!bob.isThisDevice)
    // The records outlive the engine.
    let restarted = try a.restarted()
    #expect(await memberNames(restarted) == ["alice", "bob"])
  }

  @Test func aRemovedDeviceIsRefusedAndTheOthersMoveOn() async throws {
    var a = try HandoffTestAgent("alice", key: key)
    var b = try HandoffTestAgent("bob", key: key)
    let c = try HandoffTestAgent("carol", key: key)
    for (x, y) in [(a, b), (a, c), (b, c)] {
      let (rx, ry) = await runSession(x, y)
      _ = try rx.get()
      _ = try ry.get()
    }
    #expect(await memberNames(b) == ["alice", "bob", "carol"])
    let watchA = EpochWatch()
    await watchA.watch(a.engine)
    let removed = try await a.engine.removeDevice("carol")
    #expect(!removed.isMember)
    #expect(watchA.epochs == [1])
    await c.save("late.md", "from carol, after her removal")

    // Until alice starts again, she is on the epoch carol is on, and
    // refuses her.
    let (toCarol, carolSide) = await meet(a, c)
    #expect(throws: HandoffError.self) { try toCarol.get() }
    guard case .failure(let carolError) = carolSide else {
      Issue.record("carol was admitted after her removal")
      return
    }
    #expect("\(carolError)".contains("was removed from the group"), "\(carolError)")
    a = try a.restarted()
    #expect(await a.engine.epoch == 1)

    // Carol still holds the key file and every secret she had: alice's
    // beacon no longer opens for her, hers (of the old epoch) no longer
    // opens for alice, and a session gets nothing across.
    #expect(!c.engine.isGroupBeacon(await a.engine.currentBeacon()))
    #expect(!a.engine.isGroupBeacon(await c.engine.currentBeacon()))
    let (toCarolAgain, carolSideAgain) = await meet(a, c)
    #expect(throws: HandoffError.self) { try toCarolAgain.get() }
    #expect(throws: HandoffError.self) { try carolSideAgain.get() }
    #expect(a.folder.text("late.md") == nil)

    // Bob was away: alice reaches him on his old epoch, he learns of the
    // removal and the new secret, and moves on too.
    let watchB = EpochWatch()
    await watchB.watch(b.engine)
    let (ab, ba) = await meet(a, b)
    _ = try ab.get()
    _ = try ba.get()
    #expect(watchB.epochs == [1])
    b = try b.restarted()
    #expect(await b.engine.epoch == 1)
    #expect(!c.engine.isGroupBeacon(await b.engine.currentBeacon()))
    #expect(!b.engine.isGroupBeacon(await c.engine.currentBeacon()))
    #expect(await memberNames(b) == ["alice", "bob"])
    // Alice and bob keep syncing on the new epoch.
    await a.save("new.md", "after the removal")
    let (x, y) = await meet(a, b)
    _ = try x.get()
    _ = try y.get()
    #expect(b.folder.text("new.md") == "after the removal")
    // Carol, reaching bob with what she holds, is refused there too.
    let (fromBob, carolAgain) = await meet(b, c)
    #expect(throws: HandoffError.self) { try fromBob.get() }
    #expect(throws: HandoffError.self) { try carolAgain.get() }
  }

  /// A member keeps the keys of the epochs before its current one, for the
  /// beacons of members that have not heard of the newer epoch (PROTOCOL.md
  /// 6.3). A removed device's beacon, sealed with the keys of the epoch it
  /// was removed from, opens with them too; it is dropped, so no member
  /// links with it there. An away member's beacon of that epoch still opens.
  @Test func aRemovedDevicesBeaconOfItsOldEpochIsDropped() async throws {
    var a = try HandoffTestAgent("alice", key: key)
    let b = try HandoffTestAgent("bob", key: key)
    let c = try HandoffTestAgent("carol", key: key)
    for (x, y) in [(a, b), (a, c), (b, c)] {
      let (rx, ry) = await runSession(x, y)
      _ = try rx.get()
      _ = try ry.get()
    }
    // Bob is away while alice removes carol.
    _ = try await a.engine.removeDevice("carol")
    a = try a.restarted()
    #expect(await a.engine.epoch == 1)
    // Both write what alice lacks, so that each beacon is worth a session.
    await c.save("late.md", "from carol, after her removal")
    await b.save("away.md", "from bob, away")

    let carols = await c.engine.currentBeacon()
    // It opens with the keys alice keeps of epoch 0, as an away member's would.
    let older = await a.engine.olderKeys
    #expect(older.contains { Beacon.open(carols, keys: $0.keys) != nil })
    #expect(!a.engine.isGroupBeacon(carols))
    #expect(a.engine.openBeacon(carols) == nil)
    #expect(!(await a.bounds.shouldConnect(beacon: carols, from: "addr-carol")))
    // Every beacon of hers, not only the first.
    #expect(!a.engine.isGroupBeacon(await c.engine.currentBeacon(closed: true)))

    let bobs = await b.engine.currentBeacon()
    #expect(a.engine.isGroupBeacon(bobs))
    #expect(a.engine.openBeacon(bobs) != nil)
    #expect(await a.bounds.shouldConnect(beacon: bobs, from: "addr-bob"))
    // Names (`baton status`): bob's address and beacon of epoch 0 still
    // resolve to him; carol's do not.
    #expect(await a.engine.peer(resolving: b.engine.newAddress())?.name == "bob")
    #expect(await a.engine.peer(resolvingBeacon: bobs)?.name == "bob")
    #expect(await a.engine.peer(resolving: c.engine.newAddress()) == nil)
    #expect(await a.engine.peer(resolvingBeacon: carols) == nil)
    let (ab, ba) = await runSession(a, b)
    _ = try ab.get()
    _ = try ba.get()
    #expect(a.folder.text("away.md") == "from bob, away")
    #expect(a.folder.text("late.md") == nil)
  }

  /// After the group moved past epoch 0, holding the key file no longer
  /// makes a device a member: its founding is ignored and it is refused.
  @Test func theKeyFileAloneNoLongerAdmitsAfterARekey() async throws {
    var a = try HandoffTestAgent("alice", key: key)
    let b = try HandoffTestAgent("bob", key: key)
    let (ra, rb) = await runSession(a, b)
    _ = try ra.get()
    _ = try rb.get()
    _ = try await a.engine.removeDevice("bob")
    a = try a.restarted()
    let newcomer = try HandoffTestAgent("mallory", key: key)
    let (toNewcomer, newcomerSide) = await meet(a, newcomer)
    #expect(throws: HandoffError.self) { try toNewcomer.get() }
    guard case .failure(let error) = newcomerSide else {
      Issue.record("a key holder was admitted after the rekey")
      return
    }
    #expect("\(error)".contains("not a member of this group"), "\(error)")
    #expect(await memberNames(a) == ["alice"])
  }

  @Test func removingNamesOneMemberOrSaysWhy() async throws {
    let a = try HandoffTestAgent("alice", key: key)
    await #expect(throws: HandoffError.self) { try await a.engine.removeDevice("nobody") }
    do {
      _ = try await a.engine.removeDevice("alice")
      Issue.record("removed itself")
    } catch {
      #expect("\(error)".contains("that is this device"))
    }
  }
}
