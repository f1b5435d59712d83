import BatonSystem
import Testing

@testable import BatonHandoff

/// A local save and a note gone from the folder (PROTOCOL.md 7, 7.2), as
/// plain functions of the entry here and what the folder shows: no
/// engine, no store, no actor.
@Suite struct LocalVersionTests {
  let me = DeviceID(rawValue: 7)
  let peer = DeviceID(rawValue: 9)
  let one = ContentHash(of: Array("one".utf8))
  let two = ContentHash(of: Array("two".utf8))

  func note(_ counters: [DeviceID: UInt64], _ hash: ContentHash, deleted: Bool = false)
    -> StoredNote
  {
    StoredNote(
      entry: HandoffIndexEntry(
        activityType: "t", path: "n.md", hash: hash, size: 3, version: VersionVector(counters),
        origin: peer),
      deleted: deleted)
  }

  func saving(_ hash: ContentHash, against existing: StoredNote?) -> LocalVersion {
    LocalVersion(saving: hash, size: 3, of: "t", "n.md", against: existing, device: me)
  }

  @Test func aNewNoteGetsThisDevicesFirstCounter() {
    guard case .newVersion(let made) = saving(one, against: nil) else {
      Issue.record("no new version")
      return
    }
    #expect(made.entry.version == VersionVector([me: 1]))
    #expect(made.entry.origin == me && !made.deleted && made.entry.hash == one)
  }

  @Test func otherBytesRaiseOnlyThisDevicesCounter() {
    guard case .newVersion(let made) = saving(two, against: note([peer: 3, me: 1], one)) else {
      Issue.record("no new version")
      return
    }
    #expect(made.entry.version == VersionVector([peer: 3, me: 2]))
  }

  @Test func theSameBytesAreNoNewVersion() {
    #expect(saving(one, against: note([peer: 3], one)) == .unchanged)
  }

  @Test func theBytesOfAWithdrawnNoteBackAreTheSameVersion() {
    let withdrawn = note([peer: 3], one, deleted: true)
    #expect(saving(one, against: withdrawn) == .restored(note([peer: 3], one)))
  }

  @Test func theBytesOfADeletedNoteBackAreANewVersionOverTheTombstone() {
    let tombstone = StoredNote.tombstone(
      of: note([peer: 3], one).entry, version: VersionVector([peer: 3, me: 1]), origin: me)
    guard case .newVersion(let made) = saving(one, against: tombstone) else {
      Issue.record("no new version")
      return
    }
    #expect(made.entry.version == VersionVector([peer: 3, me: 2]))
    #expect(VersionVector([peer: 3, me: 2]).compare(tombstone.entry.version) == .newer)
  }

  @Test func anExhaustedCounterMakesNoVersion() {
    #expect(saving(two, against: note([me: .max], one)) == .counterExhausted)
  }

  @Test func aFileGoneIsATombstoneAndAFileStillThereAWithdrawal() {
    let live = note([peer: 3], one)
    let deleted = LocalVersion.removing(live, fileGone: true, device: me)
    #expect(deleted?.tombstone == true)
    #expect(deleted?.note.entry.deleted == true)
    #expect(deleted?.note.entry.version == VersionVector([peer: 3, me: 1]))
    let withdrawn = LocalVersion.removing(live, fileGone: false, device: me)
    #expect(withdrawn?.tombstone == false)
    #expect(withdrawn?.note.deleted == true && withdrawn?.note.entry.deleted == false)
    #expect(withdrawn?.note.entry.version == live.entry.version)
    // Nothing to remove: no entry, or one not live.
    #expect(LocalVersion.removing(nil, fileGone: true, device: me) == nil)
    #expect(LocalVersion.removing(withdrawn?.note, fileGone: true, device: me) == nil)
    // A counter at its maximum: withdrawn, never a tombstone that cannot win.
    let exhausted = LocalVersion.removing(note([me: .max], one), fileGone: true, device: me)
    #expect(exhausted?.tombstone == false)
  }
}
