import BatonSystem
import FoundationEssentials
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// The HCI layer over one transport: sends commands with flow control
/// (Num_HCI_Command_Packets) and a timeout each, sends ACL data with host-side
/// flow control (the controller's buffer count, returned by Number Of
/// Completed Packets) fragmented to its buffer size, and reassembles incoming
/// ACL fragments into L2CAP PDUs.
///
/// A dedicated reader thread blocks in `transport.receive()`; events and PDUs
/// are handed to the handlers on that thread, in order. A writer thread
/// ("hci-writer") is the only one that calls `transport.send`: callers queue
/// packets and return, so a controller that stops taking bytes (a UART
/// holding CTS) parks that thread only, never a caller or a pool thread.
/// Every packet both ways goes to the btsnoop log when one is given.
///
/// Advertising reports come in bursts (every device in range, once each,
/// as a scan starts; all the time in a busy room), one packet each: after
/// one, when nothing more is buffered, the reader waits `reportCoalescing`
/// before it blocks again, so one wake-up takes the reports (and anything
/// else) that came meanwhile instead of one wake-up each. Nothing waits for
/// a report that soon: the agent decides in seconds. But not while a link
/// carries data (ACL data or Number Of Completed Packets in the last
/// `linkTrafficHold`): a save's packets would wait after every report.
public final class HCIController: Sendable {
  /// Called on the reader thread for every decoded event (after the
  /// controller's own bookkeeping).
  public typealias EventHandler = @Sendable (HCIEvent) -> Void
  /// Called on the reader thread with each reassembled L2CAP PDU.
  public typealias DataHandler = @Sendable (_ handle: UInt16, _ pdu: [UInt8]) -> Void
  /// Called once when the transport ends: nil after `close()`, else the reason.
  public typealias CloseHandler = @Sendable ((any Error)?) -> Void
  /// Called on the reader thread when ACL data for `handle` was lost or
  /// garbled below L2CAP (a gap or a length mismatch in reassembly).
  public typealias LossHandler = @Sendable (_ handle: UInt16, _ reason: String) -> Void
  /// Called on the sender's thread after `sendACL` queued a PDU for `handle`.
  public typealias SendHandler = @Sendable (_ handle: UInt16) -> Void

  private struct InFlight {
    var id: UInt64
    var opcode: UInt16
    var continuation: CheckedContinuation<[UInt8], any Error>
  }

  private struct State {
    var commandCredits = 1
    var queuedCommands:
      [(
        id: UInt64, opcode: UInt16, packet: [UInt8],
        continuation: CheckedContinuation<[UInt8], any Error>
      )] = []
    var inFlight: [InFlight] = []
    var nextID: UInt64 = 0
    var aclCredits = 0
    var aclTotal = 0
    var aclLength = 27
    var aclQueue: [ACLPacket] = []
    var aclQueueHead = 0
    var outstanding: [UInt16: Int] = [:]
    /// Per handle with packets outstanding: when the controller last
    /// completed one (or when the first went out).
    var lastCompletion: [UInt16: ContinuousClock.Instant] = [:]
    var reassembler = ACLReassembler()
    var closedReason: (any Error)?
    var closedByOwner = false
    var eventHandler: EventHandler?
    var dataHandler: DataHandler?
    var closeHandler: CloseHandler?
    var lossHandler: LossHandler?
    var sendHandler: SendHandler?
    var statistics = Statistics()
    /// A drain of the queues is queued on the writer thread.
    var drainQueued = false
    /// Per handle with a probe out (`mayProbe`): the packets outstanding
    /// before the first, the probes sent (a lost probe is followed by
    /// another), and when the last went out. Probes take no buffer of our
    /// count.
    var probing: [UInt16: (before: Int, probes: Int, sentAt: ContinuousClock.Instant)] = [:]
    /// A wake-up of the writer is scheduled for a probe.
    var probeScheduled = false

