import Foundation
import Testing

@testable import BatonHandoff
@testable import BatonNotes
@testable import BatonStore
@testable import BatonSystem

/// Versions a device vouches for (issue 26, PROTOCOL.md section 7.5): a key
/// holder cannot raise another device's counter for a note, so it cannot
/// make that device's later edits vanish.
@Suite struct VouchedVersionTests {
  let key = GroupKey.generate()
  static let type = HandoffTestAgent.notesType
  static let nKey = HandoffEngine.key(type, "n.md")

  // MARK: The encoding

  @Test func vouchersSurviveTheWireAndAreCheckedAgainstTheirVersion() throws {
    let (a, b) = (DeviceKey.generate(), DeviceKey.generate())
    let version = VersionVector([a.deviceID: 3, b.deviceID: 1])
    let vouchers = Vouchers()
      .signed(by: a, type: Self.type, path: "n.md", version: version)
      .signed(by: b, type: Self.type, path: "n.md", version: version)
    #expect(vouchers.count == 2)
    #expect(vouchers.devices == [a.deviceID, b.deviceID].sorted())
    #expect(vouchers.verifies(a.deviceID, counter: 3, key: a.publicKey, type: Self.type, path: "n.md"))
    #expect(!vouchers.verifies(a.deviceID, counter: 4, key: a.publicKey, type: Self.type, path: "n.md"))
    #expect(!vouchers.verifies(a.deviceID, counter: 3, key: a.publicKey, type: Self.type, path: "m.md"))
    #expect(!vouchers.verifies(a.deviceID, counter: 3, key: b.publicKey, type: Self.type, path: "n.md"))

    let entry = HandoffIndexEntry(
      activityType: Self.type, path: "n.md", hash: ContentHash(of: [1]), size: 1, version: version,
      vouchers: vouchers, origin: a.deviceID)
    var w = ByteWriter()
    entry.encode(into: &w)
    #expect(w.bytes.count == entry.encodedSize)
    var r = WireReader(w.bytes)
    #expect(try HandoffIndexEntry.decode(from: &r) == entry)

    // A voucher of a device the version does not name is malformed.
    let other = VersionVector([a.deviceID: 3])
    var bad = ByteWriter()
    other.encode(into: &bad)
    vouchers.encode(into: &bad)
    var reader = WireReader(bad.bytes)
    let decoded = try VersionVector.decode(from: &reader)
    #expect(throws: WireError.self) { try Vouchers.decode(from: &reader, for: decoded) }
  }

  @Test func aMergeKeepsTheVoucherOfEachLargerCounter() {
    let (a, b) = (DeviceKey.generate(), DeviceKey.generate())
    let v1 = VersionVector([a.deviceID: 2, b.deviceID: 1])
    let v2 = VersionVector([a.deviceID: 1, b.deviceID: 3])
    let s1 = Vouchers().signed(by: a, type: Self.type, path: "n.md", version: v1)
      .signed(by: b, type: Self.type, path: "n.md", version: v1)
    let s2 = Vouchers().signed(by: a, type: Self.type, path: "n.md", version: v2)
      .signed(by: b, type: Self.type, path: "n.md", version: v2)
    var e = HandoffIndexEntry(
      activityType: Self.type, path: "n.md", hash: ContentHash(of: [1]), size: 1, version: v1,
      vouchers: s1, origin: a.deviceID)
    e.absorb(v2, vouchers: s2)
    #expect(e.version == VersionVector([a.deviceID: 2, b.deviceID: 3]))
    #expect(e.vouchers.verifies(a.deviceID, counter: 2, key: a.publicKey, type: Self.type, path: "n.md"))
    #expect(e.vouchers.verifies(b.deviceID, counter: 3, key: b.publicKey, type: Self.type, path: "n.md"))
  }

  /// 100,000 notes, each with its device's voucher, fit one INDEX: the
  /// limit of index messages is 32 MiB since protocol 9 (16 MiB before,
  /// which such an INDEX, about 17 MB, would pass).
  @Test func anIndexOfAHundredThousandVouchedNotesFitsItsLimit() throws {
    let key = DeviceKey.generate()
    let signature = key.sign(Array("any 64 bytes will do".utf8))
    var vouchers = Vouchers()
    vouchers.set(signature, for: key.deviceID)
    let entries = (0..<100_000).map { i in
      HandoffIndexEntry(
        activityType: "org.example.notes", path: "notes/\(i).md", hash: ContentHash(of: [UInt8(i & 0xff)]),
        size: 100, version: VersionVector([key.deviceID: 3]), vouchers: vouchers,
        origin: key.deviceID)
    }
    let body = HandoffMessage.index(entries).body
    #expect(body.count > 16 << 20 && body.count <= HandoffLimits.maxIndexBytes)
    let decoded = try HandoffMessage.decode(kind: HandoffMessage.Kind.index.rawValue, body: body, maxNoteSize: 1 << 20)
    guard case .index(let back) = decoded else {
      Issue.record("not an INDEX")
      return
    }
    #expect(back.count == 100_000 && back.last == entries.last)
  }

  // MARK: The rules

