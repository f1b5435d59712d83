import Testing

@testable import BatonHandoff
@testable import BatonSystem

/// The decisions that change the index (PROTOCOL.md 7 to 7.2), made by the
/// index itself: a plain value, with no engine, store, folder or actor.
@Suite struct IndexDecisionTests {
  static let type = HandoffTestAgent.notesType
  let me = DeviceID(rawValue: 1)
  let peer = DeviceID(rawValue: 2)
  var index = HandoffIndex(offeredTypes: [Self.type], summaryKey: IndexSummaryTests.summaryKey)

  static func hash(_ text: String) -> ContentHash { ContentHash(of: Array(text.utf8)) }

  func peerEntry(_ text: String, _ version: VersionVector, path: String = "n.md", deleted: Bool = false)
    -> HandoffIndexEntry
  {
    HandoffIndexEntry(
      activityType: Self.type, path: path, hash: Self.hash(text), size: text.utf8.count,
      version: version, origin: peer, deleted: deleted)
  }

  func payload(_ text: String, _ version: VersionVector, path: String = "n.md") -> ActivityPayload {
    ActivityPayload(
      activityType: Self.type, title: text, path: path, version: version, origin: peer,
      originName: "peer", hash: Self.hash(text), content: Array(text.utf8))
  }

  var stored: StoredNote? { index[HandoffIndex.key(Self.type, "n.md")] }

  @Test mutating func aSaveMakesAVersionOnlyForOtherBytes() {
    let first = index.recordLocal(Self.type, "n.md", hash: Self.hash("a"), size: 1, device: me)
    guard case .newVersion(let made) = first else {
      Issue.record("a new note is a new version, not \(first)")
      return
    }
    #expect(made.entry.version == VersionVector([me: 1]))
    #expect(stored == made)
    #expect(index.takeChange() == HandoffIndex.key(Self.type, "n.md"))
    // The same bytes again: nothing changes.
    let again = index.recordLocal(Self.type, "n.md", hash: Self.hash("a"), size: 1, device: me)
    #expect(again == .unchanged)
    #expect(index.takeChange() == nil)
    #expect(stored?.entry.version == VersionVector([me: 1]))
    // Other bytes: the counter goes on.
    _ = index.recordLocal(Self.type, "n.md", hash: Self.hash("b"), size: 1, device: me)
    #expect(stored?.entry.version == VersionVector([me: 2]))
    #expect(stored?.entry.hash == Self.hash("b"))
  }

  @Test mutating func aNoteGoneIsATombstoneAndOneWithdrawnComesBackAsItWas() throws {
    _ = index.recordLocal(Self.type, "n.md", hash: Self.hash("a"), size: 1, device: me)
    // Withdrawn (the file is still there, no longer a note): not offered, same version.
    let withdrawing = index.remove(Self.type, "n.md", fileGone: false, device: me)
    let withdrawn = try #require(withdrawing)
    #expect(!withdrawn.tombstone)
    #expect(withdrawn.note.deleted && !withdrawn.note.entry.deleted)
    #expect(index.summary.count == 0)
    // Its bytes back: the same version, offered again.
    guard case .restored(let back) = index.recordLocal(
      Self.type, "n.md", hash: Self.hash("a"), size: 1, device: me)
    else {
      Issue.record("the same bytes after a withdrawal are the same version")
      return
    }
    #expect(back.entry.version == VersionVector([me: 1]))
    #expect(index.summary.count == 1)
    // Its file gone: a tombstone at the next counter, offered.
    let removing = index.remove(Self.type, "n.md", fileGone: true, device: me)
    let gone = try #require(removing)
    #expect(gone.tombstone)
    #expect(gone.note.entry.deleted && gone.note.entry.version == VersionVector([me: 2]))
    #expect(index.tombstoneCount == 1)
    // Nothing live is left to remove or withdraw.
    let (removedAgain, withdrawnAgain) = (
      index.remove(Self.type, "n.md", fileGone: true, device: me), index.withdraw(Self.type, "n.md")
    )
    #expect(removedAgain == nil && withdrawnAgain == nil)
  }