    /// Whether one packet on `handle` may go out beyond the buffers we
    /// count: none are left, and the controller has completed none of
    /// ours on it for `lostPacketAge`. On a live link it completes some
    /// every connection interval, so those packets were lost on the way to
    /// it (a UART without a CRC), and it will never return their buffers
    /// while the connection lasts; the kernel would drop the connection
    /// (`hci_link_tx_to`). The probe's completion shows them lost, and
    /// their buffers are counted free again.
    func mayProbe(_ handle: UInt16) -> Bool {
      guard let at = probeTime(handle) else { return false }
      return ContinuousClock.now >= at
    }

    /// When `handle` may probe, if it has packets outstanding.
    func probeTime(_ handle: UInt16) -> ContinuousClock.Instant? {
      guard (outstanding[handle] ?? 0) > 0, let since = lastCompletion[handle] else { return nil }
      return max(since, probing[handle]?.sentAt ?? since) + HCIController.lostPacketAge
    }
  }

  /// Counters since open.
  public struct Statistics: Sendable {
    /// H4 bytes written to / read from the transport.
    public var bytesSent = 0
    public var bytesReceived = 0
    public var aclBytesSent = 0
    public var commandsSent = 0
    /// Packets that could not be decoded and were dropped.
    public var malformedPackets = 0
    /// Our ACL packets counted as lost below the controller
    /// (`reclaimLostPackets`).
    public var aclPacketsPresumedLost = 0
  }

  public let transport: any HCITransport
  private let snoop: BTSnoopWriter?
  private let state = Mutex(State())
  /// The one thread that writes to the transport.
  private let writer = ThreadExecutor(name: "hci-writer")
  private let log = Logger(label: "hci")
  /// How long a command may wait for Command Complete or Command Status.
  public let commandTimeout: Duration
  /// How long the reader waits after an advertising report before it
  /// blocks for the next packet (zero: not at all). 20 ms: a burst of 30
  /// advertisers at 100 ms takes about 6 wake-ups, not 30; a packet that
  /// follows a report waits at most that long.
  public let reportCoalescing: Duration
  public static let defaultReportCoalescing: Duration = .milliseconds(20)
  /// No waiting after a report for this long after link traffic.
  public let linkTrafficHold: Duration
  public static let defaultLinkTrafficHold: Duration = .seconds(1)
  /// How the reader waits (a test counts the waits instead).
  private let pause: @Sendable (Duration) -> Void

  /// Wraps `transport`; call `start(...)` to begin reading.
  public convenience init(
    transport: any HCITransport, snoop: BTSnoopWriter? = nil, commandTimeout: Duration = .seconds(2),
    reportCoalescing: Duration = HCIController.defaultReportCoalescing
  ) {
    self.init(
      transport: transport, snoop: snoop, commandTimeout: commandTimeout,
      reportCoalescing: reportCoalescing, linkTrafficHold: HCIController.defaultLinkTrafficHold,
      pause: HCIController.sleep)
  }

  /// With `pause` in place of sleeping (tests).
  init(
    transport: any HCITransport, snoop: BTSnoopWriter? = nil, commandTimeout: Duration = .seconds(2),
    reportCoalescing: Duration, linkTrafficHold: Duration,
    pause: @escaping @Sendable (Duration) -> Void
  ) {
    self.linkTrafficHold = linkTrafficHold
    self.transport = transport
    self.snoop = snoop
    self.commandTimeout = commandTimeout
    self.reportCoalescing = max(reportCoalescing, .zero)
    self.pause = pause
  }

  /// Sleeps the calling thread (the reader's) for `duration`.
  private static func sleep(_ duration: Duration) { sleepThread(for: duration) }

  /// Installs the handlers and starts the reader thread.
  public func start(
    events: @escaping EventHandler, data: @escaping DataHandler, closed: @escaping CloseHandler
  ) {
    state.withLock {
      $0.eventHandler = events
      $0.dataHandler = data
      $0.closeHandler = closed
    }
    OwnedThread.start(name: "hci-reader") { [self] in readLoop() }
  }

  /// Installs the handler of ACL data lost below L2CAP (see `LossHandler`).
  public func onDataLoss(_ handler: @escaping LossHandler) {
    state.withLock { $0.lossHandler = handler }
  }

  /// Installs the handler told of each PDU queued (see `SendHandler`).
  public func onSend(_ handler: @escaping SendHandler) {
    state.withLock { $0.sendHandler = handler }
  }