  /// Alice's note reached the victim vouched; mallory, a key holder, claims
  /// 1000 changes by alice under its own bytes. Before protocol 9 the victim
  /// took that as newer, and dropped alice's next edit (version 2) silently.
  @Test func aRaiseOfAnotherDevicesCounterNeedsItsVoucher() async throws {
    let alice = try HandoffTestAgent("alice", key: key)
    let victim = try HandoffTestAgent("victim", key: key)
    let mallory = try HandoffTestAgent("mallory", key: key)
    await alice.save("n.md", "v1")
    _ = await runSession(alice, victim)
    _ = await runSession(victim, mallory)
    #expect(victim.folder.text("n.md") == "v1" && mallory.folder.text("n.md") == "v1")
    let aliceID = alice.engine.deviceID
    let held = try #require(await victim.engine.index[Self.nKey])
    #expect(held.entry.vouchers[aliceID] != nil, "the victim keeps alice's voucher")

    await mallory.save("n.md", "evil")
    let mine = try #require(await mallory.engine.index[Self.nKey]).entry
    let forged = VersionVector([aliceID: 1000, mallory.engine.deviceID: mine.version[mallory.engine.deviceID]])
    var stripped = mine.vouchers
    stripped.set(nil, for: aliceID)
    await mallory.engine.forgeVouchedForTest(Self.type, "n.md", version: forged, vouchers: stripped)
    let (rm, rv) = await runSession(mallory, victim)
    #expect(rm.succeeded && rv.succeeded)
    #expect(rv.value?.failed == 1)
    #expect(victim.folder.text("n.md") == "v1")
    let failure = try #require(await victim.engine.status().failures.first)
    #expect(failure.reason.contains("with no voucher of that device"))

    // Alice's old voucher (for 1) under the claim of 1000 does not verify.
    await mallory.engine.forgeVouchedForTest(Self.type, "n.md", version: forged, vouchers: mine.vouchers)
    let (_, again) = await runSession(mallory, victim)
    #expect(again.value?.failed == 1)
    #expect(victim.folder.text("n.md") == "v1")
    #expect(try #require(await victim.engine.status().failures.first).reason.contains("does not verify"))

    await alice.save("n.md", "v2")
    _ = await runSession(alice, victim)
    #expect(victim.folder.text("n.md") == "v2", "alice's edit arrives")
    #expect(await victim.engine.index[Self.nKey]?.entry.version[aliceID] == 2)
  }

  /// Where the receiver holds no voucher of alice for the note (a new note
  /// here, or counters of protocol 8 and before), an unvouched raise is
  /// taken; alice's own later version, vouched, then arrives as a conflict
  /// copy instead of being dropped as older.
  @Test func anUnprovenCounterNeverOutranksAVouchedOne() async throws {
    let alice = try HandoffTestAgent("alice", key: key)
    let victim = try HandoffTestAgent("victim", key: key)
    let mallory = try HandoffTestAgent("mallory", key: key)
    _ = await runSession(alice, victim)
    _ = await runSession(mallory, victim)
    let aliceID = alice.engine.deviceID
    await mallory.save("n.md", "evil")
    let mine = try #require(await mallory.engine.index[Self.nKey]).entry
    await mallory.engine.forgeVouchedForTest(
      Self.type, "n.md", version: VersionVector([aliceID: 1000, mallory.engine.deviceID: 1]),
      vouchers: mine.vouchers)
    let (_, rv) = await runSession(mallory, victim)
    #expect(rv.value?.failed == 0)
    #expect(victim.folder.text("n.md") == "evil")

    await alice.save("n.md", "alice's")
    _ = await runSession(alice, victim)
    #expect(victim.folder.text("n.md") == "evil")
    #expect(victim.folder.contents.values.contains("alice's"), "kept as a conflict copy")
    #expect(await victim.counter(HandoffCounter.conflicts) == 1)
  }

  /// An agent keeps no voucher of its own (it signs its counter again each
  /// time it sends an entry, to the same bytes), so a database of protocol
  /// 8 needs nothing done to it, and 100,000 notes of its own cost no more
  /// memory than before; what it sends carries its voucher all the same.
  @Test func ownVouchersAreMadeOnTheWayOutNotKept() async throws {
    let alice = try HandoffTestAgent("alice", key: key)
    let victim = try HandoffTestAgent("victim", key: key)
    await alice.save("n.md", "v1")
    await alice.save("n.md", "v2")
    let aliceID = alice.engine.deviceID
    #expect(await alice.engine.index[Self.nKey]?.entry.vouchers.isEmpty == true)
    _ = await runSession(alice, victim)
    let entry = try #require(await victim.engine.index[Self.nKey]).entry
    let publicKey = await alice.engine.membership.device.publicKey
    #expect(entry.version[aliceID] == 2)
    #expect(entry.vouchers.verifies(aliceID, counter: 2, key: publicKey, type: Self.type, path: "n.md"))
    // The same bytes each time: the victim's copy equals a new signature.
    let again = Vouchers().signed(
      by: await alice.engine.membership.device, type: Self.type, path: "n.md",
      version: entry.version)
    #expect(again[aliceID] == entry.vouchers[aliceID])
  }
}

extension HandoffEngine {
  /// Replaces a note's version and vouchers, in the index and the store, as
  /// a hostile agent (or an older database) would hold them.
  func forgeVouchedForTest(
    _ type: String, _ path: String, version: VersionVector, vouchers: Vouchers
  ) {
    ensureScanned()
    let key = Self.key(type, path)
    index[key]?.entry.version = version
    index[key]?.entry.vouchers = vouchers
    if let note = index[key] { persistSave(note) }
  }
}
