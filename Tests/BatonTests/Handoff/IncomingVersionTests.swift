import BatonSystem
import Testing

@testable import BatonHandoff

/// The choice a session makes for each live entry of a peer's index
/// (PROTOCOL.md 7.1, 7.5), as a plain function of the two versions: no
/// engine, no store, no actor.
@Suite struct IncomingVersionTests {
  let alice = DeviceID(rawValue: 1)
  let bob = DeviceID(rawValue: 2)
  let low = ContentHash(bytes: [UInt8](repeating: 0x01, count: 32))!
  let high = ContentHash(bytes: [UInt8](repeating: 0xF0, count: 32))!

  func entry(_ counters: [DeviceID: UInt64], _ hash: ContentHash, vouched: [DeviceID] = [])
    -> HandoffIndexEntry
  {
    var vouchers = Vouchers()
    for device in vouched { vouchers.set([UInt8](repeating: 7, count: 64), for: device) }
    return HandoffIndexEntry(
      activityType: "t", path: "n.md", hash: hash, size: 1, version: VersionVector(counters),
      vouchers: vouchers, origin: alice)
  }

  func choice(
    _ offered: HandoffIndexEntry, _ local: HandoffIndexEntry?, deleted: Bool = false,
    wanted: Bool = false
  ) -> IncomingVersion {
    IncomingVersion(
      offered: offered,
      against: local.map { StoredNote(entry: $0, deleted: deleted, wanted: wanted) })
  }

  @Test func aPathUnknownHereIsFetchedAsNew() {
    #expect(choice(entry([alice: 1], low), nil) == .fetchNew)
  }

  @Test func anOlderVersionIsKept() {
    #expect(choice(entry([alice: 1], high), entry([alice: 2], low)) == .keep)
  }

  @Test func aNewerVersionWithOtherBytesIsAChange() {
    #expect(choice(entry([alice: 2], high), entry([alice: 1], low)) == .fetchChange)
  }

  @Test func concurrentVersionsWithOtherBytesAreAChange() {
    // Fetched as a change; the NOTE's check then makes it a conflict copy.
    #expect(choice(entry([alice: 2], high), entry([alice: 1, bob: 1], low)) == .fetchChange)
  }

  @Test func theSameBytesByAnotherHistoryMergeTheVersionWithoutATransfer() {
    #expect(choice(entry([alice: 2], low), entry([alice: 1, bob: 1], low)) == .mergeVersion)
    #expect(choice(entry([alice: 2], low), entry([alice: 1], low)) == .mergeVersion)
  }

  @Test func equalVersionsWithOtherBytesFollowTheLargerHash() {
    #expect(choice(entry([alice: 1], high), entry([alice: 1], low)) == .fetchChange)
    #expect(choice(entry([alice: 1], low), entry([alice: 1], high)) == .keep)
    #expect(choice(entry([alice: 1], low), entry([alice: 1], low)) == .keep)
    #expect(IncomingVersion.wins(high, over: low))
    #expect(!IncomingVersion.wins(low, over: high))
    #expect(!IncomingVersion.wins(low, over: low))
  }

  @Test func aNoteDeletedOrWithdrawnHereIsFetchedAsNewWhenNewer() {
    #expect(choice(entry([alice: 2], low), entry([alice: 1], low), deleted: true) == .fetchNew)
    #expect(choice(entry([alice: 2], high), entry([alice: 1], low), deleted: true) == .fetchNew)
    // Not when the version here is newer, nor when equal.
    #expect(choice(entry([alice: 1], low), entry([alice: 2], low), deleted: true) == .keep)
    #expect(choice(entry([alice: 1], low), entry([alice: 1], low), deleted: true) == .keep)
  }