  /// How long packets sent on `handle` have waited with none completed
  /// (Number Of Completed Packets); nil when none are outstanding. A
  /// controller that lost our packets, or whose completions were lost, never
  /// returns those buffers while the connection lasts.
  public func aclStall(handle: UInt16) -> Duration? {
    state.withLock { s in
      guard (s.outstanding[handle] ?? 0) > 0, let since = s.lastCompletion[handle] else {
        return nil
      }
      return ContinuousClock.now - since
    }
  }

  public var statistics: Statistics { state.withLock { $0.statistics } }

  /// The ACL buffer size and count in use.
  public var aclBuffers: (length: Int, count: Int) {
    state.withLock { ($0.aclLength, $0.aclTotal) }
  }

  /// Sets the controller's ACL buffer size and count (from bring-up).
  public func setACLBuffers(length: Int, count: Int) {
    state.withLock {
      $0.aclLength = max(1, length)
      $0.aclTotal = max(1, count)
      $0.aclCredits = max(1, count)
    }
  }

  /// Sends `command` and returns its Command Complete return parameters after
  /// the status byte (empty for commands answered by Command Status). Throws
  /// `HCIError.commandFailed` on a non-zero status, `.commandTimedOut` when
  /// the controller stays silent.
  @discardableResult
  public func send(_ command: HCICommand, timeout: Duration? = nil) async throws -> [UInt8] {
    let packet = command.encoded
    let id = state.withLock { s -> UInt64 in
      s.nextID += 1
      return s.nextID
    }
    let limit = timeout ?? commandTimeout
    log.debug("command \(command.name)")
    let expire: @Sendable () async -> Void = { [weak self] in
      self?.timeOut(id: id, command: command.name, after: limit)
    }
    let returned = try await Timers.shared.withDeadline(limit, onExpiry: expire) {
      try await withCheckedThrowingContinuation {
        (continuation: CheckedContinuation<[UInt8], any Error>) in
        let failure = state.withLock { s -> (any Error)? in
          if let reason = s.closedReason { return reason }
          s.queuedCommands.append((id, command.opcode, packet, continuation))
          return nil
        }
        if let failure {
          continuation.resume(throwing: failure)
        } else {
          pump()
        }
      }
    }
    guard let status = returned.first else {
      return []
    }
    if status != 0 {
      throw HCIError.commandFailed(command: command.name, status: HCIStatus(rawValue: status))
    }
    return Array(returned.dropFirst())
  }

  /// Queues one L2CAP PDU for `handle`, fragmented to the buffer size; the
  /// fragments go out as controller buffers free up.
  public func sendACL(handle: UInt16, pdu: [UInt8]) throws {
    let sent = try state.withLock { s throws(HCIError) in
      if s.closedReason != nil { throw HCIError.transportLost(reason: "closed") }
      if s.aclQueueHead > 1024 {
        s.aclQueue.removeFirst(s.aclQueueHead)
        s.aclQueueHead = 0
      }
      s.aclQueue += ACLPacket.fragments(of: pdu, handle: handle, maximumLength: s.aclLength)
      return s.sendHandler
    }
    pump()
    sent?(handle)
  }

  /// Closes the transport; pending commands fail with `HCIError.closed`.
  public func close() {
    state.withLock { $0.closedByOwner = true }
    transport.close()
  }

  // MARK: - Sending

  /// Has the writer thread send whatever flow control allows; returns at
  /// once. Called whenever a packet is queued or credits come back.
  private func pump() {
    let queue = state.withLock { s in
      defer { s.drainQueued = true }
      return !s.drainQueued
    }
    guard queue else { return }
    writer.execute { [self] in
      // Cleared first: what is queued from now on gets another drain.
      state.withLock { $0.drainQueued = false }
      drain()
    }
  }

