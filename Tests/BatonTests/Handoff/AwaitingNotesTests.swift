import Testing

@testable import BatonHandoff
@testable import BatonNotes
@testable import BatonSystem

/// The notes kept while a folder's gate decides: bounded in number and in
/// bytes, a plain value with no engine or actor.
@Suite struct AwaitingNotesTests {
  static let type = HandoffTestAgent.notesType

  static func note(_ path: String, bytes: Int) -> AwaitingNote {
    let content = [UInt8](repeating: 0x61, count: bytes)
    return AwaitingNote(
      payload: ActivityPayload(
        activityType: type, title: path, path: path, version: VersionVector([DeviceID(rawValue: 2): 1]),
        origin: DeviceID(rawValue: 2), originName: "peer", hash: ContentHash(of: content),
        content: content),
      peerLabel: "peer (addr)", peerName: "peer", peerDevice: DeviceID(rawValue: 2))
  }

  @Test func notesAreKeptUpToTheirNumberThenNone() {
    var awaiting = AwaitingNotes(limit: 2, byteLimit: 100)
    // A note kept again takes its own place, even when full.
    let kept = [
      awaiting.keep(Self.note("a.md", bytes: 10), key: "a"),
      awaiting.keep(Self.note("b.md", bytes: 10), key: "b"),
      awaiting.keep(Self.note("c.md", bytes: 10), key: "c"),
      awaiting.keep(Self.note("a.md", bytes: 30), key: "a"),
    ]
    #expect(kept == [true, true, false, true])
    #expect(awaiting.count == 2 && awaiting.bytes == 40 && awaiting.overflowed)
    let (notes, overflowed) = awaiting.takeAll()
    #expect(Set(notes.map(\.payload.path)) == ["a.md", "b.md"] && overflowed)
    #expect(awaiting.count == 0 && awaiting.bytes == 0 && !awaiting.overflowed)
    let again = awaiting.takeAll()
    #expect(again.notes.isEmpty && !again.overflowed)
  }

  @Test func notesAreKeptUpToTheirBytes() {
    var awaiting = AwaitingNotes(limit: 10, byteLimit: 100)
    // A note kept again: its new bytes replace its old ones in the count.
    let kept = [
      awaiting.keep(Self.note("a.md", bytes: 60), key: "a"),
      awaiting.keep(Self.note("b.md", bytes: 41), key: "b"),
      awaiting.keep(Self.note("b.md", bytes: 40), key: "b"),
      awaiting.keep(Self.note("a.md", bytes: 50), key: "a"),
      awaiting.keep(Self.note("a.md", bytes: 61), key: "a"),
    ]
    #expect(kept == [true, false, true, true, false])
    #expect(awaiting.bytes == 90 && awaiting.overflowed)
  }
}
