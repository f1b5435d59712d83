import BatonHCI
import BatonL2CAP
import BatonRadio
import BatonSystem

/// Connections and L2CAP channels.
extension BLEHost {
  /// Connects to a peer that is advertising (we become central). Waits at most
  /// `timeout`, by our own clock: we never depend on LE Create Connection
  /// Cancel, which bumble's controller acknowledges but does not carry out.
  /// After a timeout we still send the cancel (real controllers then report a
  /// failed connection, 0x02) and remember the attempt as abandoned; should
  /// it complete later anyway, that connection is dropped at once. While a
  /// controller still holds the abandoned attempt, new attempts fail with
  /// `HCIError.connectionAttemptPending`.
  public func connect(
    to peer: BluetoothAddress, addressType: AddressType = .random, timeout: Duration = .seconds(5)
  ) async throws -> LEConnection {
    try await connectGate.acquire()
    defer { connectGate.release() }
    let id = state.withLock { s -> UInt64 in
      s.nextID += 1
      return s.nextID
    }
    let expire: @Sendable () async -> Void = { [weak self] in
      guard let self else { return }
      let pending = state.withLock { s -> PendingConnect? in
        guard let pending = s.pendingConnect, pending.id == id else { return nil }
        s.pendingConnect = nil
        s.abandonedConnect = peer
        return pending
      }
      guard let pending else { return }
      pending.continuation.resume(
        throwing: HCIError.connectionTimedOut(peer: peer, seconds: timeout.secondsValue))
    }
    log.info("connecting to \(peer) (\(addressType))")
    do {
      return try await Timers.shared.withDeadline(timeout, onExpiry: expire) {
        try await connectionComplete(to: peer, addressType: addressType, id: id)
      }
    } catch let error as HCIError {
      if case .connectionTimedOut = error {
        log.warning("\(error); cancelling the attempt")
        _ = try? await controller.send(.leCreateConnectionCancel, timeout: .milliseconds(500))
      }
      throw error
    }
  }

  /// Sends LE Create Connection and waits, without a bound, for the
  /// connection (or for the attempt to fail).
  private func connectionComplete(
    to peer: BluetoothAddress, addressType: AddressType, id: UInt64
  ) async throws -> LEConnection {
    try await withCheckedThrowingContinuation {
      (continuation: CheckedContinuation<LEConnection, any Error>) in
      let closed = state.withLock { s -> (any Error)? in
        if s.finished { return s.closeReason ?? HCIError.closed }
        s.pendingConnect = PendingConnect(id: id, peer: peer, continuation: continuation)
        return nil
      }
      if let closed {
        continuation.resume(throwing: closed)
        return
      }
      Task {
        do {
          try await controller.send(
            .leCreateConnection(.init(peerAddressType: addressType, peerAddress: peer)))
        } catch {
          let abandoned = state.withLock { $0.abandonedConnect }
          let pending = state.withLock { s -> PendingConnect? in
            guard let pending = s.pendingConnect, pending.id == id else { return nil }
            s.pendingConnect = nil
            return pending
          }
          var failure = error
          if case HCIError.commandFailed(_, let status) = error, status == .commandDisallowed,
            let abandoned
          {
            failure = HCIError.connectionAttemptPending(peer: abandoned)
          }
          pending?.continuation.resume(throwing: failure)
        }
      }
    }
  }

  /// Disconnects (reason Remote User Terminated Connection) and waits, at
  /// most 2 s, for the controller to confirm.
  public func disconnect(_ connection: LEConnection) async {
    guard connection.isConnected else { return }
    do {
      try await controller.send(
        .disconnect(handle: connection.handle, reason: .remoteUserTerminated))
    } catch {
      log.warning("disconnect \(connection): \(error)")
      if case HCIError.commandFailed(_, let status) = error, status == .unknownConnectionIdentifier
      {
        disconnectionComplete(handle: connection.handle, reason: .localHostTerminated)
      }
      return
    }
    let expire: @Sendable () async -> Void = { [weak self] in
      guard let self, connection.isConnected else { return }
      log.warning("\(connection): no Disconnection Complete within 2 s; forgetting it")
      disconnectionComplete(handle: connection.handle, reason: .localHostTerminated)
    }
    _ = await Timers.shared.withDeadline(.seconds(2), onExpiry: expire) {
      await connection.waitForDisconnection()
    }
  }

