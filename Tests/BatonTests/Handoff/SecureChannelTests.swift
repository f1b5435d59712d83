import Synchronization
import Testing

@testable import BatonHandoff
@testable import BatonSystem

/// Wraps a channel and records every message sent through it.
final class RecordingChannel: MessageChannel {
  let inner: any MessageChannel
  let sent = Mutex<[[UInt8]]>([])
  init(_ inner: any MessageChannel) { self.inner = inner }
  var maximumMessageSize: Int { inner.maximumMessageSize }
  func send(_ message: [UInt8]) async throws {
    sent.withLock { $0.append(message) }
    try await inner.send(message)
  }
  func receive() async throws -> [UInt8]? { try await inner.receive() }
  func close() async { await inner.close() }
}

@Suite struct SecureChannelTests {
  let key = GroupKey.generate()

  @Test func recordedSessionReplayedToTheResponderFailsAuthentication() async throws {
    let a = try HandoffTestAgent("alice", key: key)
    let b = try HandoffTestAgent("bob", key: key)
    await a.save("x.md", "x")
    let (i, r) = InMemoryMessageChannel.pair()
    let recorder = RecordingChannel(i)
    async let one = b.engine.runSession(over: recorder, initiator: true, peerAddress: "a")
    async let two = a.engine.runSession(over: r, initiator: false, peerAddress: "b")
    _ = try await (one, two)
    let recorded = recorder.sent.withLock { $0 }
    #expect(recorded.count >= 4)

    // Replay bob's side of the session to alice: she sends a fresh challenge, so
    // bob's old M3 does not verify and she serves nothing.
    let (attacker, victim) = InMemoryMessageChannel.pair()
    async let session = Result(catching: {
      try await a.engine.runSession(over: victim, initiator: false, peerAddress: "replayer")
    })
    var answered: [[UInt8]] = []
    for message in recorded {
      try? await attacker.send(message)
      if let reply = try await attacker.receive() { answered.append(reply) }
    }
    let result = await session
    guard case .failure(let error) = result else {
      Issue.record("replayed session succeeded")
      return
    }
    #expect("\(error)".contains("authentication"))
    #expect(answered.count == 1)  // only M2, which is useless without the key
  }

  @Test func garbageInsteadOfAHandshakeIsRejected() async throws {
    let a = try HandoffTestAgent("alice", key: key)
    let validHello = SecureChannel.makeHello(challenge: HandoffCrypto.random(32))
    for garbage in [
      [UInt8](), [1, 1], HandoffCrypto.random(34), [0x01, 0x02] + HandoffCrypto.random(32),
      validHello,
    ] {
      let (attacker, victim) = InMemoryMessageChannel.pair()
      async let session = Result(catching: {
        try await a.engine.runSession(over: victim, initiator: false, peerAddress: "x")
      })
      try await attacker.send(garbage)
      _ = try await attacker.receive()  // M2 or the close
      try? await attacker.send(HandoffCrypto.random(120))
      let result = await session
      #expect(throws: HandoffError.self) { try result.get() }
    }
  }

  @Test func tamperedFrameEndsTheSession() async throws {
    let a = try HandoffTestAgent("alice", key: key)
    let b = try HandoffTestAgent("bob", key: key)
    await a.save("x.md", "x")
    // A channel that flips a bit in the 4th message bob sends (the first sealed frame).
    final class Flipper: MessageChannel {
      let inner: any MessageChannel
      let count = Mutex(0)
      init(_ inner: any MessageChannel) { self.inner = inner }
      var maximumMessageSize: Int { inner.maximumMessageSize }
      func send(_ message: [UInt8]) async throws {
        var m = message
        if count.withLock({
          $0 += 1
          return $0
        }) == 3 {
          m[m.count - 1] ^= 0x80
        }
        try await inner.send(m)
      }
      func receive() async throws -> [UInt8]? { try await inner.receive() }
      func close() async { await inner.close() }
    }
    let (i, r) = InMemoryMessageChannel.pair()
    async let one = Result(catching: {
      try await b.engine.runSession(over: Flipper(i), initiator: true, peerAddress: "a")
    })
    async let two = Result(catching: {
      try await a.engine.runSession(over: r, initiator: false, peerAddress: "b")
    })
    let (x, y) = await (one, two)
    #expect(!x.succeeded && !y.succeeded)
    #expect(b.folder.paths.isEmpty)
    #expect(await a.engine.status().failures.first?.reason.contains("does not verify") == true)
  }

  @Test func tooSmallChannelIsRefused() async throws {
    let a = try HandoffTestAgent("alice", key: key)
    let (i, _) = InMemoryMessageChannel.pair(maximumMessageSize: 100)
    await #expect(throws: HandoffError.channelTooSmall(size: 100)) {
      try await a.engine.runSession(over: i, initiator: true, peerAddress: "x")
    }
  }
}

extension Result where Failure == any Error {
  init(catching body: () async throws -> Success) async {
    do { self = .success(try await body()) } catch { self = .failure(error) }
  }
}
