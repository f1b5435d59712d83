import BatonSystem

@testable import BatonHandoff

/// The bounds on connections kept as the radio keeps them (`AgentRadio`),
/// for tests of engines without a radio: a `ConnectionMemory` asked with the
/// engine's beacon and published digest, and told how each session ended
/// (`runSession` tells it; a test that runs the engine's own calls does).
/// Whether an address is a known peer is the engine's answer here; on the
/// radio the peer scheduler keeps it.
final class RadioBounds: Sendable {
  let engine: HandoffEngine
  let memory: LockedBox<ConnectionMemory>

  init(_ engine: HandoffEngine) {
    self.engine = engine
    memory = LockedBox(ConnectionMemory(policy: engine.policy))
  }

  /// Whether the radio would connect to `address` for a session on `beacon`.
  func shouldConnect(beacon: [UInt8], from address: String) async -> Bool {
    await allows(beacon, from: address, forLink: false)
  }

  /// Whether the radio would connect to `address` for a link on `beacon`.
  func shouldLink(beacon: [UInt8], from address: String) async -> Bool {
    await allows(beacon, from: address, forLink: true)
  }

  private func allows(_ beacon: [UInt8], from address: String, forLink: Bool) async -> Bool {
    guard let content = engine.openBeacon(beacon, from: address) else { return false }
    let known = await isKnown(address)
    let mine = engine.currentIndexDigest
    return memory.mutex.withLock {
      forLink
        ? $0.mayLink(for: content, from: address, mine: mine, addressIsKnown: known, now: .now)
        : $0.mayConnect(for: content, from: address, mine: mine, addressIsKnown: known, now: .now)
    }
  }

  /// A session (its summary) or a link (nil) at `address` ended so.
  func ended(at address: String, _ outcome: Result<SessionSummary?, any Error>) {
    memory.mutex.withLock { $0.ended(at: address, outcome, now: .now) }
  }

  var heldBack: [String: ContinuousClock.Instant] { memory.mutex.withLock { $0.heldBack } }

  private func isKnown(_ address: String) async -> Bool {
    guard let bytes = littleEndianBytes(printedAddress: address) else { return false }
    return await engine.peerName(resolving: bytes) != nil
  }
}
