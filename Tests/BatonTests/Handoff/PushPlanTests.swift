import Testing

@testable import BatonHandoff
@testable import BatonSystem

/// How a link sends what its peer lacks (PROTOCOL.md 6.2, 7.3): a plain
/// value of what is pending and what the peer holds, with no link or actor.
@Suite struct PushPlanTests {
  static let type = HandoffTestAgent.notesType
  static let me = DeviceID(rawValue: 1)

  static func entry(_ path: String, _ text: String, deleted: Bool = false) -> HandoffIndexEntry {
    HandoffIndexEntry(
      activityType: type, path: path, hash: ContentHash(of: Array(text.utf8)), size: text.utf8.count,
      version: VersionVector([me: 2]), origin: me, deleted: deleted)
  }

  @Test func aTombstoneAndANoteOfItsBytesAreARenameWhereThePeerHoldsTheOldName() {
    let gone = Self.entry("old.md", "a", deleted: true)
    let new = Self.entry("new.md", "a")
    let other = Self.entry("other.md", "b")
    let deleted = Self.entry("deleted.md", "c", deleted: true)
    let holds = [
      HandoffIndex.key(Self.type, "old.md"): ContentHash(of: Array("a".utf8)),
      HandoffIndex.key(Self.type, "deleted.md"): ContentHash(of: Array("c".utf8)),
    ]
    let plan = PushPlan([other, gone, deleted, new]) { holds[$0] }
    #expect(plan.moves == [PushPlan.Move(gone: gone, new: new)])
    #expect(plan.tombstones == [deleted])
    #expect(plan.notes == [other])
  }

  @Test func noRenameWhereThePeerHoldsOtherBytesOrTheNewName() {
    let gone = Self.entry("old.md", "a", deleted: true)
    let new = Self.entry("new.md", "a")
    let key = { HandoffIndex.key(Self.type, $0) }
    // The peer's old name holds other bytes: a deletion and a note.
    let otherBytes = PushPlan([gone, new]) { $0 == key("old.md") ? ContentHash(of: [9]) : nil }
    #expect(otherBytes.moves.isEmpty && otherBytes.tombstones == [gone] && otherBytes.notes == [new])
    // The peer holds the new name already: the same.
    let taken = PushPlan([gone, new]) { _ in ContentHash(of: Array("a".utf8)) }
    #expect(taken.moves.isEmpty && taken.tombstones == [gone] && taken.notes == [new])
    // One tombstone renames one note: a second copy of its bytes is a note.
    let copy = Self.entry("copy.md", "a")
    let once = PushPlan([gone, new, copy]) { $0 == key("old.md") ? ContentHash(of: Array("a".utf8)) : nil }
    #expect(once.moves == [PushPlan.Move(gone: gone, new: new)] && once.notes == [copy])
  }
}