  /// Sends whatever flow control allows, in order (on the writer thread).
  private func drain() {
    do {
      while true {
        let next: [UInt8]? = state.withLock { s in
          if s.closedReason != nil { return nil }
          if s.commandCredits > 0, !s.queuedCommands.isEmpty {
            let c = s.queuedCommands.removeFirst()
            s.commandCredits -= 1
            s.inFlight.append(InFlight(id: c.id, opcode: c.opcode, continuation: c.continuation))
            s.statistics.commandsSent += 1
            s.statistics.bytesSent += c.packet.count
            return c.packet
          }
          if s.aclQueueHead < s.aclQueue.count {
            let packet = s.aclQueue[s.aclQueueHead]
            let probe = s.aclCredits == 0 && s.mayProbe(packet.handle)
            guard s.aclCredits > 0 || probe else {
              scheduleProbe(&s, handle: packet.handle)
              return nil
            }
            s.aclQueueHead += 1
            if s.aclQueueHead == s.aclQueue.count {
              s.aclQueue.removeAll(keepingCapacity: true)
              s.aclQueueHead = 0
            }
            if probe {
              // Beyond the buffers we count: see `lostPacketAge`.
              let earlier = s.probing[packet.handle]
              s.probing[packet.handle] = (
                before: earlier?.before ?? s.outstanding[packet.handle] ?? 0,
                probes: (earlier?.probes ?? 0) + 1, sentAt: .now
              )
            } else {
              s.aclCredits -= 1
            }
            if (s.outstanding[packet.handle] ?? 0) == 0 {
              s.lastCompletion[packet.handle] = .now
            }
            s.outstanding[packet.handle, default: 0] += 1
            let encoded = packet.encoded
            s.statistics.bytesSent += encoded.count
            s.statistics.aclBytesSent += encoded.count
            return encoded
          }
          return nil
        }
        guard let next else { return }
        try transport.send(next)
        snoop?.write(next, direction: .sent)
      }
    } catch {
      log.error("\(error)")
      transport.close()
    }
  }

  private func timeOut(id: UInt64, command: String, after limit: Duration) {
    let continuation = state.withLock { s -> CheckedContinuation<[UInt8], any Error>? in
      if let index = s.queuedCommands.firstIndex(where: { $0.id == id }) {
        return s.queuedCommands.remove(at: index).continuation
      }
      guard let index = s.inFlight.firstIndex(where: { $0.id == id }) else { return nil }
      // The controller will not answer: assume it can take a command again.
      s.commandCredits = max(s.commandCredits, 1)
      return s.inFlight.remove(at: index).continuation
    }
    guard let continuation else { return }
    let seconds = limit.secondsValue
    log.warning("\(command): no answer within \(seconds) s")
    continuation.resume(throwing: HCIError.commandTimedOut(command: command, seconds: seconds))
    pump()
  }

  // MARK: - Receiving

  private func readLoop() {
    var reason: (any Error)?
    var lastLinkTraffic: ContinuousClock.Instant?
    while true {
      let packet: [UInt8]?
      do {
        packet = try transport.receive()
      } catch {
        reason = error
        break
      }
      guard let packet else { break }
      snoop?.write(packet, direction: .received)
      handle(packet)
      if Self.isLinkTraffic(packet) { lastLinkTraffic = .now }
      if reportCoalescing > .zero, Self.isAdvertisingReport(packet), !transport.hasBufferedBytes,
        lastLinkTraffic.map({ ContinuousClock.now - $0 >= linkTrafficHold }) ?? true
      {
        pause(reportCoalescing)
      }
    }
    finish(reason)
  }

  /// ACL data, or a Number Of Completed Packets event (our data went out).
  static func isLinkTraffic(_ packet: [UInt8]) -> Bool {
    packet.first == 0x02 || (packet.count >= 2 && packet[0] == 0x04 && packet[1] == 0x13)
  }

  /// An LE Meta event with an (extended, or directed) advertising report.
  static func isAdvertisingReport(_ packet: [UInt8]) -> Bool {
    guard packet.count >= 4, packet[0] == 0x04, packet[1] == 0x3E else { return false }
    return packet[3] == 0x02 || packet[3] == 0x0B || packet[3] == 0x0D
  }