  @Test func aNoteWantedBackIsFetchedAtTheSameVersion() {
    #expect(
      choice(entry([alice: 1], low), entry([alice: 1], low), deleted: true, wanted: true)
        == .fetchNew)
  }

  /// Section 7: only this device counts its own changes, and a merged
  /// version may name at most `maxMergedDevices` devices.
  @Test func aForgedVersionIsRefusedWithItsReason() {
    let here = entry([alice: 3, bob: 2], low)
    // Bob (this device) made 2 changes; a version claiming 3 is forged.
    let forged = IncomingVersion.implausibility(
      of: VersionVector([alice: 1, bob: 3]), path: "n.md", against: here, device: bob)
    #expect(forged?.contains("forged version of n.md") == true)
    // Other devices' counters may be anything; ours up to what we made.
    #expect(
      IncomingVersion.implausibility(
        of: VersionVector([alice: 900, bob: 2]), path: "n.md", against: here, device: bob) == nil)
    // A note unknown here: any counter of ours is forged.
    #expect(
      IncomingVersion.implausibility(
        of: VersionVector([bob: 1]), path: "n.md", against: nil, device: bob) != nil)
    var many: [DeviceID: UInt64] = [:]
    for n in 1...UInt64(HandoffLimits.maxMergedDevices) { many[DeviceID(rawValue: 100 + n)] = 1 }
    let tooMany = IncomingVersion.implausibility(
      of: VersionVector(many), path: "n.md", against: here, device: bob)
    #expect(tooMany?.contains("would grow to") == true)
    many.removeValue(forKey: DeviceID(rawValue: 101))
    many.removeValue(forKey: DeviceID(rawValue: 102))
    #expect(
      IncomingVersion.implausibility(
        of: VersionVector(many), path: "n.md", against: here, device: bob) == nil)
  }

  @Test func anUnprovenLocalCounterNeverOutranksAVouchedOne() {
    // Bob's 5 here has no voucher; the peer's bob: 3 has one, so the peer's
    // version, older as the vectors compare, is concurrent (section 7.5).
    let offered = entry([alice: 1, bob: 3], high, vouched: [bob])
    #expect(
      IncomingVersion.order(
        of: offered.version, vouchers: offered.vouchers, against: entry([alice: 1, bob: 5], low))
        == .concurrent)
    #expect(choice(offered, entry([alice: 1, bob: 5], low)) == .fetchChange)
    // With the local counter vouched for, it is older.
    #expect(choice(offered, entry([alice: 1, bob: 5], low, vouched: [bob])) == .keep)
    // And without a voucher on either side, as the vectors compare.
    #expect(choice(entry([alice: 1, bob: 3], high), entry([alice: 1, bob: 5], low)) == .keep)
  }

  // MARK: A note that arrived (NOTE)

  func taking(
    _ arrived: HandoffIndexEntry, _ local: HandoffIndexEntry?, deleted: Bool = false,
    wanted: Bool = false
  ) -> IncomingVersion.Taking {
    IncomingVersion.taking(
      arrived.version, vouchers: arrived.vouchers, hash: arrived.hash,
      against: local.map { StoredNote(entry: $0, deleted: deleted, wanted: wanted) })
  }

  @Test func anArrivalNewHereOrNewerIsWritten() {
    #expect(taking(entry([alice: 1], low), nil) == .written)
    #expect(taking(entry([alice: 2], high), entry([alice: 1], low)) == .written)
    // Over a tombstone, even concurrent: nothing live here to keep.
    #expect(taking(entry([bob: 1], high), entry([alice: 1], low), deleted: true) == .written)
  }

  @Test func anOlderOrReplayedArrivalIsIgnoredEvenOverATombstone() {
    #expect(taking(entry([alice: 1], high), entry([alice: 2], low)) == .ignored)
    #expect(taking(entry([alice: 1], high), entry([alice: 2], low), deleted: true) == .ignored)
    #expect(taking(entry([alice: 2], low), entry([alice: 2], low)) == .ignored)
  }

  @Test func anEqualVersionIsWrittenOnlyWhenWantedBackOrItsBytesWin() {
    #expect(taking(entry([alice: 2], high), entry([alice: 2], low)) == .written)
    #expect(taking(entry([alice: 2], low), entry([alice: 2], high)) == .ignored)
    #expect(taking(entry([alice: 2], low), entry([alice: 2], low), wanted: true) == .written)
    #expect(taking(entry([alice: 2], high), entry([alice: 2], low), deleted: true) == .ignored)
  }

  @Test func aConcurrentArrivalOfOtherBytesIsAConflictCopy() {
    #expect(taking(entry([bob: 1], high), entry([alice: 1], low)) == .conflictCopy)
    // The same bytes by another history: written (the versions merge).
    #expect(taking(entry([bob: 1], low), entry([alice: 1], low)) == .written)
  }
}
