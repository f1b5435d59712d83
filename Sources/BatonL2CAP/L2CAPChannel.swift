import BatonHCI
import BatonSystem
import Synchronization

/// An L2CAP LE credit-based channel (Core spec Vol 3 Part A 10.2): one
/// message per SDU, segmented into K-frames of at most the peer's MPS, one
/// credit per K-frame. Conforms to `MessageChannel`, the seam the handoff
/// layer uses.
///
/// Flow control: the peer starts with `initialCredits`; we grant credits back
/// in batches of half that, but only while fewer than `inboxLimit` whole
/// messages wait unread, so a slow reader stops the sender. A K-frame with no
/// credit, longer than our MPS, or making an SDU longer than announced or
/// than our MTU closes the channel (the spec's answer to a misbehaving peer).
public final class L2CAPChannel: MessageChannel, Sendable, CustomStringConvertible {
  public let psm: UInt16
  public let localCID: UInt16
  public let remoteCID: UInt16
  /// Our receive limits.
  public let localMTU: Int
  public let localMPS: Int
  /// The peer's receive limits.
  public let remoteMTU: Int
  public let remoteMPS: Int
  let initialCredits: Int
  static let inboxLimit = 16

  private let link: L2CAPLink
  private let sendCredits: AsyncGate
  private let sendLock = AsyncGate(count: 1)
  private let log = Logger(label: "l2cap")

  private struct State {
    var inbox: [[UInt8]] = []
    var receivers: [CheckedContinuation<[UInt8]?, Never>] = []
    var sdu: [UInt8]?
    var sduLength = 0
    var creditsGiven: Int
    var pendingGrant = 0
    var peerCredits: Int
    var closed: String?
  }
  private let state: Mutex<State>

  init(
    link: L2CAPLink, psm: UInt16, localCID: UInt16, remoteCID: UInt16, localMTU: Int, localMPS: Int,
    remoteMTU: Int, remoteMPS: Int, initialCredits: Int, peerCredits: Int
  ) {
    self.link = link
    self.psm = psm
    self.localCID = localCID
    self.remoteCID = remoteCID
    self.localMTU = localMTU
    self.localMPS = localMPS
    self.remoteMTU = remoteMTU
    self.remoteMPS = remoteMPS
    self.initialCredits = initialCredits
    sendCredits = AsyncGate(count: peerCredits)
    state = Mutex(State(creditsGiven: initialCredits, peerCredits: peerCredits))
  }

  public var description: String {
    "L2CAP channel psm 0x\(hex(psm)) cid 0x\(hex(localCID))->0x\(hex(remoteCID)) on \(link.connectionDescription)"
  }

  /// The largest message `send` takes: the peer's MTU.
  public var maximumMessageSize: Int { remoteMTU }

  /// The address of the peer at the other end.
  public var peerAddress: BluetoothAddress { link.peerAddress }

  /// Whether the channel is closed.
  public var isClosed: Bool { state.withLock { $0.closed != nil } }

  /// Sends one message as one SDU; suspends while the peer has given no credit.
  public func send(_ message: [UInt8]) async throws {
    guard message.count <= remoteMTU else {
      throw L2CAPError.messageTooLong(size: message.count, mtu: remoteMTU)
    }
    try await sendLock.acquire()
    defer { sendLock.release() }
    // Frame size: at most the peer's MPS; when possible a size whose PDU fills
    // whole ACL buffers, so no fragment is sent half empty.
    let frameSize = link.bestFrameSize(remoteMPS: remoteMPS)
    var offset = 0
    var first = true
    repeat {
      var frame: [UInt8] = []
      let room = first ? frameSize - 2 : frameSize
      if first { frame.appendLE(UInt16(message.count)) }
      let end = min(message.count, offset + room)
      frame += message[offset..<end]
      offset = end
      first = false
      try await sendCredits.acquire()
      if let reason = state.withLock({ $0.closed }) {
        throw L2CAPError.channelClosed(psm: psm, reason: reason)
      }
      state.withLock { $0.peerCredits -= 1 }
      try link.sendFrame(cid: remoteCID, payload: frame)
    } while offset < message.count
  }

