import BatonSystem
import BatonTestSupport
import Synchronization
import Testing

@testable import BatonHandoff

/// Issue 30: a handshake message lost or damaged on the way is sent again
/// (PROTOCOL.md section 4, "Repeats"), so a fault costs a message, not the
/// session: each of M1, M2 and M3, lost or damaged once, and the session
/// still moves its note with no failure recorded on either side.
@Suite struct HandshakeRepeatTests {
  let key = GroupKey.generate()

  enum Fault: Sendable, CustomStringConvertible {
    case drop
    /// Flips a bit of this byte.
    case damage(Int)
    var description: String {
      switch self {
      case .drop: "lost"
      case .damage(let offset): "damaged at byte \(offset)"
      }
    }
  }

  /// Sends through `inner`, but loses or damages the `index`th message sent
  /// (from 1), once; counts what went out by first byte.
  final class FaultOnce: MessageChannel {
    let inner: any MessageChannel
    let index: Int
    let fault: Fault
    let sent = Mutex<[UInt8]>([])
    init(_ inner: any MessageChannel, message index: Int, fault: Fault) {
      self.inner = inner
      self.index = index
      self.fault = fault
    }
    var maximumMessageSize: Int { inner.maximumMessageSize }
    func send(_ message: [UInt8]) async throws {
      let n = sent.withLock {
        $0.append(message.first ?? 0)
        return $0.count
      }
      guard n == index else { return try await inner.send(message) }
      switch fault {
      case .drop: return
      case .damage(let offset):
        var m = message
        m[offset] ^= 0x01
        try await inner.send(m)
      }
    }
    func receive() async throws -> [UInt8]? { try await inner.receive() }
    func close() async { await inner.close() }
    /// How many messages starting with `type` went out.
    func count(_ type: UInt8) -> Int { sent.withLock { $0.filter { $0 == type }.count } }
  }

  /// (side that sends it: initiator?, its message number, fault, its type):
  /// M1 is the initiator's first, M2 the responder's first, M3 the
  /// initiator's second. A damaged M1 is answered with an M2 the initiator
  /// cannot open (its challenge is in M2's AD), so the initiator repeats M1
  /// and the responder answers that one afresh.
  static let cases: [(Bool, Int, Fault, UInt8)] = [
    (true, 1, .drop, 0x01), (true, 1, .damage(10), 0x01),
    (false, 1, .drop, 0x02), (false, 1, .damage(40), 0x02),
    (true, 2, .drop, 0x03), (true, 2, .damage(5), 0x03),
  ]

  @Test(arguments: cases)
  func aHandshakeMessageLostOrDamagedIsSentAgain(
    initiatorSide: Bool, message: Int, fault: Fault, type: UInt8
  ) async throws {
    let a = try HandoffTestAgent("alice", key: key)
    let b = try HandoffTestAgent("bob", key: key)
    await a.save("x.md", "x")
    let (i, r) = InMemoryMessageChannel.pair()
    let faulty = FaultOnce(initiatorSide ? i : r, message: message, fault: fault)
    let ic: any MessageChannel = initiatorSide ? faulty : i
    let rc: any MessageChannel = initiatorSide ? r : faulty
    async let one = Result(catching: {
      try await b.engine.runSession(over: ic, initiator: true, peerAddress: "a")
    })
    async let two = Result(catching: {
      try await a.engine.runSession(over: rc, initiator: false, peerAddress: "b")
    })
    let (x, y) = await (one, two)
    #expect(x.succeeded && y.succeeded, "M\(type) \(fault): \(x) \(y)")
    #expect(b.folder.paths == ["x.md"])
    #expect(await a.engine.status().failures.isEmpty)
    #expect(await b.engine.status().failures.isEmpty)
    // The message the fault hit went out again.
    #expect(faulty.count(type) >= 2, "M\(type) \(fault): sent \(faulty.count(type)) times")
  }

  /// The frame layer of an initiator answers a repeated M2 with M3 again,
  /// at most as often as repeats are allowed, and drops any other
  /// handshake message; none of them counts as a damaged frame.
  @Test func theFrameLayerAnswersARepeatedM2WithM3() {
    let m2: [UInt8] = [0x02, SecureChannel.handshakeVersion] + [UInt8](repeating: 0xaa, count: 100)
    let m3: [UInt8] = [0x03] + [UInt8](repeating: 0xbb, count: 80)
    let key = [UInt8](repeating: 1, count: 32)
    var machine = FrameRecovery(
      sendKey: key, receiveKey: key, messageSize: 512, handshakeAnswer: (m2, m3))
    let report = FlowReport(framesSent: 0, creditsGranted: 0)
    var answers = 0
    for _ in 0..<(HandshakeRepeater.limit + 2) {
      let actions = machine.receive(m2, report: report, now: .now)
      #expect(actions.failure == nil && actions.resend.isEmpty && actions.deliver.isEmpty)
      answers += actions.transmit.filter { $0 == m3 }.count
    }
    #expect(answers == HandshakeRepeater.limit)
    let strays: [[UInt8]] = [[0x01] + [UInt8](repeating: 0, count: 33), [0x03, 1, 2], Array(m2.dropLast())]
    for stray in strays {
      let actions = machine.receive(stray, report: report, now: .now)
      #expect(actions.transmit.isEmpty && actions.failure == nil)
    }
    #expect(machine.counts.dropped == 0)
  }
}
