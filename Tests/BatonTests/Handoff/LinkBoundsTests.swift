import Foundation
import Testing

@testable import BatonHandoff
@testable import BatonSystem

/// What a peer on a link can make us queue or redo (issue 30): every
/// received message's bytes count against the link's inbox bound.
@Suite struct LinkBoundsTests {
  let key = GroupKey.generate()

  private func entries(_ count: Int, prefix: String) -> [HandoffIndexEntry] {
    let long = String(repeating: "x", count: 900)
    return (0..<count).map { i in
      HandoffIndexEntry(
        activityType: "org.example.notes", path: "\(prefix)/\(long)-\(i).md",
        hash: ContentHash(of: Array("\(i)".utf8)), size: 1,
        version: VersionVector([DeviceID(rawValue: 7): 1]), origin: DeviceID(rawValue: 7))
    }
  }

  /// A peer that floods INDEX, HAVE and GONE fills the inbox as NOTEs do:
  /// past `inboxLimit` bytes the reader applies what waits before reading on.
  @Test(arguments: ["index", "have", "gone"])
  func indexMessagesCountAgainstTheInbox(kind: String) async throws {
    let a = try HandoffTestAgent("alice", key: key)
    let b = try HandoffTestAgent("bob", key: key)
    let (la, cb) = try await linkToSilentPeer(a, b)
    // About 1 MiB a message: four fit, the fifth fills the inbox.
    var fulls: [Bool] = []
    var floods: [Bool] = []
    for round in 0..<5 {
      let batch = entries(1000, prefix: "r\(round)")
      let message: HandoffMessage =
        switch kind {
        case "index": .index(batch)
        case "have": .have(batch)
        default: .gone(batch)
        }
      let (full, flood) = la.queueReceived(message)
      fulls.append(full)
      floods.append(flood)
    }
    #expect(fulls == [false, false, false, false, true])
    #expect(floods == [false, false, false, false, true])
    // Logged once per link.
    #expect(la.queueReceived(.index(entries(1, prefix: "again"))) == (true, false))
    // Applying takes the oldest first, a turn's worth at a time; the rest
    // stays counted until it is taken too.
    let waiting = la.waitingCount
    let first = la.takeReceived(upTo: 1)
    #expect(first.messages.count == 1 && first.more)
    #expect(la.waitingCount == waiting - 1)
    // About 1 MiB taken, four still counted: one more fills it again.
    #expect(la.queueReceived(.index(entries(1000, prefix: "still"))).full == true)
    let rest = la.takeReceived(upTo: .max)
    #expect(rest.messages.count == waiting && !rest.more)
    #expect(la.queueReceived(.index(entries(1, prefix: "after"))).full == false)
    await la.close()
    await cb.close()
  }

  @Test func everyQueuedKindHasItsBytesCounted() {
    let one = entries(1, prefix: "a")
    let size = one[0].encodedSize
    #expect(size > 900)
    #expect(HandoffLink.queuedBytes(.index(one)) == size)
    #expect(HandoffLink.queuedBytes(.have(one + one)) == 2 * size)
    #expect(HandoffLink.queuedBytes(.gone(one)) == size)
    #expect(HandoffLink.queuedBytes(.moved(from: one[0], to: one[0])) == 2 * size)
  }
}