  /// Processes one received H4 packet (internal for the fuzz tests).
  func handle(_ packet: [UInt8]) {
    state.withLock { $0.statistics.bytesReceived += packet.count }
    switch packet.first {
    case 0x04:
      let event: HCIEvent
      do {
        event = try HCIEvent.decode(packet)
      } catch {
        dropped("\(error)")
        return
      }
      handle(event)
    case 0x02:
      do {
        let acl = try ACLPacket.decode(packet)
        reclaimLostPackets(handle: acl.handle)
        let (pdu, gap) = try state.withLock { s throws(HCIDecodeError) in
          let before = s.reassembler.droppedPartialCount
          return (try s.reassembler.feed(acl), s.reassembler.droppedPartialCount != before)
        }
        if gap {
          lost(handle: acl.handle, "a PDU started before the one before it was complete")
        }
        if let pdu, let handler = state.withLock({ $0.dataHandler }) { handler(acl.handle, pdu) }
      } catch {
        dropped("\(error)")
        if packet.count >= 3 {
          lost(handle: (UInt16(packet[1]) | UInt16(packet[2]) << 8) & 0x0FFF, "\(error)")
        }
      }
    default:
      dropped("H4 packet type 0x\(hex(packet.first ?? 0)) ignored")
    }
  }

  /// How long packets may stay outstanding on a connection with none
  /// completed before they may count as lost between host and controller
  /// (`reclaimLostPackets`, `State.mayProbe`). A live link completes some
  /// every connection interval, and baton connects at intervals of 30 to
  /// 50 ms: 1 s is twenty of them. (The Core spec allows intervals of up
  /// to 4 s, which baton never asks for.)
  static let lostPacketAge: Duration = .seconds(1)

  /// The queue waits for buffers: wakes the writer when `handle` may
  /// probe (`State.mayProbe`), if it has packets outstanding.
  private func scheduleProbe(_ s: inout State, handle: UInt16) {
    guard !s.probeScheduled, let at = s.probeTime(handle) else { return }
    s.probeScheduled = true
    let wait = max(.zero, at - ContinuousClock.now)
    _ = Timers.shared.schedule(after: wait) { [weak self] in
      guard let self else { return }
      self.state.withLock { $0.probeScheduled = false }
      self.pump()
    }
  }

  /// ACL data arrived on `handle`: the link is alive, so if the controller
  /// has completed none of our packets on it for `lostPacketAge`, those
  /// packets never reached it (a packet lost on a UART without a CRC, or
  /// their Number Of Completed Packets events lost), and it will never
  /// return their buffers while the connection lasts. Counting them as
  /// completed keeps the buffers in use, where the kernel would drop the
  /// connection after its ACL timeout (`hci_link_tx_to`); the frames they
  /// carried are sent again by the layers above (PROTOCOL.md section 5,
  /// "Faults").
  private func reclaimLostPackets(handle: UInt16) {
    let reclaimed = state.withLock { s -> Int in
      guard let n = s.outstanding[handle], n > 0, let since = s.lastCompletion[handle],
        ContinuousClock.now - since >= Self.lostPacketAge
      else { return 0 }
      s.outstanding[handle] = 0
      s.lastCompletion[handle] = nil
      // Probes (`mayProbe`) took no buffer of our count.
      let counted = n - (s.probing.removeValue(forKey: handle)?.probes ?? 0)
      s.aclCredits = min(s.aclTotal, s.aclCredits + max(0, counted))
      s.statistics.aclPacketsPresumedLost += n
      return n
    }
    guard reclaimed > 0 else { return }
    log.info(
      "connection 0x\(hex(handle)): the controller completed none of our last \(reclaimed) packets"
        + " in \(Self.lostPacketAge.secondsValue) s while the peer's data arrived; counted as lost"
        + " (damaged or dropped on the way to the controller), their buffers reused")
    pump()
  }

  private func lost(handle: UInt16, _ reason: String) {
    if let handler = state.withLock({ $0.lossHandler }) { handler(handle, reason) }
  }

  private func dropped(_ reason: String) {
    state.withLock { $0.statistics.malformedPackets += 1 }
    log.warning("dropped packet: \(reason)")
  }