  /// Opens an L2CAP LE credit-based channel to `psm` (0x0080-0x00FF) on the peer.
  public func openChannel(_ connection: LEConnection, psm: UInt16) async throws -> L2CAPChannel {
    guard connection.isConnected else { throw HCIError.notConnected(handle: connection.handle) }
    return try await connection.link.openChannel(psm: psm)
  }

  /// Accepts channels that peers open to `psm` on any connection. Listening
  /// again on the same PSM replaces (ends) the earlier stream.
  public func listen(psm: UInt16) -> AsyncStream<L2CAPChannel> {
    let (stream, continuation) = AsyncStream.makeStream(of: L2CAPChannel.self)
    let (id, previous) = state.withLock { s -> (UInt64, AsyncStream<L2CAPChannel>.Continuation?) in
      s.nextID += 1
      let previous = s.listeners[psm]?.continuation
      if s.finished {
        return (s.nextID, nil)
      }
      s.listeners[psm] = (s.nextID, continuation)
      return (s.nextID, previous)
    }
    if isClosed { continuation.finish() }
    previous?.finish()
    continuation.onTermination = { [weak self] _ in
      self?.state.withLock { s in
        if s.listeners[psm]?.id == id { s.listeners[psm] = nil }
      }
    }
    return stream
  }

  /// The acceptor a connection's L2CAP link asks about incoming channels.
  func acceptor(psm: UInt16) -> (@Sendable (L2CAPChannel) -> Void)? {
    guard let listener = state.withLock({ $0.listeners[psm]?.continuation }) else { return nil }
    return { channel in listener.yield(channel) }
  }

  // MARK: - Events (reader thread)

  func connectionComplete(_ complete: HCIEvent.ConnectionComplete) {
    let role: LEConnection.Role = complete.role == 1 ? .peripheral : .central
    guard complete.status == .success else {
      let pending = state.withLock { s -> PendingConnect? in
        if role == .central && s.pendingConnect == nil { s.abandonedConnect = nil }
        defer { s.pendingConnect = nil }
        return s.pendingConnect
      }
      if pending != nil {
        log.info("connection failed: \(complete.status)")
      } else {
        log.debug("connection complete with \(complete.status) and no attempt pending")
      }
      pending?.continuation.resume(
        throwing: HCIError.connectionFailed(
          peer: pending?.peer ?? complete.peerAddress, status: complete.status))
      return
    }
    let connection = LEConnection(
      handle: complete.handle, peerAddress: complete.peerAddress,
      peerAddressType: complete.peerAddressType, role: role, interval: complete.interval,
      pace: paceSchedule, controller: controller,
      acceptor: { [weak self] psm in self?.acceptor(psm: psm) })
    enum Next {
      case central(PendingConnect)
      case stray, incoming
    }
    let next = state.withLock { s -> Next in
      s.connections[complete.handle] = connection
      if role == .peripheral {
        s.advertisingEnabled = false
        return .incoming
      }
      if let pending = s.pendingConnect {
        s.pendingConnect = nil
        return .central(pending)
      }
      s.abandonedConnect = nil
      return .stray
    }
    log.info("\(connection) up")
    trafficCrossed(on: connection)
    switch next {
    case .central(let pending):
      pending.continuation.resume(returning: connection)
    case .stray:
      log.warning("\(connection) completed after its attempt was abandoned; disconnecting")
      Task { await disconnect(connection) }
    case .incoming:
      incomingContinuation.yield(connection)
      resumeAdvertising(after: "connection from \(connection.peerAddress)")
    }
  }

  func disconnectionComplete(handle: UInt16, reason: HCIStatus) {
    guard let connection = state.withLock({ $0.connections.removeValue(forKey: handle) }) else {
      return
    }
    log.info("\(connection) down: \(reason)")
    connection.markDisconnected(reason)
    if connection.role == .peripheral { resumeAdvertising(after: "connection ended") }
  }
}