  /// The next whole message; nil once the channel is closed and drained.
  public func receive() async throws -> [UInt8]? {
    let message = await withCheckedContinuation {
      (continuation: CheckedContinuation<[UInt8]?, Never>) in
      let now: [UInt8]?? = state.withLock { s in
        if !s.inbox.isEmpty { return .some(s.inbox.removeFirst()) }
        if s.closed != nil { return .some(nil) }
        s.receivers.append(continuation)
        return nil
      }
      if let now { continuation.resume(returning: now) }
    }
    grantIfDue()
    return message
  }

  /// Disconnects the channel (Disconnection Request, waiting briefly for the
  /// response). Idempotent.
  public func close() async {
    guard markClosed("closed locally") else { return }
    await link.disconnectChannel(self)
  }

  // MARK: - From the link (reader thread)

  /// Handles one K-frame payload.
  func receiveFrame(_ payload: [UInt8]) {
    enum Outcome {
      case none
      case deliver([UInt8], CheckedContinuation<[UInt8]?, Never>?)
      case violation(String)
    }
    let outcome = state.withLock { s -> Outcome in
      guard s.closed == nil else { return .none }
      guard s.creditsGiven > 0 else { return .violation("K-frame received with no credit") }
      s.creditsGiven -= 1
      s.pendingGrant += 1
      guard payload.count <= localMPS else {
        return .violation("K-frame of \(payload.count) bytes exceeds our MPS \(localMPS)")
      }
      if s.sdu == nil {
        guard payload.count >= 2 else { return .violation("first K-frame has no SDU length") }
        s.sduLength = Int(payload[0]) | Int(payload[1]) << 8
        guard s.sduLength <= localMTU else {
          return .violation("SDU length \(s.sduLength) exceeds our MTU \(localMTU)")
        }
        s.sdu = Array(payload[2...])
      } else {
        s.sdu! += payload
      }
      let count = s.sdu!.count
      if count > s.sduLength {
        return .violation("SDU of \(count) bytes, longer than the announced \(s.sduLength)")
      }
      guard count == s.sduLength else { return .none }
      let sdu = s.sdu!
      s.sdu = nil
      if !s.receivers.isEmpty { return .deliver(sdu, s.receivers.removeFirst()) }
      s.inbox.append(sdu)
      return .deliver(sdu, nil)
    }
    switch outcome {
    case .none: break
    case .deliver(let sdu, let receiver): receiver?.resume(returning: sdu)
    case .violation(let reason):
      log.warning("\(self): \(reason); disconnecting the channel")
      if markClosed("protocol violation: \(reason)") {
        Task { await link.disconnectChannel(self) }
      }
      return
    }
    grantIfDue()
  }

  /// Credits from the peer.
  func addCredits(_ n: Int) {
    let overflow = state.withLock { s -> Bool in
      s.peerCredits += n
      return s.peerCredits > 65535
    }
    if overflow {
      log.warning("\(self): credit count above 65535; disconnecting the channel")
      if markClosed("protocol violation: credit overflow") {
        Task { await link.disconnectChannel(self) }
      }
      return
    }
    sendCredits.release(n)
  }

  /// Marks the channel closed; returns false if it already was. Wakes readers
  /// (nil after the inbox drains) and senders (error).
  @discardableResult
  func markClosed(_ reason: String) -> Bool {
    let receivers = state.withLock { s -> [CheckedContinuation<[UInt8]?, Never>]? in
      guard s.closed == nil else { return nil }
      s.closed = reason
      defer { s.receivers.removeAll() }
      return s.receivers
    }
    guard let receivers else { return false }
    log.info("\(self): \(reason)")
    for receiver in receivers { receiver.resume(returning: nil) }
    sendCredits.fail(L2CAPError.channelClosed(psm: psm, reason: reason))
    return true
  }

  private func grantIfDue() {
    let grant = state.withLock { s -> Int in
      guard s.closed == nil, s.pendingGrant >= max(1, initialCredits / 2),
        s.inbox.count < L2CAPChannel.inboxLimit
      else { return 0 }
      defer { s.pendingGrant = 0 }
      s.creditsGiven += s.pendingGrant
      return s.pendingGrant
    }
    if grant > 0 { link.sendCredits(cid: localCID, credits: UInt16(grant)) }
  }
}