  private func handle(_ event: HCIEvent) {
    var resume: (CheckedContinuation<[UInt8], any Error>, [UInt8])?
    var wake = false
    switch event {
    case .commandComplete(let n, let opcode, let returned):
      state.withLock { s in
        s.commandCredits = Int(n)
        if let index = s.inFlight.firstIndex(where: { $0.opcode == opcode }) {
          resume = (s.inFlight.remove(at: index).continuation, returned)
        }
      }
      wake = true
    case .commandStatus(let status, let n, let opcode):
      state.withLock { s in
        s.commandCredits = Int(n)
        if let index = s.inFlight.firstIndex(where: { $0.opcode == opcode }) {
          resume = (s.inFlight.remove(at: index).continuation, [status.rawValue])
        }
      }
      wake = true
    case .numberOfCompletedPackets(let entries):
      var lostBeforeProbe: [(handle: UInt16, count: Int)] = []
      state.withLock { s in
        for entry in entries {
          let outstanding = s.outstanding[entry.handle] ?? 0
          let returned = min(outstanding, Int(entry.count))
          if returned > 0, let probe = s.probing.removeValue(forKey: entry.handle) {
            // The first completion since the probes went out is a probe's,
            // and the controller completes packets in order: the `before`
            // packets, and any probe before this one, never reached it.
            // Probes took no buffer of our count; packets completed with it
            // (sent with buffers freed meanwhile) return theirs.
            let lost = probe.before + probe.probes - 1
            s.outstanding[entry.handle] = max(0, outstanding - lost - returned)
            s.lastCompletion[entry.handle] = .now
            s.aclCredits = min(s.aclTotal, s.aclCredits + probe.before + returned - 1)
            s.statistics.aclPacketsPresumedLost += lost
            if lost > 0 { lostBeforeProbe.append((entry.handle, lost)) }
            continue
          }
          s.outstanding[entry.handle] = outstanding - returned
          if returned > 0 { s.lastCompletion[entry.handle] = .now }
          s.aclCredits = min(s.aclTotal, s.aclCredits + returned)
        }
      }
      for (handle, count) in lostBeforeProbe {
        log.info(
          "connection 0x\(hex(handle)): the controller completed a packet sent after \(count) it had not"
            + " completed in \(Self.lostPacketAge.secondsValue) s; those count as lost (damaged or dropped"
            + " on the way to the controller), their buffers reused")
      }
      wake = true
    case .disconnectionComplete(let status, let handle, _) where status == .success:
      state.withLock { s in
        // The controller frees the buffers of a closed connection.
        // Probes (`mayProbe`) took no buffer of our count.
        let outstanding = s.outstanding.removeValue(forKey: handle) ?? 0
        let counted = outstanding - (s.probing.removeValue(forKey: handle)?.probes ?? 0)
        s.aclCredits = min(s.aclTotal, s.aclCredits + max(0, counted))
        s.lastCompletion[handle] = nil
        let kept = s.aclQueue[s.aclQueueHead...].filter { $0.handle != handle }
        s.aclQueue = Array(kept)
        s.aclQueueHead = 0
        s.reassembler.reset(handle: handle)
      }
      wake = true
    default:
      break
    }
    if let (continuation, returned) = resume { continuation.resume(returning: returned) }
    if wake { pump() }
    if let handler = state.withLock({ $0.eventHandler }) { handler(event) }
  }

  private func finish(_ error: (any Error)?) {
    let (waiting, handler, reason) = state.withLock {
      s -> ([CheckedContinuation<[UInt8], any Error>], CloseHandler?, (any Error)?) in
      let reason: any Error =
        s.closedByOwner
        ? HCIError.closed
        : HCIError.transportLost(
          reason: error.map { "\($0)" } ?? "the controller closed the connection")
      s.closedReason = reason
      let waiting = s.inFlight.map(\.continuation) + s.queuedCommands.map(\.continuation)
      s.inFlight.removeAll()
      s.queuedCommands.removeAll()
      s.aclQueue.removeAll()
      s.aclQueueHead = 0
      defer {
        s.closeHandler = nil
        s.eventHandler = nil
        s.dataHandler = nil
        s.lossHandler = nil
        s.sendHandler = nil
      }
      return (waiting, s.closeHandler, s.closedByOwner ? nil : reason)
    }
    if let reason { log.error("\(reason)") }
    for continuation in waiting { continuation.resume(throwing: reason ?? HCIError.closed) }
    snoop?.close()
    handler?(reason)
  }
}
