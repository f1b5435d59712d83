import BatonHCI
import BatonRadio
import BatonSystem
import Synchronization

/// An L2CAP LE credit-based channel (Core spec Vol 3 Part A 10.2): one
/// message per SDU, segmented into K-frames of at most the peer's MPS, one
/// credit per K-frame. Conforms to `MessageChannel`, the seam the handoff
/// layer uses.
///
/// Flow control: the peer starts with `initialCredits`; we grant credits back
/// in batches of half that, and all that are due whenever an SDU is complete,
/// but only while fewer than `inboxLimit` whole messages wait unread, so a
/// slow reader stops the sender. A K-frame with no credit closes the
/// channel (the spec's answer to a misbehaving peer); so does one longer
/// than our MPS, or making an SDU longer than announced or than our MTU,
/// until the layer above recovers lost messages (`tolerateLoss`): from then
/// on such a frame, and an SDU that data lost below L2CAP broke, is dropped
/// (a damaged packet, where the HCI transport has no CRC), and the credits
/// it cost are made good from the peer's `FlowReport` (`repairFlow`).
///
/// Stalls: a credit-based channel cannot recover a lost K-frame or a lost
/// credit grant, and both sides would then wait for each other for ever. So
/// the channel fails when the peer owes it something and nothing has been
/// heard from it (a frame or credits) for `stallTimeout` since it last sent
/// or began to wait: an SDU begun and not finished, a send waiting for
/// credits, or a receive waiting while frames we sent were never credited
/// back (our own peers credit every SDU at once). Data lost below L2CAP
/// fails the channel at once (`L2CAPLink.dataLost`) until `tolerateLoss`;
/// from then on an SDU whose rest never came is dropped when the next one
/// begins, not waited for.
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
  /// The credits the peer gave us at the start.
  let initialPeerCredits: Int
  static let inboxLimit = 16
  /// How long the peer may stay silent while it owes us something.
  package static let stallTimeout: Duration = .seconds(4)

  private let link: L2CAPLink
  private let sendCredits: AsyncGate
  private let sendLock = AsyncGate(count: 1)
  private let log = Logger(label: "l2cap")

  private struct State {
    /// Whole SDUs not yet read, each with the count of K-frames received
    /// before its first.
    var inbox: [(sdu: [UInt8], before: UInt32)] = []
    var receivers: [CheckedContinuation<[UInt8]?, Never>] = []
    var sdu: [UInt8]?
    var sduLength = 0
    var sduBefore: UInt32 = 0
    /// K-frames received on the channel (damaged ones too), and K-frames of
    /// the peer's that never arrived, as its flow reports showed.
    var framesReceived: UInt32 = 0
    var framesRepaired: UInt32 = 0
    /// `before` of the SDU `receive` returned last.
    var lastBefore: UInt32 = 0
    /// K-frames we sent; credits we granted (once their signal was sent)
    /// and received, the initial ones included.
    var framesSent: UInt32 = 0
    var creditsGranted: UInt32
    var creditsReceived: UInt32
    /// Faults below drop what they hit instead of failing the channel.
    var tolerant = false
    /// Credit grants ignored as damaged (`addCredits`), and K-frames taken
    /// with no credit left (`receiveFrame`), once loss is tolerated.
    var damagedGrants = 0
    var framesBeyondCredit = 0
    var creditsGiven: Int
    var pendingGrant = 0
    var peerCredits: Int
    var closed: String?
    /// The peer closed the channel (or its connection) itself.
    var closedByPeer = false
    /// When a frame or credits last came from the peer, or we last sent a
    /// frame or began to wait for one.
    var lastActivity = ContinuousClock.now
    /// Frames sent that the peer has not yet credited back.
    var unacknowledged = 0
    /// A send is under way.
    var sending = false
    /// A stall watchdog task is running.
    var watching = false

    /// Whether the peer owes us a frame or credits.
    var owed: (what: String, Bool) {
      // Once loss is tolerated, an SDU whose rest was lost is simply
      // overtaken by the next (`receiveFrame`).
      if sdu != nil && !tolerant { return ("the rest of an SDU", true) }
      if sending && peerCredits <= 0 { return ("credits to send", true) }
      if unacknowledged > 0 && !receivers.isEmpty {
        return ("credits for \(unacknowledged) frames sent", true)
      }
      return ("", false)
    }
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
    self.initialPeerCredits = peerCredits
    sendCredits = AsyncGate(count: peerCredits)
    state = Mutex(
      State(
        creditsGranted: UInt32(truncatingIfNeeded: initialCredits),
        creditsReceived: UInt32(truncatingIfNeeded: peerCredits),
        creditsGiven: initialCredits, peerCredits: peerCredits))
  }

  public var description: String {
    "L2CAP channel psm 0x\(hex(psm)) cid 0x\(hex(localCID))->0x\(hex(remoteCID)) on \(link.connectionDescription)"
  }

  /// The largest message `send` takes: the peer's MTU.
  public var maximumMessageSize: Int { remoteMTU }

  /// The largest message sent as one K-frame (which a fault below then
  /// costs alone), if that is at least the smallest size the layer above
  /// needs; else the MTU.
  public var preferredMessageSize: Int {
    let one = min(remoteMTU, link.bestFrameSize(remoteMPS: remoteMPS) - 2)
    return one >= 200 ? one : remoteMTU
  }

  public var flowReport: FlowReport? {
    state.withLock { FlowReport(framesSent: $0.framesSent, creditsGranted: $0.creditsGranted) }
  }

  public var sendWouldWait: Bool { state.withLock { $0.peerCredits <= 0 } }

  public func tolerateLoss() { state.withLock { $0.tolerant = true } }

  /// A quarter of the initial credits more, while the peer holds (by our
  /// count) less than twice the initial credits: a peer whose frames were
  /// lost spent credits we still count as its own, and its report of them
  /// cannot reach us while it has none.
  public func grantSpare() {
    let spare = state.withLock { s -> Bool in
      guard s.closed == nil, s.creditsGiven < 2 * initialCredits else { return false }
      s.pendingGrant += Self.spareGrant(initial: initialCredits)
      return true
    }
    if spare { grantIfDue() }
  }

  /// The peer's flow report, from the SDU `receive` returned last: its
  /// K-frames sent before that SDU that never reached us are credited back
  /// as if read, and credits it granted that never reached us are added.
  /// Both are bounded by the initial credits, whatever the report says.
  public func repairFlow(peer: FlowReport) {
    let (grant, added) = state.withLock { s -> (Int, Int) in
      guard s.closed == nil else { return (0, 0) }
      let missing = Int32(bitPattern: peer.framesSent &- (s.lastBefore &+ s.framesRepaired))
      var grant = 0
      if missing > 0 {
        let lost = min(Int(missing), initialCredits)
        s.framesRepaired &+= UInt32(lost)
        s.creditsGiven -= lost
        s.pendingGrant += lost
        grant = lost
      }
      let unheard = Int32(bitPattern: peer.creditsGranted &- s.creditsReceived)
      var added = 0
      if unheard > 0 {
        added = min(Int(unheard), max(1, initialPeerCredits))
        s.creditsReceived &+= UInt32(added)
        s.peerCredits += added
        s.unacknowledged = max(0, s.unacknowledged - added)
      }
      return (grant, added)
    }
    if grant > 0 || added > 0 {
      log.info(
        "\(self): the peer's report shows \(grant) of its frames and \(added) of its credits"
          + " lost below L2CAP; made good")
    }
    if added > 0 { sendCredits.release(added) }
    if grant > 0 { grantIfDue() }
  }

  /// The address of the peer at the other end.
  public var peerAddress: BluetoothAddress { link.peerAddress }

  /// Whether the channel is closed.
  public var isClosed: Bool { state.withLock { $0.closed != nil } }

  /// Whether the peer closed the channel: its Disconnection Request, or the
  /// end of the connection by the remote user (not a timeout or a fault).
  public var closedByPeer: Bool { state.withLock { $0.closedByPeer } }

  /// Sends one message as one SDU; suspends while the peer has given no credit.
  public func send(_ message: [UInt8]) async throws {
    guard message.count <= remoteMTU else {
      throw L2CAPError.messageTooLong(size: message.count, mtu: remoteMTU)
    }
    try await sendLock.acquire()
    state.withLock { $0.sending = true }
    defer {
      state.withLock { $0.sending = false }
      sendLock.release()
    }
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
      watchIfOwed()
      try await sendCredits.acquire()
      if let reason = state.withLock({ $0.closed }) {
        throw L2CAPError.channelClosed(psm: psm, reason: reason)
      }
      state.withLock {
        $0.peerCredits -= 1
        $0.unacknowledged += 1
        $0.lastActivity = .now
      }
      try link.sendFrame(cid: remoteCID, payload: frame)
      state.withLock { $0.framesSent &+= 1 }
    } while offset < message.count
  }

  /// The next whole message; nil once the channel is closed and drained.
  public func receive() async throws -> [UInt8]? {
    let message = await withCheckedContinuation {
      (continuation: CheckedContinuation<[UInt8]?, Never>) in
      let now: [UInt8]?? = state.withLock { s in
        if !s.inbox.isEmpty {
          let (sdu, before) = s.inbox.removeFirst()
          s.lastBefore = before
          return .some(sdu)
        }
        if s.closed != nil { return .some(nil) }
        s.receivers.append(continuation)
        s.lastActivity = .now
        return nil
      }
      if let now {
        continuation.resume(returning: now)
      } else {
        watchIfOwed()
      }
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
      case partial
      case deliver([UInt8], CheckedContinuation<[UInt8]?, Never>?)
      case violation(String)
      /// Damaged (`tolerant`): the SDU is dropped, its credits returned.
      case dropped(String)
    }
    var firstBeyondCredit = false
    let outcome = state.withLock { s -> Outcome in
      guard s.closed == nil else { return .none }
      s.lastActivity = .now
      if s.creditsGiven <= 0 {
        // A damaged grant below L2CAP that still looked plausible gave the
        // peer credits we never gave; once loss is tolerated that costs
        // nothing, within the most the peer can ever hold.
        guard s.tolerant, s.creditsGiven > -plausibleOwnGrant else {
          return .violation("K-frame received with no credit")
        }
        s.framesBeyondCredit += 1
        firstBeyondCredit = s.framesBeyondCredit == 1
      }
      s.creditsGiven -= 1
      s.pendingGrant += 1
      let before = s.framesReceived
      s.framesReceived &+= 1
      func broken(_ reason: String) -> Outcome {
        guard s.tolerant else { return .violation(reason) }
        s.sdu = nil
        return .dropped(reason)
      }
      guard payload.count <= localMPS else {
        return broken("K-frame of \(payload.count) bytes exceeds our MPS \(localMPS)")
      }
      if s.sdu != nil, s.tolerant, payload.count >= 2,
        Int(payload[0]) | Int(payload[1]) << 8 == payload.count - 2
      {
        // A whole SDU in one K-frame, where the rest of the one begun was
        // expected: that rest was lost below L2CAP (a continuation's first
        // two bytes match its length once in 65,536).
        s.sdu = nil
      }
      if s.sdu == nil {
        guard payload.count >= 2 else { return broken("first K-frame has no SDU length") }
        s.sduLength = Int(payload[0]) | Int(payload[1]) << 8
        guard s.sduLength <= localMTU else {
          return broken("SDU length \(s.sduLength) exceeds our MTU \(localMTU)")
        }
        s.sdu = Array(payload[2...])
        s.sduBefore = before
      } else {
        s.sdu! += payload
      }
      let count = s.sdu!.count
      if count > s.sduLength {
        return broken("SDU of \(count) bytes, longer than the announced \(s.sduLength)")
      }
      guard count == s.sduLength else { return .partial }
      let sdu = s.sdu!
      s.sdu = nil
      if !s.receivers.isEmpty {
        s.lastBefore = s.sduBefore
        return .deliver(sdu, s.receivers.removeFirst())
      }
      s.inbox.append((sdu, s.sduBefore))
      return .deliver(sdu, nil)
    }
    if firstBeyondCredit {
      log.info(
        "\(self): a K-frame beyond the credits we gave (a grant damaged below L2CAP?); taken,"
          + " as are any more within the most the peer can hold")
    }
    switch outcome {
    case .none: break
    case .partial: watchIfOwed()
    case .deliver(let sdu, let receiver): receiver?.resume(returning: sdu)
    case .dropped(let reason):
      log.info("\(self): \(reason) (damaged below L2CAP?); dropped it")
    case .violation(let reason):
      log.warning("\(self): \(reason); disconnecting the channel")
      if markClosed("protocol violation: \(reason)") {
        Task { await link.disconnectChannel(self) }
      }
      return
    }
    grantIfDue()
  }

  /// Data on the connection was lost below L2CAP: fails the channel, or,
  /// once the layer above recovers lost messages, drops the SDU begun (its
  /// rest may be what was lost); returns whether the channel went on.
  func dataLost(_ reason: String) -> Bool {
    let dropped = state.withLock { s -> Bool? in
      guard s.closed == nil else { return nil }
      guard s.tolerant else { return false }
      s.sdu = nil
      return true
    }
    guard let dropped else { return true }
    if !dropped {
      fail("ACL data lost on the connection: \(reason)")
      return false
    }
    grantIfDue()
    return true
  }

  /// The most credits one of our peers can have given us: its initial
  /// credits, then back what it read and what its reports showed lost, and
  /// spare grants while we held less than twice the initial credits by its
  /// count (`grantSpare`), a quarter of them each.
  var plausiblePeerCredits: Int { Self.mostHeld(initial: initialPeerCredits) }

  /// The same bound for the credits we give: a damaged grant can make the
  /// peer believe in at most that many more.
  var plausibleOwnGrant: Int { Self.mostHeld(initial: initialCredits) }

  /// One spare grant (`grantSpare`) on a channel whose receiver gave
  /// `initial` credits at the start.
  static func spareGrant(initial: Int) -> Int { max(1, initial / 4) }

  /// The most credits a sender can hold by its receiver's count: spare
  /// grants stop at twice the initial credits, so one more at most.
  static func mostHeld(initial: Int) -> Int { 2 * initial + spareGrant(initial: initial) }

  /// Credits from the peer. Once loss is tolerated, a grant that would give
  /// us more than `plausiblePeerCredits` is a signal damaged below L2CAP
  /// (the signalling channel has no integrity check, and a flipped bit in
  /// the count can be worth 32,768 credits): it is dropped like a lost one,
  /// which the peer's flow report makes good (`repairFlow`).
  func addCredits(_ n: Int) {
    enum Outcome { case closed, added, damaged(first: Bool), overflow }
    let outcome = state.withLock { s -> Outcome in
      guard s.closed == nil else { return .closed }
      if s.tolerant, s.peerCredits + n > plausiblePeerCredits {
        defer { s.damagedGrants += 1 }
        return .damaged(first: s.damagedGrants == 0)
      }
      s.peerCredits += n
      s.creditsReceived &+= UInt32(truncatingIfNeeded: n)
      s.unacknowledged = max(0, s.unacknowledged - n)
      s.lastActivity = .now
      return s.peerCredits > 65535 ? .overflow : .added
    }
    switch outcome {
    case .closed:
      break
    case .added:
      sendCredits.release(n)
    case .damaged(let first):
      if first {
        log.info(
          "\(self): a grant of \(n) credits, more than the peer can have given (damaged below"
            + " L2CAP?); ignored, as are any more like it, and the peer's flow report makes good a lost grant")
      }
    case .overflow:
      log.warning("\(self): credit count above 65535; disconnecting the channel")
      if markClosed("protocol violation: credit overflow") {
        Task { await link.disconnectChannel(self) }
      }
    }
  }

  /// Marks the channel closed; returns false if it already was. Wakes readers
  /// (nil after the inbox drains) and senders (error).
  @discardableResult
  func markClosed(_ reason: String, byPeer: Bool = false) -> Bool {
    let receivers = state.withLock { s -> [CheckedContinuation<[UInt8]?, Never>]? in
      guard s.closed == nil else { return nil }
      s.closed = reason
      s.closedByPeer = byPeer
      defer { s.receivers.removeAll() }
      return s.receivers
    }
    guard let receivers else { return false }
    log.info("\(self): \(reason)")
    for receiver in receivers { receiver.resume(returning: nil) }
    sendCredits.fail(L2CAPError.channelClosed(psm: psm, reason: reason))
    return true
  }

  /// Fails the channel for data lost below it, and disconnects it.
  func fail(_ reason: String) {
    if markClosed(reason) { Task { await link.disconnectChannel(self) } }
  }

  /// Starts the stall watchdog if the peer owes us something and none runs.
  private func watchIfOwed() {
    let start = state.withLock { s -> Bool in
      guard s.closed == nil, !s.watching, s.owed.1 else { return false }
      s.watching = true
      return true
    }
    if start { Task { await self.watch(L2CAPChannel.stallTimeout) } }
  }

  /// Sleeps until the peer has been silent for `timeout` while owing us
  /// something, then fails the channel; returns as soon as nothing is owed.
  private func watch(_ timeout: Duration) async {
    while true {
      let next = state.withLock { s -> (wait: Duration, what: String)? in
        guard s.closed == nil, s.owed.1 else {
          s.watching = false
          return nil
        }
        let quiet = ContinuousClock.now - s.lastActivity
        return (quiet >= timeout ? .zero : timeout - quiet, s.owed.what)
      }
      guard let next else { return }
      if next.wait == .zero {
        let reason =
          "stalled: nothing from the peer for \(timeout.wholeMilliseconds) ms"
          + " while waiting for \(next.what)"
        log.warning("\(self): \(reason); closing it")
        if markClosed(reason) { await link.channelStalled(self, after: timeout) }
        state.withLock { $0.watching = false }
        return
      }
      try? await Timers.shared.sleep(for: next.wait)
    }
  }

  private func grantIfDue() {
    let grant = state.withLock { s -> Int in
      // Mid-SDU in batches; between SDUs all that is due, so that the sender
      // sees every message acknowledged.
      guard s.closed == nil, s.pendingGrant > 0,
        s.pendingGrant >= max(1, initialCredits / 2) || s.sdu == nil || s.tolerant,
        s.inbox.count < L2CAPChannel.inboxLimit
      else { return 0 }
      defer { s.pendingGrant = 0 }
      s.creditsGiven += s.pendingGrant
      return s.pendingGrant
    }
    guard grant > 0 else { return }
    let credits = UInt16(clamping: grant)
    link.sendCredits(cid: localCID, credits: credits)
    // Counted once the signal is on its way, so that a flow report never
    // tells of a grant that a frame sent after it could overtake.
    state.withLock { $0.creditsGranted &+= UInt32(credits) }
  }
}
