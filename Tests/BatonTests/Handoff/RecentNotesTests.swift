import Testing

@testable import BatonHandoff
@testable import BatonSystem

/// The bytes carried from a save or an arrival (`RecentNotes`): a plain
/// value, no actor.
@Suite struct RecentNotesTests {
  private func note(_ size: Int, _ fill: UInt8 = 0x61) -> ([UInt8], ContentHash) {
    let bytes = [UInt8](repeating: fill, count: size)
    return (bytes, ContentHash(of: bytes))
  }

  @Test func bytesAreGivenOnlyForTheHashTheIndexNames() {
    var recent = RecentNotes()
    let (old, oldHash) = note(10, 0x61)
    let (new, newHash) = note(10, 0x62)
    recent.keep("t\0n.md", hash: oldHash, modified: 1, bytes: old)
    #expect(recent.bytes("t\0n.md", hash: oldHash, modified: 1) == old)
    #expect(recent.bytes("t\0n.md", hash: newHash, modified: 1) == nil)
    #expect(recent.bytes("t\0other.md", hash: oldHash, modified: 1) == nil)
    recent.keep("t\0n.md", hash: newHash, modified: 1, bytes: new)
    #expect(recent.bytes("t\0n.md", hash: oldHash, modified: 1) == nil)
    #expect(recent.bytes("t\0n.md", hash: newHash, modified: 1) == new)
    #expect(recent.count == 1 && recent.size == 10)
  }

  /// A file touched or deleted since its bytes were carried is read again:
  /// the bytes are given only while its modification time is unchanged.
  @Test func aFileChangedOrGoneSinceIsNotServedFromMemory() {
    var recent = RecentNotes()
    let (bytes, hash) = note(10)
    recent.keep("k", hash: hash, modified: 100, bytes: bytes)
    #expect(recent.bytes("k", hash: hash, modified: 100) == bytes)
    #expect(recent.bytes("k", hash: hash, modified: 101) == nil)
    #expect(recent.bytes("k", hash: hash, modified: nil) == nil)
    // Written and already gone: nothing to keep.
    recent.keep("gone", hash: hash, modified: nil, bytes: bytes)
    #expect(recent.count == 1 && recent.size == 10)
  }

  /// The file is looked at (`lstat`) only for a note whose bytes are kept.
  @Test func theModificationTimeIsAskedOnlyForANoteKept() {
    var recent = RecentNotes()
    let (bytes, hash) = note(10)
    var asked = 0
    func modified() -> Int64? {
      asked += 1
      return 100
    }
    #expect(recent.bytes("k", hash: hash, modified: modified()) == nil)
    recent.keep("k", hash: hash, modified: 100, bytes: bytes)
    #expect(recent.bytes("k", hash: note(11).1, modified: modified()) == nil)
    #expect(asked == 0)
    #expect(recent.bytes("k", hash: hash, modified: modified()) == bytes)
    #expect(asked == 1)
  }

  @Test func theOldestAreDroppedToStayWithinTheBudget() {
    var recent = RecentNotes()
    let quarter = RecentNotes.budget / 4
    for i in 0..<5 {
      let (bytes, hash) = note(quarter, UInt8(i))
      recent.keep("k\(i)", hash: hash, modified: 1, bytes: bytes)
    }
    #expect(recent.size == RecentNotes.budget)
    #expect(recent.count == 4)
    #expect(recent.bytes("k0", hash: note(quarter, 0).1, modified: 1) == nil)
    #expect(recent.bytes("k4", hash: note(quarter, 4).1, modified: 1) != nil)
    // Keeping a note again makes it the newest.
    let (b1, h1) = note(quarter, 1)
    recent.keep("k1", hash: h1, modified: 1, bytes: b1)
    let (b5, h5) = note(quarter, 5)
    recent.keep("k5", hash: h5, modified: 1, bytes: b5)
    #expect(recent.bytes("k1", hash: h1, modified: 1) != nil)
    #expect(recent.bytes("k2", hash: note(quarter, 2).1, modified: 1) == nil)
  }

  @Test func theNumberOfNotesIsBoundedToo() {
    var recent = RecentNotes()
    for i in 0..<(RecentNotes.maxNotes + 10) {
      let (bytes, hash) = note(1, UInt8(truncatingIfNeeded: i))
      recent.keep("k\(i)", hash: hash, modified: 1, bytes: bytes)
    }
    #expect(recent.count == RecentNotes.maxNotes)
    #expect(recent.size == RecentNotes.maxNotes)
    #expect(recent.bytes("k9", hash: note(1, 9).1, modified: 1) == nil)
  }

  /// A session's GET_ACTIVITY (for the title) and GET_NOTE take the bytes
  /// the save carried; a note only a scan found is read for them.
  @Test func aSessionServesASavedNoteWithoutReadingIt() async throws {
    let key = GroupKey.generate()
    let a = try HandoffTestAgent("alice", key: key)
    let b = try HandoffTestAgent("bob", key: key)
    await a.save("saved.md", "Saved\n")
    let (initiator, responder) = await runSession(b, a)
    #expect((try? initiator.get())?.received == ["\(HandoffTestAgent.notesType):saved.md"])
    #expect((try? responder.get()) != nil)
    #expect(a.folder.reads.withLock { $0 } == 0)
    #expect(b.folder.text("saved.md") == "Saved\n")
  }

  @Test func aNoteOverTheBudgetIsNotKeptAndDropsItsOldBytes() {
    var recent = RecentNotes()
    let (small, smallHash) = note(100)
    recent.keep("k", hash: smallHash, modified: 1, bytes: small)
    let (big, bigHash) = note(RecentNotes.budget + 1)
    recent.keep("k", hash: bigHash, modified: 1, bytes: big)
    #expect(recent.bytes("k", hash: bigHash, modified: 1) == nil)
    #expect(recent.bytes("k", hash: smallHash, modified: 1) == nil)
    #expect(recent.count == 0 && recent.size == 0)
    recent.forget("absent")
    #expect(recent.size == 0)
  }
}
