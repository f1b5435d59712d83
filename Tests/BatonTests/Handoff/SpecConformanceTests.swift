import Foundation
import Testing

@testable import BatonHandoff
@testable import BatonSystem

/// Where an independent implementation of PROTOCOL.md found the agent
/// parting from the spec (issue 31).
@Suite struct SpecConformanceTests {
  let key = GroupKey.generate()

  /// Section 3, "Replays": link attempts for the same beacon content and
  /// address count as retries, as sessions do (2, 5, 10 s, then
  /// `retryInterval`), and a session after failed links goes on with the
  /// same count instead of starting afresh.
  @Test func linkAttemptsCountAsRetries() async throws {
    var policy = HandoffPolicy(retryInterval: .seconds(3600))
    policy.firstRetryDelays = [.zero, .zero]
    let a = try HandoffTestAgent("alice", key: key)
    let b = try HandoffTestAgent("bob", key: key, policy: policy)
    await a.save("s.md", "s")
    let beacon = await a.engine.currentBeacon()
    // The first two retries wait nothing here; after the third attempt
    // the next waits `retryInterval`, on either path.
    #expect(await b.engine.shouldLink(beacon: beacon, from: "A"))
    #expect(await b.engine.shouldLink(beacon: beacon, from: "A"))
    #expect(await b.engine.shouldConnect(beacon: beacon, from: "A"))
    #expect(await !b.engine.shouldLink(beacon: beacon, from: "A"))
    #expect(await !b.engine.shouldConnect(beacon: beacon, from: "A"))
  }

  /// Section 3, "Replays": a link whose handshake failed holds the address
  /// back for `retryInterval` on the session path too, and the same beacon
  /// from fresh addresses gets no connection on either path meanwhile.
  @Test func failedLinkHandshakeHoldsBackBothPaths() async throws {
    let a = try HandoffTestAgent("alice", key: key)
    let b = try HandoffTestAgent("bob", key: key)
    let mallory = try HandoffTestAgent("mallory", key: GroupKey.generate())
    await a.save("s.md", "s")
    let captured = await a.engine.currentBeacon()
    #expect(await b.engine.shouldLink(beacon: captured, from: "M1"))
    let (bobEnd, malloryEnd) = InMemoryMessageChannel.pair()
    async let refused = try? mallory.engine.respond(over: malloryEnd, peerAddress: "B")
    let link = try? await b.engine.openLink(over: bobEnd, peerAddress: "M1")
    _ = await refused
    #expect(link == nil)
    for address in ["M1", "M2", "M3"] {
      #expect(await !b.engine.shouldLink(beacon: captured, from: address), "\(address)")
      #expect(await !b.engine.shouldConnect(beacon: captured, from: address), "\(address)")
    }
  }
}
