import BatonTestSupport
import Foundation
import Testing

@testable import BatonHandoff
@testable import BatonSystem

/// The round trips a link's start saves (PROTOCOL.md 6.2 and 6.3, protocol
/// 11): the initiator sends LINK with its first MEMBERS, and each LINK
/// carries its sender's summary root, so a side whose peer differs only at
/// the root pushes at once. Each test speaks for one side by hand and never
/// answers what it is not meant to need: a side that waited for an answer
/// would wait past the test's bound.
@Suite struct LinkRoundTripTests {
  let key = GroupKey.generate()

  /// The initiator's LINK comes right after its MEMBERS, before the
  /// responder has said anything: the test, as the responder, reads both
  /// without sending a byte after M2.
  @Test func theInitiatorSendsLinkWithItsMembers() async throws {
    let a = try HandoffTestAgent("alice", key: key)
    let b = try HandoffTestAgent("bob", key: key)
    let (ca, cb) = InMemoryMessageChannel.pair(maximumMessageSize: 512)
    let opening = Task { try await a.engine.openLink(over: ca, peerAddress: "addr-bob") }
    defer { opening.cancel() }
    var bob = try await SecureChannel.handshake(
      over: cb, initiator: false, keys: b.engine.keys, me: b.engine.me, peerLabel: "addr-alice",
      timeout: .seconds(20), maxNoteSize: 1 << 20)
    guard case .members(_, nil) = try await bob.receive() else {
      Issue.record("alice's first message is not MEMBERS without records")
      return
    }
    // A channel closed at the deadline ends the wait with an error.
    let closeBob: @Sendable () async -> Void = { await cb.close() }
    let second = try await Timers.shared.withDeadline(.seconds(10), onExpiry: closeBob) {
      try await bob.receive()
    }
    guard case .link(_, .entries(let root)) = second else {
      Issue.record("alice's second message is \(second.kind), not LINK with her root's entries")
      return
    }
    #expect(root.isEmpty)
    await cb.close()
  }

  /// Alice holds 20 notes, Bob none. Bob's LINK said so with his root, so
  /// Alice pushes all 20 without a GET_NODES: the test, as Bob, only reads.
  @Test func aPeerEmptyAtTheRootGetsPushesWithoutBeingAsked() async throws {
    let a = try HandoffTestAgent("alice", key: key)
    let b = try HandoffTestAgent("bob", key: key)
    for i in 0..<20 { await a.save(String(format: "n%02d.md", i), "N\(i)\n") }
    let (la, lb) = try await openLink(a, b)
    let running = Task { await a.engine.runLink(la) }
    var bob = lb.secure
    let closeBob: @Sendable () async -> Void = { await lb.close() }
    var pushed: Set<String> = []
    var asked: [HandoffMessage.Kind] = []
    try await Timers.shared.withDeadline(.seconds(10), onExpiry: closeBob) {
      while pushed.count < 20 {
        switch try await bob.receive() {
        case .note(let payload): pushed.insert(payload.path)
        case .members, .have, .gone, .moved, .ping: break
        case let other: asked.append(other.kind)
        }
      }
    }
    #expect(asked.isEmpty, "alice asked before pushing: \(asked)")
    #expect(pushed.count == 20)
    await lb.close()
    _ = await running.value
  }

  /// A root of children (more than four notes) starts the walk one level
  /// down: Bob holds the same 20 notes but one in other words, so Alice
  /// asks only for nodes below the root, never for the root.
  @Test func theWalkStartsBelowThePeersRoot() async throws {
    let a = try HandoffTestAgent("alice", key: key)
    let b = try HandoffTestAgent("bob", key: key)
    for i in 0..<20 {
      let path = String(format: "n%02d.md", i)
      await a.save(path, "N\(i)\n")
      await b.save(path, i == 0 ? "Other\n" : "N\(i)\n")
    }
    let (la, lb) = try await openLink(a, b)
    let running = Task { await a.engine.runLink(la) }
    var bob = lb.secure
    let closeBob: @Sendable () async -> Void = { await lb.close() }
    let asked = try await Timers.shared.withDeadline(.seconds(10), onExpiry: closeBob) {
      () async throws -> [IndexReconciliation.Request] in
      while true {
        if case .getNodes(let requests) = try await bob.receive() { return requests }
      }
    }
    #expect(!asked.isEmpty && asked.allSatisfy { $0.depth >= 1 }, "\(asked)")
    await lb.close()
    _ = await running.value
  }
}
