import Foundation
import Synchronization
import Testing

@testable import BatonHandoff

/// The engine and a folder's gate (`accept-command`): a note the gate has
/// not answered for waits, unwritten, and is applied or declined when it
/// answers, without being fetched again.
@Suite struct IncomingGateTests {
  /// Answers `pending` until told; records what it was asked and told.
  final class ScriptedGate: IncomingGate {
    struct State {
      var answers: [String: IncomingDecision] = [:]
      var asked: [String] = []
      var written: [IncomingActivity] = []
    }
    let state = Mutex(State())

    func decision(for activity: IncomingActivity) -> IncomingDecision {
      state.withLock {
        $0.asked.append(activity.path)
        return $0.answers[activity.path] ?? .pending
      }
    }

    func written(_ activity: IncomingActivity) {
      state.withLock { $0.written.append(activity) }
    }
  }

  @Test func aPendingNoteIsAppliedOrDeclinedWhenTheGateAnswers() async throws {
    let key = GroupKey.generate()
    let gate = ScriptedGate()
    let a = try HandoffTestAgent("A", key: key)
    let b = try HandoffTestAgent("B", key: key, gate: gate)
    await a.save("keep.md", "Keep\nthis one\n")
    await a.save("drop.md", "Drop\nnot this one\n")
    let (ra, rb) = await runSession(a, b)
    #expect(ra.succeeded && rb.succeeded, "\(ra) \(rb)")
    // Asked, not answered: nothing written, nothing declined yet.
    #expect(Set(gate.state.withLock { $0.asked }) == ["keep.md", "drop.md"])
    #expect(b.folder.text("keep.md") == nil && b.folder.text("drop.md") == nil)
    #expect(await b.counter(HandoffCounter.declined) == 0)

    gate.state.withLock {
      $0.answers = ["keep.md": .accept, "drop.md": .decline("the test says no")]
    }
    await b.engine.incomingDecided()
    #expect(b.folder.text("keep.md") == "Keep\nthis one\n")
    #expect(b.folder.text("drop.md") == nil)
    #expect(await b.counter(HandoffCounter.declined) == 1)
    #expect(await b.counter(HandoffCounter.received) == 1)
    let written = gate.state.withLock { $0.written }
    #expect(written.map(\.path) == ["keep.md"])
    #expect(written.first?.peer == "A" && written.first?.size == 14)

    // Kept, not fetched again: a second answer applies nothing twice.
    await b.engine.incomingDecided()
    #expect(await b.counter(HandoffCounter.received) == 1)
    #expect(gate.state.withLock { $0.written.count } == 1)
  }
}
