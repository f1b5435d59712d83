import BatonHCI
import BatonRadio
import BatonSystem
import Synchronization

/// L2CAP on one LE connection: the LE signalling channel (CID 5), dispatch of
/// K-frames to credit-based channels, and minimal answers on the fixed ATT
/// and SMP channels (we offer neither, so requests get "not supported").
package final class L2CAPLink: Sendable {
  /// Our receive parameters for every channel. MPS 2048 makes a K-frame PDU
  /// of 2052 bytes, exactly 76 ACL fragments of 27 bytes.
  static let localMTU = 65535
  static let localMPS = 2048
  static let initialCredits = 64
  /// How long to wait for a signalling response (the spec's RTX is 1-60 s).
  static let responseTimeout: Duration = .seconds(5)

  let handle: UInt16
  /// The peer at the other end of the connection.
  let peerAddress: BluetoothAddress
  let connectionDescription: String
  private let controller: HCIController
  /// Who accepts channels on a PSM (the host's listeners); nil: refused.
  private let acceptor: @Sendable (UInt16) -> (@Sendable (L2CAPChannel) -> Void)?
  private let log = Logger(label: "l2cap")

  private struct State {
    var channels: [UInt16: L2CAPChannel] = [:]
    var pending: [UInt8: CheckedContinuation<L2CAPSignal.Body, any Error>] = [:]
    var nextIdentifier: UInt8 = 0
    /// CIDs handed out for a connection request still in flight.
    var reserved: Set<UInt16> = []
    /// Connection requests in flight: identifier -> (PSM, our CID).
    var opening: [UInt8: (psm: UInt16, cid: UInt16)] = [:]
    /// Channels registered on the reader thread as their response arrived
    /// (so that frames right behind the response find them).
    var opened: [UInt8: L2CAPChannel] = [:]
    var closed: String?
  }
  private let state = Mutex(State())

  package init(
    handle: UInt16, peerAddress: BluetoothAddress, description: String, controller: HCIController,
    acceptor: @escaping @Sendable (UInt16) -> (@Sendable (L2CAPChannel) -> Void)?
  ) {
    self.handle = handle
    self.peerAddress = peerAddress
    self.connectionDescription = description
    self.controller = controller
    self.acceptor = acceptor
  }

  // MARK: - Sending

  func sendFrame(cid: UInt16, payload: [UInt8]) throws {
    try controller.sendACL(handle: handle, pdu: L2CAPFrame.encode(cid: cid, payload: payload))
  }

  func sendSignal(_ signal: L2CAPSignal) {
    do {
      try sendFrame(cid: L2CAPFrame.signallingCID, payload: signal.encoded)
    } catch {
      log.debug("cannot send signalling command: \(error)")
    }
  }

  func sendCredits(cid: UInt16, credits: UInt16) {
    sendSignal(
      L2CAPSignal(
        identifier: nextIdentifier(), body: .flowControlCredit(cid: cid, credits: credits)))
  }

  /// The K-frame size to send: the largest at most `remoteMPS` whose PDU
  /// (4-byte header + frame) is a whole number of ACL buffers, if that is
  /// within 1/8 of `remoteMPS`; else `remoteMPS`.
  func bestFrameSize(remoteMPS: Int) -> Int {
    let length = controller.aclBuffers.length
    let whole = ((remoteMPS + 4) / length) * length - 4
    return whole >= remoteMPS - remoteMPS / 8 && whole >= 23 ? whole : remoteMPS
  }

  private func nextIdentifier() -> UInt8 {
    state.withLock { s in
      s.nextIdentifier = s.nextIdentifier == 255 ? 1 : s.nextIdentifier + 1
      return s.nextIdentifier
    }
  }

  /// Sends a request and waits for the response with the same identifier.
  private func request(
    _ body: L2CAPSignal.Body, what: String, identifier: UInt8? = nil
  ) async throws -> L2CAPSignal.Body {
    let identifier = identifier ?? nextIdentifier()
    let expire: @Sendable () async -> Void = { [weak self] in
      let waiter = self?.state.withLock { $0.pending.removeValue(forKey: identifier) }
      waiter?.resume(throwing: L2CAPError.timedOut(what))
    }
    return try await Timers.shared.withDeadline(L2CAPLink.responseTimeout, onExpiry: expire) {
      try await response(to: body, identifier: identifier)
    }
  }

  /// Sends a request and waits, without a bound, for its response.
  private func response(to body: L2CAPSignal.Body, identifier: UInt8) async throws
    -> L2CAPSignal.Body
  {
    try await withCheckedThrowingContinuation { continuation in
      let closed = state.withLock { s -> String? in
        if let reason = s.closed { return reason }
        s.pending[identifier] = continuation
        return nil
      }
      if let closed {
        continuation.resume(throwing: L2CAPError.channelClosed(psm: 0, reason: closed))
        return
      }
      sendSignal(L2CAPSignal(identifier: identifier, body: body))
    }
  }

  // MARK: - Channels

  /// Opens a credit-based channel to `psm` on the peer.
  package func openChannel(psm: UInt16) async throws -> L2CAPChannel {
    guard L2CAPFrame.dynamicPSMs.contains(psm) else { throw L2CAPError.invalidPSM(psm) }
    let cid = try allocateCID()
    let identifier = nextIdentifier()
    state.withLock { $0.opening[identifier] = (psm, cid) }
    let response: L2CAPSignal.Body
    do {
      response = try await request(
        .connectionRequest(
          psm: psm, sourceCID: cid, mtu: UInt16(L2CAPLink.localMTU),
          mps: UInt16(L2CAPLink.localMPS),
          credits: UInt16(L2CAPLink.initialCredits)), what: "connection request",
        identifier: identifier)
    } catch {
      state.withLock { s in
        s.opening[identifier] = nil
        s.reserved.remove(cid)
      }
      throw error
    }
    if let channel = state.withLock({ $0.opened.removeValue(forKey: identifier) }) {
      if channel.isClosed { throw L2CAPError.channelClosed(psm: psm, reason: "connection ended") }
      return channel
    }
    releaseCID(cid)
    switch response {
    case .connectionResponse(let dcid, let mtu, let mps, _, let result):
      guard result == L2CAPSignal.Result.success else {
        throw L2CAPError.connectionRefused(psm: psm, result: L2CAPSignal.Result.name(result))
      }
      sendSignal(
        L2CAPSignal(
          identifier: nextIdentifier(),
          body: .disconnectionRequest(destinationCID: dcid, sourceCID: cid)))
      throw L2CAPError.protocolViolation(
        "connection response with CID 0x\(hex(dcid)) MTU \(mtu) MPS \(mps)")
    case .commandReject(let reason, _):
      throw L2CAPError.connectionRefused(
        psm: psm, result: "command rejected (reason 0x\(hex(reason)))")
    default:
      throw L2CAPError.protocolViolation("unexpected answer to a connection request")
    }
  }

  /// On the reader thread: a successful connection response makes the channel.
  private func registerOpened(identifier: UInt8, _ body: L2CAPSignal.Body) {
    guard case .connectionResponse(let dcid, let mtu, let mps, let credits, let result) = body,
      result == L2CAPSignal.Result.success, L2CAPFrame.dynamicCIDs.contains(dcid), mtu >= 23,
      mps >= 23,
      mps <= 65533
    else { return }
    state.withLock { s in
      guard let (psm, cid) = s.opening.removeValue(forKey: identifier), s.closed == nil else {
        return
      }
      let channel = L2CAPChannel(
        link: self, psm: psm, localCID: cid, remoteCID: dcid, localMTU: L2CAPLink.localMTU,
        localMPS: L2CAPLink.localMPS, remoteMTU: Int(mtu), remoteMPS: Int(mps),
        initialCredits: L2CAPLink.initialCredits, peerCredits: Int(credits))
      s.reserved.remove(cid)
      s.channels[cid] = channel
      s.opened[identifier] = channel
      log.info("opened \(channel) (peer MTU \(mtu), MPS \(mps), credits \(credits))")
    }
  }

  private func allocateCID() throws -> UInt16 {
    try state.withLock { s throws(L2CAPError) in
      if let reason = s.closed { throw .channelClosed(psm: 0, reason: reason) }
      for cid in L2CAPFrame.dynamicCIDs where s.channels[cid] == nil && !s.reserved.contains(cid) {
        s.reserved.insert(cid)
        return cid
      }
      throw .noFreeChannelID
    }
  }

  private func releaseCID(_ cid: UInt16) { state.withLock { _ = $0.reserved.remove(cid) } }

  /// Sends a Disconnection Request for `channel` and waits for the answer.
  func disconnectChannel(_ channel: L2CAPChannel) async {
    let known = state.withLock { $0.channels[channel.localCID] === channel && $0.closed == nil }
    guard known else { return }
    _ = try? await request(
      .disconnectionRequest(destinationCID: channel.remoteCID, sourceCID: channel.localCID),
      what: "disconnection request")
    state.withLock { s in
      if s.channels[channel.localCID] === channel { s.channels[channel.localCID] = nil }
      s.reserved.remove(channel.localCID)
    }
  }

  /// ACL data on this connection was lost or garbled below L2CAP (a gap in
  /// reassembly, from `HCIController.onDataLoss`). Whichever channel it
  /// belonged to has lost part of an SDU or a credit grant. A channel whose
  /// user recovers lost messages (the frame layer after the handshake) drops
  /// the SDU begun and goes on; any other fails at once (and is
  /// disconnected), so that its user learns it in milliseconds rather than
  /// wait for data that will never come.
  package func dataLost(_ reason: String) {
    let channels = state.withLock { Array($0.channels.values) }
    guard !channels.isEmpty else { return }
    var failed = 0
    for channel in channels where !channel.dataLost(reason) { failed += 1 }
    if failed > 0 {
      log.warning("\(connectionDescription): ACL data lost (\(reason)); failed \(failed) channels")
    } else {
      log.info("\(connectionDescription): ACL data lost (\(reason)); its frames are sent again")
    }
  }

  /// A channel waited `L2CAPChannel.stallTimeout` for the peer with nothing
  /// heard. If the controller has also completed none of our packets on this
  /// connection for half as long (a live link completes some every
  /// connection interval), our data is stuck below L2CAP (packets or their
  /// completions lost, which the controller never returns while the
  /// connection lasts; our peer then never hears from us either): the whole
  /// connection is disconnected, which frees its buffers and ends the peer's
  /// wait too. Otherwise only the channel closes.
  func channelStalled(_ channel: L2CAPChannel, after timeout: Duration) async {
    if let stall = controller.aclStall(handle: handle), stall >= timeout / 2 {
      log.warning(
        "\(connectionDescription): the controller completed none of our packets for \(stall.wholeMilliseconds) ms; disconnecting"
      )
      _ = try? await controller.send(
        .disconnect(handle: handle, reason: .remoteUserTerminated), timeout: .seconds(1))
      return
    }
    await disconnectChannel(channel)
  }

  /// The connection ended: every channel closes, every request fails.
  /// `byPeer`: the peer ended it (not a timeout, a fault or this host).
  package func terminate(_ reason: String, byPeer: Bool = false) {
    let (channels, pending) = state.withLock {
      s -> ([L2CAPChannel], [CheckedContinuation<L2CAPSignal.Body, any Error>]) in
      s.closed = reason
      defer {
        s.channels.removeAll()
        s.pending.removeAll()
      }
      return (Array(s.channels.values), Array(s.pending.values))
    }
    for channel in channels { channel.markClosed(reason, byPeer: byPeer) }
    for continuation in pending {
      continuation.resume(throwing: L2CAPError.channelClosed(psm: 0, reason: reason))
    }
  }

  // MARK: - Receiving (reader thread)

  /// Handles one reassembled L2CAP PDU.
  package func receive(_ pdu: [UInt8]) {
    let frame: (cid: UInt16, payload: [UInt8])
    do {
      frame = try L2CAPFrame.decode(pdu)
    } catch {
      log.warning("\(connectionDescription): dropped \(error)")
      return
    }
    switch frame.cid {
    case L2CAPFrame.signallingCID:
      receiveSignal(frame.payload)
    case L2CAPFrame.attributeCID:
      answerAttributeProtocol(frame.payload)
    case L2CAPFrame.securityManagerCID:
      // Pairing Failed, reason 0x05 Pairing Not Supported.
      if let code = frame.payload.first, code == 0x01 || code == 0x0B {
        try? sendFrame(cid: L2CAPFrame.securityManagerCID, payload: [0x05, 0x05])
      }
    default:
      let channel = state.withLock { $0.channels[frame.cid] }
      if let channel {
        channel.receiveFrame(frame.payload)
      } else {
        log.debug("\(connectionDescription): frame for unknown CID 0x\(hex(frame.cid)) dropped")
      }
    }
  }

  private func answerAttributeProtocol(_ payload: [UInt8]) {
    guard let opcode = payload.first else { return }
    // Commands (bit 6) and notifications/indications/confirmations need no answer.
    let noAnswer: Set<UInt8> = [0x1B, 0x1D, 0x1E]
    guard opcode & 0x40 == 0, !noAnswer.contains(opcode), opcode != 0x01,
      opcode & 1 == 0 || opcode == 0x09
    else { return }
    // Error Response: Request Not Supported (0x06), handle 0.
    try? sendFrame(cid: L2CAPFrame.attributeCID, payload: [0x01, opcode, 0x00, 0x00, 0x06])
  }

  private func receiveSignal(_ payload: [UInt8]) {
    let signal: L2CAPSignal
    do {
      signal = try L2CAPSignal.decode(payload)
    } catch {
      log.warning("\(connectionDescription): \(error); answered with Command Reject")
      let identifier = payload.count >= 2 && payload[1] != 0 ? payload[1] : 1
      sendSignal(
        L2CAPSignal(
          identifier: identifier,
          body: .commandReject(reason: L2CAPSignal.rejectNotUnderstood, data: [])))
      return
    }
    let id = signal.identifier
    switch signal.body {
    case .connectionRequest(let psm, let scid, let mtu, let mps, let credits):
      acceptChannel(identifier: id, psm: psm, remoteCID: scid, mtu: mtu, mps: mps, credits: credits)
    case .disconnectionRequest(let dcid, let scid):
      let channel = state.withLock { s -> L2CAPChannel? in
        guard let channel = s.channels[dcid], channel.remoteCID == scid else { return nil }
        s.channels[dcid] = nil
        return channel
      }
      guard let channel else {
        sendSignal(
          L2CAPSignal(
            identifier: id,
            body: .commandReject(
              reason: L2CAPSignal.rejectInvalidCID,
              data: [UInt8(dcid & 0xFF), UInt8(dcid >> 8), UInt8(scid & 0xFF), UInt8(scid >> 8)])))
        return
      }
      sendSignal(
        L2CAPSignal(
          identifier: id, body: .disconnectionResponse(destinationCID: dcid, sourceCID: scid)))
      channel.markClosed("disconnected by the peer", byPeer: true)
    case .flowControlCredit(let cid, let credits):
      // The CID is the peer's (our remote CID).
      let channel = state.withLock { s in s.channels.values.first { $0.remoteCID == cid } }
      channel?.addCredits(Int(credits))
    case .connectionParameterUpdateRequest:
      // We keep the parameters the connection started with: rejected.
      sendSignal(
        L2CAPSignal(identifier: id, body: .connectionParameterUpdateResponse(result: 0x0001)))
    case .connectionResponse, .disconnectionResponse, .commandReject,
      .connectionParameterUpdateResponse:
      registerOpened(identifier: id, signal.body)
      let waiter = state.withLock { $0.pending.removeValue(forKey: id) }
      if let waiter {
        waiter.resume(returning: signal.body)
      } else {
        log.debug("\(connectionDescription): unexpected signalling response id \(id) ignored")
      }
    case .unknown(let code, _):
      log.info("\(connectionDescription): unknown signalling code 0x\(hex(code)); Command Reject")
      sendSignal(
        L2CAPSignal(
          identifier: id, body: .commandReject(reason: L2CAPSignal.rejectNotUnderstood, data: [])))
    }
  }

  private func acceptChannel(
    identifier: UInt8, psm: UInt16, remoteCID: UInt16, mtu: UInt16, mps: UInt16, credits: UInt16
  ) {
    func refuse(_ result: UInt16) {
      sendSignal(
        L2CAPSignal(
          identifier: identifier,
          body: .connectionResponse(destinationCID: 0, mtu: 0, mps: 0, credits: 0, result: result)))
    }
    guard let accept = acceptor(psm) else {
      log.info(
        "\(connectionDescription): channel request for PSM 0x\(hex(psm)) refused (no listener)")
      return refuse(L2CAPSignal.Result.psmNotSupported)
    }
    guard L2CAPFrame.dynamicCIDs.contains(remoteCID) else {
      return refuse(L2CAPSignal.Result.invalidSourceCID)
    }
    guard mtu >= 23, mps >= 23, mps <= 65533 else {
      return refuse(L2CAPSignal.Result.unacceptableParameters)
    }
    let inUse = state.withLock { s in s.channels.values.contains { $0.remoteCID == remoteCID } }
    guard !inUse else { return refuse(L2CAPSignal.Result.sourceCIDAlreadyAllocated) }
    guard let cid = try? allocateCID() else { return refuse(L2CAPSignal.Result.noResources) }
    let channel = L2CAPChannel(
      link: self, psm: psm, localCID: cid, remoteCID: remoteCID, localMTU: L2CAPLink.localMTU,
      localMPS: L2CAPLink.localMPS, remoteMTU: Int(mtu), remoteMPS: Int(mps),
      initialCredits: L2CAPLink.initialCredits, peerCredits: Int(credits))
    state.withLock { s in
      s.channels[cid] = channel
      s.reserved.remove(cid)
    }
    sendSignal(
      L2CAPSignal(
        identifier: identifier,
        body: .connectionResponse(
          destinationCID: cid, mtu: UInt16(L2CAPLink.localMTU), mps: UInt16(L2CAPLink.localMPS),
          credits: UInt16(L2CAPLink.initialCredits), result: L2CAPSignal.Result.success)))
    log.info("accepted \(channel) (peer MTU \(mtu), MPS \(mps), credits \(credits))")
    accept(channel)
  }
}