  @Test mutating func theMissingPathsAreTheLiveNotesTheFolderLacks() {
    for path in ["a.md", "b.md", "c.md"] {
      _ = index.recordLocal(Self.type, path, hash: Self.hash(path), size: 4, device: me)
    }
    _ = index.withdraw(Self.type, "c.md")
    #expect(index.missingPaths(of: Self.type) { $0 != "a.md" }.sorted() == ["b.md"])
    #expect(index.missingPaths(of: "org.example.other") { _ in true }.isEmpty)
  }

  @Test mutating func aPeersIndexIsWeighedIntoWhatToFetch() {
    _ = index.recordLocal(Self.type, "n.md", hash: Self.hash("a"), size: 1, device: me)
    var plan = HandoffIndex.FetchPlan()
    let tombstone = peerEntry("t", VersionVector([peer: 1]), path: "t.md", deleted: true)
    let offered = [
      peerEntry("x", VersionVector([peer: 1]), path: "new.md"),
      peerEntry("b", VersionVector([me: 1, peer: 1])), peerEntry("old", VersionVector()), tombstone,
    ]
    var mergedAny = false
    for e in offered where index.weigh(e, into: &plan) != nil { mergedAny = true }
    #expect(!mergedAny)
    #expect(plan.fresh.map(\.path) == ["new.md"])
    #expect(plan.updates.map(\.path) == ["n.md"])
    #expect(plan.tombstones == [tombstone])
    #expect(plan.wanted.map(\.path) == ["new.md", "n.md"])
    // The same bytes by another history: the merged version here, no fetch.
    // `wouldFetch` says the same, and changes nothing.
    #expect(offered.map(index.wouldFetch) == [true, true, false, false])
    #expect(!index.wouldFetch(peerEntry("a", VersionVector([peer: 3]))))
    #expect(stored?.entry.version == VersionVector([me: 1]))
    var none = HandoffIndex.FetchPlan()
    let merged = index.weigh(peerEntry("a", VersionVector([peer: 3])), into: &none)
    #expect(merged?.entry.version == VersionVector([me: 1, peer: 3]))
    #expect(stored?.entry.version == VersionVector([me: 1, peer: 3]))
    #expect(none == HandoffIndex.FetchPlan())
  }

  @Test mutating func aNoteThatArrivedIsWrittenAConflictCopyOrNothingNew() {
    // New here: written, at its own version.
    let new = index.incoming(payload("b", VersionVector([peer: 1])))
    #expect(new?.incoming.entry.version == VersionVector([peer: 1]))
    #expect(new?.conflict == false && new?.local == nil)
    _ = index.recordLocal(Self.type, "n.md", hash: Self.hash("a"), size: 1, device: me)
    // Concurrent with other bytes here: a conflict copy, the note here kept.
    let copy = index.incoming(payload("b", VersionVector([peer: 1])))
    #expect(copy?.conflict == true)
    #expect(copy?.local == stored)
    #expect(copy?.merged == VersionVector([me: 1, peer: 1]))
    // Newer: written over it.
    let newer = index.incoming(payload("c", VersionVector([me: 1, peer: 1])))
    #expect(newer?.conflict == false)
    #expect(newer?.incoming.entry.hash == Self.hash("c"))
    // Older (a replay): nothing new.
    #expect(index.incoming(payload("z", VersionVector())) == nil)
  }

