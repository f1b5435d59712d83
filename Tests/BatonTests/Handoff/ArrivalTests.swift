import Foundation
import Synchronization
import Testing

@testable import BatonHandoff

/// What the engine tells of the notes that arrive (`onArrival`, the
/// agent's desktop notifications): the peer's current activity once, when
/// it is written; every note written; nothing for a note held already.
@Suite struct ArrivalTests {
  @Test func thePeersCurrentActivityIsToldOnceWhenWritten() async throws {
    let key = GroupKey.generate()
    let a = try HandoffTestAgent("A", key: key)
    let b = try HandoffTestAgent("B", key: key)
    let told = LockedArrivals()
    await b.engine.onArrival { told.append($0) }
    await a.save("old.md", "Old\nbrought by the catch-up\n")
    await a.save("current.md", "Current\nwhat A works on\n")
    // B asks A for its activity (B initiates): current.md first, then the rest.
    let (rb, ra) = await runSession(b, a)
    #expect(ra.succeeded && rb.succeeded, "\(ra) \(rb)")
    #expect(b.folder.text("old.md") != nil && b.folder.text("current.md") != nil)
    let handedOver = told.all.compactMap { if case .handedOver(let h) = $0 { h } else { nil } }
    #expect(handedOver.map(\.path) == ["current.md"], "\(told.all)")
    #expect(handedOver.first?.title == "Current" && handedOver.first?.peerName == "A")
    let written = told.all.compactMap { if case .written(let w) = $0 { w } else { nil } }
    #expect(Set(written.map(\.path)) == ["old.md", "current.md"], "\(told.all)")
    #expect(written.first { $0.path == "old.md" }?.title == "Old")

    // The same activity met again, held already: not news.
    let before = told.all.count
    let (again, _) = await runSession(b, a)
    #expect(again.succeeded, "\(again)")
    #expect(told.all.count == before, "\(told.all)")
  }

  final class LockedArrivals: Sendable {
    private let list = Mutex<[Arrival]>([])
    func append(_ arrival: Arrival) { list.withLock { $0.append(arrival) } }
    var all: [Arrival] { list.withLock { $0 } }
  }
}
