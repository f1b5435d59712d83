import BatonSystem
import Synchronization

/// The frame layer over a channel after the handshake: drives
/// `FrameRecovery` with what arrives, what the layer above sends and the
/// time, so that the layer above sees every plaintext once and in order
/// while faults below cost frames sent again (PROTOCOL.md section 5).
///
/// `send` and `receive` may run at once (a link's sender and reader); the
/// frames the machine asks for on its own (acknowledgements, requests,
/// frames sent again) go out from a short-lived task that drains a queue,
/// never from `receive`, which must not wait for the peer's credits while
/// the peer may be waiting for ours. A timer task runs only while the
/// machine waits for a time (an acknowledgement due, frames unacknowledged):
/// an idle channel has none.
final class FrameChannel: MessageChannel {
  let inner: any MessageChannel
  private let peerLabel: String
  private let log = Logger(label: "frames")

  private struct State {
    var machine: FrameRecovery
    /// Plaintexts that arrived, not yet returned by `receive`.
    var delivered: [[UInt8]] = []
    var queue: [[UInt8]] = []
    var draining = false
    var timer: ContinuousClock.Instant?
    var failure: String?
    var closed = false
  }
  private let state: Mutex<State>

  /// `handshakeAnswer`: the initiator's M2 and M3, so that a repeated M2
  /// (the responder did not get M3) is answered with M3 again.
  init(
    _ inner: any MessageChannel, sendKey: [UInt8], receiveKey: [UInt8], peerLabel: String,
    handshakeAnswer: (question: [UInt8], answer: [UInt8])? = nil
  ) {
    self.inner = inner
    self.peerLabel = peerLabel
    state = Mutex(
      State(
        machine: FrameRecovery(
          sendKey: sendKey, receiveKey: receiveKey, messageSize: inner.preferredMessageSize,
          handshakeAnswer: handshakeAnswer)))
    inner.tolerateLoss()
  }

  /// The session keys go with the channel (`FrameRecovery.forgetKeys`).
  deinit {
    state.withLock { $0.machine.forgetKeys() }
  }

  /// The largest plaintext `send` takes now: smaller after a fault.
  var maximumMessageSize: Int { state.withLock { $0.machine.payloadSize } }
  var closedByPeer: Bool { inner.closedByPeer }
  /// Counts of frames dropped, sent again and asked for again.
  var counts: FrameRecovery.Counts { state.withLock { $0.machine.counts } }

  private var report: FlowReport { inner.flowReport ?? FlowReport(framesSent: 0, creditsGranted: 0) }

  func send(_ plaintext: [UInt8]) async throws {
    enum Outcome {
      case frame([UInt8])
      case closed
      case failed
    }
    let report = self.report
    let outcome = state.withLock { s -> Outcome in
      if s.failure != nil { return .failed }
      // Closed (by us, or the peer ended it): not the peer's fault.
      if s.closed { return .closed }
      guard let frame = s.machine.sealData(plaintext, report: report, now: .now) else {
        s.failure =
          "it acknowledged nothing of more than \(FrameRecovery.maxUnacknowledgedBytes >> 20) MiB sent"
        return .failed
      }
      return .frame(frame)
    }
    switch outcome {
    case .frame(let frame):
      armTimer()
      try await inner.send(frame)
    case .closed:
      throw HandoffError.channelClosed(peer: peerLabel)
    case .failed:
      throw await failed()
    }
  }

  func receive() async throws -> [UInt8]? {
    while true {
      let ready = state.withLock { s -> [UInt8]?? in
        if !s.delivered.isEmpty { return .some(s.delivered.removeFirst()) }
        if s.failure != nil { return .some(nil) }
        return nil
      }
      if let ready {
        guard let plaintext = ready else { throw await failed() }
        return plaintext
      }
      guard let frame = try await inner.receive() else {
        let failure = state.withLock { s -> String? in
          s.closed = true
          return s.failure
        }
        if failure != nil { throw await failed() }
        return nil
      }
      let report = self.report
      let actions = state.withLock { s -> FrameRecovery.Actions in
        let actions = s.machine.receive(frame, report: report, now: .now)
        s.delivered += actions.deliver
        if let failure = actions.failure { s.failure = failure }
        return actions
      }
      if let peer = actions.peerReport { inner.repairFlow(peer: peer) }
      if actions.starved { inner.grantSpare() }
      carryOut(actions)
    }
  }

  func close() async {
    state.withLock { $0.closed = true }
    await inner.close()
  }

  /// Closes the channel and says why the machine gave up.
  private func failed() async -> HandoffError {
    let reason = state.withLock { $0.failure } ?? "the channel failed"
    await close()
    return HandoffError.protocolViolation(peer: peerLabel, reason: reason)
  }

  private func carryOut(_ actions: FrameRecovery.Actions) {
    if !actions.resend.isEmpty {
      log.debug("\(peerLabel): sending \(actions.resend.count) frames or parts again")
    }
    let start = state.withLock { s -> Bool in
      s.queue += actions.transmit
      // Frames sent again wait behind those already queued; while many
      // wait (the peer's flow control holds them), more would only repeat.
      if s.queue.count < 64 { s.queue += actions.resend }
      guard !s.queue.isEmpty, !s.draining, !s.closed else { return false }
      s.draining = true
      return true
    }
    if start { Task { await self.drain() } }
    armTimer()
  }

  /// Sends what the machine asked for, then ends.
  private func drain() async {
    while true {
      let next = state.withLock { s -> [UInt8]? in
        guard !s.queue.isEmpty, !s.closed else {
          s.draining = false
          s.queue.removeAll()
          return nil
        }
        return s.queue.removeFirst()
      }
      guard let next else { return }
      do {
        try await inner.send(next)
      } catch {
        // The channel is closed or failed: nothing more goes out.
        state.withLock {
          $0.draining = false
          $0.queue.removeAll()
          $0.closed = true
        }
        return
      }
    }
  }

  /// Starts a timer task for the machine's deadline if none runs for it.
  private func armTimer() {
    let deadline = state.withLock { s -> ContinuousClock.Instant? in
      guard !s.closed, s.failure == nil, let deadline = s.machine.deadline else { return nil }
      if let timer = s.timer, timer <= deadline { return nil }
      s.timer = deadline
      return deadline
    }
    guard let deadline else { return }
    Task { [weak self] in
      try? await Timers.shared.sleep(until: deadline)
      self?.expire(deadline)
    }
  }

  private func expire(_ deadline: ContinuousClock.Instant) {
    let canSend = !inner.sendWouldWait
    let report = self.report
    let actions = state.withLock { s -> FrameRecovery.Actions? in
      guard s.timer == deadline else { return nil }
      s.timer = nil
      guard !s.closed, s.failure == nil else { return nil }
      let actions = s.machine.expire(report: report, canSend: canSend, now: .now)
      if let failure = actions.failure { s.failure = failure }
      return actions
    }
    guard let actions else {
      armTimer()
      return
    }
    if actions.failure != nil {
      log.warning("\(peerLabel): \(actions.failure!); closing the channel")
      Task { await self.inner.close() }
      return
    }
    if actions.starved { inner.grantSpare() }
    carryOut(actions)
  }
}