  @Test mutating func aPeersDeletionWinsOverWhatItSawAndLosesToAnEditItDidNotSee() {
    // Never held here: remembered, with nothing to do in the folder.
    let unknown = peerEntry("x", VersionVector([peer: 1]), path: "x.md", deleted: true)
    #expect(index.choice(for: unknown) == .adopt(StoredNote(entry: unknown)))
    _ = index.recordLocal(Self.type, "n.md", hash: Self.hash("a"), size: 1, device: me)
    let key = HandoffIndex.key(Self.type, "n.md")
    // It saw our version: the note goes to the trash.
    #expect(index.choice(for: peerEntry("a", VersionVector([me: 1, peer: 1]), deleted: true)) == .trash)
    // Ours is newer: the peer takes it.
    #expect(index.choice(for: peerEntry("a", VersionVector(), deleted: true)) == .ignore)
    // It did not see our version: the edit stays, newer than both.
    let blind = peerEntry("a", VersionVector([peer: 1]), deleted: true)
    #expect(index.choice(for: blind) == .keepEdit)
    let kept = index.keepEdit(key, against: blind, device: me)
    #expect(kept?.entry.version == VersionVector([me: 2, peer: 1]))
    #expect(kept?.entry.origin == me && kept == stored && stored?.deleted == false)
    // Deleted on both sides, each unseen by the other: the join.
    _ = index.remove(Self.type, "n.md", fileGone: true, device: me)
    guard case .adopt(let both) = index.choice(
      for: peerEntry("a", VersionVector([peer: 2]), deleted: true))
    else {
      Issue.record("two deletions join")
      return
    }
    #expect(both.entry.deleted && both.entry.version == VersionVector([me: 3, peer: 2]))
  }

  @Test mutating func aPeersRenameIsTakenWhereTheOldNameHoldsWhatItSaw() {
    _ = index.recordLocal(Self.type, "old.md", hash: Self.hash("a"), size: 1, device: me)
    let gone = peerEntry("a", VersionVector([me: 1, peer: 1]), path: "old.md", deleted: true)
    let new = peerEntry("a", VersionVector([me: 1, peer: 1]), path: "new.md")
    #expect(index.mayRename(gone, to: new))
    // Not when the old name holds other bytes, or a version the deletion did not see.
    #expect(!index.mayRename(peerEntry("b", VersionVector([me: 1, peer: 1]), path: "old.md", deleted: true), to: new))
    #expect(!index.mayRename(peerEntry("a", VersionVector([peer: 1]), path: "old.md", deleted: true), to: new))
    // Not when the new name holds a live note here.
    var taken = index
    _ = taken.recordLocal(Self.type, "new.md", hash: Self.hash("c"), size: 1, device: me)
    #expect(!taken.mayRename(gone, to: new))
    let (tombstone, note) = index.renamed(gone, to: new)
    #expect(tombstone.entry == gone && note.entry == new)
    #expect(index[HandoffIndex.key(Self.type, "old.md")]?.entry.deleted == true)
    #expect(index[HandoffIndex.key(Self.type, "new.md")] == note)
    #expect(index.summary.count == 2 && index.tombstoneCount == 1)
  }

  @Test mutating func aPushConflictsOnlyWithOtherBytesOfAConcurrentLiveNote() {
    _ = index.recordLocal(Self.type, "n.md", hash: Self.hash("a"), size: 1, device: me)
    #expect(index.conflicts(with: payload("b", VersionVector([peer: 1]))))
    #expect(!index.conflicts(with: payload("a", VersionVector([peer: 1]))))
    #expect(!index.conflicts(with: payload("b", VersionVector([me: 1, peer: 1]))))
    #expect(!index.conflicts(with: payload("b", VersionVector([peer: 1]), path: "new.md")))
    #expect(index.holds(payload("a", VersionVector([peer: 1]))))
    #expect(!index.holds(payload("b", VersionVector([me: 1, peer: 1]))))
    // Withdrawn here: neither, whatever the bytes.
    _ = index.withdraw(Self.type, "n.md")
    #expect(!index.conflicts(with: payload("b", VersionVector([peer: 1]))))
    #expect(!index.holds(payload("a", VersionVector([peer: 1]))))
  }
}
