import BatonSystem

/// The frame layer after the handshake (PROTOCOL.md section 5): seals what
/// the layer above sends as numbered data frames, opens what arrives in
/// order, and recovers from frames that a fault below damaged or lost, so
/// that a fault costs a frame, not the session or link.
///
/// A synchronous state machine: `FrameChannel` drives it with the frames
/// that arrive, the plaintexts to send and the time, and carries out what
/// it answers (frames to transmit, plaintexts to deliver).
///
/// - Every frame carries `ack`, the number of the next data frame its sender
///   needs (all below it arrived), and its sender's `FlowReport`.
/// - A receiver takes only the next data frame. One that does not open, or
///   one past a gap, is dropped and answered by a control frame asking for
///   everything from `ack` again (at most once per `resendTimeout / 2` for
///   the same `ack`); one already taken is dropped and acknowledged.
/// - A sender keeps every data frame until it is acknowledged, sends again
///   from `ack` when asked, and again its oldest unacknowledged frame when
///   nothing was acknowledged for `resendTimeout` (a lost last frame, or a
///   lost request); a control frame goes before frames sent again, since
///   their flow reports are as old as they are.
/// - A receiver acknowledges by the frames it sends anyway, or by a control
///   frame `ackDelay` after a data frame it took, or at once every
///   `ackEvery` frames, so that a sender's store stays small.
/// - After a fault the sender halves the frames it seals (down to
///   `smallestPayload`), since at a given fault rate per packet below, a
///   small frame gets through more often; after `growAfter` frames
///   acknowledged without one it doubles them again.
struct FrameRecovery: Sendable {
  typealias Instant = ContinuousClock.Instant

  static let dataMarker: UInt8 = 0x11
  static let controlMarker: UInt8 = 0x12
  /// marker, u64 number, u64 ack, u32 frames sent, u32 credits granted, u8 flags.
  static let headerBytes = 26
  /// Header and AEAD tag.
  static let overhead = headerBytes + HandoffCrypto.aeadTagBytes
  /// First bytes of M1, M2 and M3 (section 4), which no frame starts with.
  static let handshakeTypes: ClosedRange<UInt8> = 0x01...0x03
  /// Control frame flag: send every data frame from `ack` again.
  static let resendFlag: UInt8 = 0x01

  /// Data frames a receiver holds past a gap, so that only what is missing
  /// is sent again; a control frame's plaintext is the bitmap of those it
  /// holds (bit i of byte i / 8: frame `ack + 1 + i`).
  static let window = 512
  static let ackEvery = 16
  static let ackDelay: Duration = .milliseconds(50)
  static let resendTimeout: Duration = .milliseconds(1500)
  /// Timeouts in a row with nothing acknowledged before the peer counts as gone.
  static let maxTimeouts = 12
  /// Frames in a row that do not open before the channel counts as broken.
  static let maxBadFrames = 64
  /// Sealed bytes kept for a peer that acknowledges nothing.
  static let maxUnacknowledgedBytes = 16 << 20
  static let smallestPayload = 48
  static let growAfter = 32

  /// A frame's header, authenticated as the AEAD's associated data.
  struct Header: Equatable, Sendable {
    var marker: UInt8
    var number: UInt64
    var ack: UInt64
    var report: FlowReport
    var flags: UInt8

    var bytes: [UInt8] {
      var w = ByteWriter()
      w.u8(marker)
      w.u64(number)
      w.u64(ack)
      w.u32(report.framesSent)
      w.u32(report.creditsGranted)
      w.u8(flags)
      return w.bytes
    }

    /// Data frames and control frames draw nonces from separate spaces.
    var nonce: [UInt8] {
      var w = ByteWriter()
      w.u64(number)
      w.u8(marker == FrameRecovery.controlMarker ? 1 : 0)
      return w.bytes + [UInt8](repeating: 0, count: 15)
    }

    init(marker: UInt8, number: UInt64, ack: UInt64, report: FlowReport, flags: UInt8) {
      self.marker = marker
      self.number = number
      self.ack = ack
      self.report = report
      self.flags = flags
    }

    init?(_ frame: [UInt8]) {
      guard frame.count >= FrameRecovery.overhead else { return nil }
      var r = WireReader(Array(frame[0..<FrameRecovery.headerBytes]))
      guard let marker = try? r.u8(), let number = try? r.u64(), let ack = try? r.u64(),
        let sent = try? r.u32(), let granted = try? r.u32(), let flags = try? r.u8(),
        marker == FrameRecovery.dataMarker || marker == FrameRecovery.controlMarker
      else { return nil }
      self.init(
        marker: marker, number: number, ack: ack,
        report: FlowReport(framesSent: sent, creditsGranted: granted), flags: flags)
    }
  }

  /// What the driver does after a step.
  struct Actions: Sendable {
    /// Plaintexts of data frames, in order.
    var deliver: [[UInt8]] = []
    /// Control frames to send.
    var transmit: [[UInt8]] = []
    /// Data frames to send again, in order, after `transmit`.
    var resend: [[UInt8]] = []
    /// The peer's flow report from a frame that opened.
    var peerReport: FlowReport?
    /// The channel cannot go on: close it and tell the layer above.
    var failure: String?
    /// We asked again for a frame that did not come, or nothing we sent
    /// was acknowledged for `resendTimeout`: the peer may have no credits
    /// left to send (`MessageChannel.grantSpare`).
    var starved = false
  }

  /// Counts for the log and tests.
  struct Counts: Sendable, Equatable {
    var dropped = 0
    var resent = 0
    var requests = 0
  }

  static func seal(_ plaintext: [UInt8], header: Header, key: [UInt8]) -> [UInt8] {
    let head = header.bytes
    return head + HandoffCrypto.seal(plaintext, ad: head, nonce: header.nonce, key: key)
  }

  /// The header and plaintext of `frame` if it opens under `key`.
  static func open(_ frame: [UInt8], key: [UInt8]) -> (Header, [UInt8])? {
    guard let header = Header(frame) else { return nil }
    guard
      let plain = HandoffCrypto.open(
        Array(frame[headerBytes...]), ad: Array(frame[0..<headerBytes]), nonce: header.nonce,
        key: key)
    else { return nil }
    if header.marker == controlMarker ? plain.count > window / 8 : header.flags != 0 { return nil }
    return (header, plain)
  }

  private let sendKey: [UInt8]
  private let receiveKey: [UInt8]
  /// The largest plaintext a data frame carries on this channel.
  let largestPayload: Int
  /// The plaintext size sealed now (halved after a fault).
  private(set) var payloadSize: Int
  private var clean = 0

  // Sending.
  private var nextNumber: UInt64 = 0
  private var unacknowledged: [(number: UInt64, frame: [UInt8])] = []
  private var unacknowledgedBytes = 0
  /// The peer needs data frames from this number on.
  private var peerAck: UInt64 = 0
  private var nextSerial: UInt64 = 0
  private var resendDue: Instant?
  private var timeouts = 0
  private var lastResend: (from: UInt64, at: Instant)?

  // Receiving.
  private var expected: UInt64 = 0
  /// Data frames that arrived past a gap, by number.
  private var held: [UInt64: [UInt8]] = [:]
  private var lastPeerSerial: UInt64?
  /// Data frames taken since our last frame told the peer.
  private var unacknowledgedByUs = 0
  private var ackDue: Instant?
  private var lastRequest: (ack: UInt64, at: Instant)?
  private var badFrames = 0
  private(set) var counts = Counts()

  // The handshake's tail (PROTOCOL.md section 4, "Repeats").
  /// The initiator's M2 and M3: M2 again is answered with M3 again.
  private let handshakeAnswer: (question: [UInt8], answer: [UInt8])?
  private var handshakeAnswersLeft = HandshakeRepeater.limit
  /// Handshake messages received after the handshake, all dropped.
  private var handshakeStrays = 0

  init(
    sendKey: [UInt8], receiveKey: [UInt8], messageSize: Int,
    handshakeAnswer: (question: [UInt8], answer: [UInt8])? = nil
  ) {
    self.sendKey = sendKey
    self.receiveKey = receiveKey
    self.handshakeAnswer = handshakeAnswer
    largestPayload = max(Self.smallestPayload, messageSize - Self.overhead)
    payloadSize = largestPayload
  }

  /// When `expire` is due, if anything waits for a time.
  var deadline: Instant? {
    switch (ackDue, resendDue) {
    case (let a?, let b?): min(a, b)
    case (let a?, nil): a
    case (nil, let b?): b
    case (nil, nil): nil
    }
  }

  /// Whether every data frame sent has been acknowledged.
  var allAcknowledged: Bool { unacknowledged.isEmpty }

  /// Seals `plaintext` (at most `largestPayload` bytes) as the next data
  /// frame, kept until the peer acknowledges it; nil (and the channel
  /// fails) once a peer that acknowledges nothing left too much to keep.
  mutating func sealData(_ plaintext: [UInt8], report: FlowReport, now: Instant) -> [UInt8]? {
    precondition(plaintext.count <= largestPayload)
    guard unacknowledgedBytes <= Self.maxUnacknowledgedBytes else { return nil }
    let header = Header(
      marker: Self.dataMarker, number: nextNumber, ack: expected, report: report, flags: 0)
    let frame = Self.seal(plaintext, header: header, key: sendKey)
    nextNumber &+= 1
    unacknowledged.append((header.number, frame))
    unacknowledgedBytes += frame.count
    if resendDue == nil { resendDue = now + Self.resendTimeout }
    // The frame tells the peer what we took.
    unacknowledgedByUs = 0
    ackDue = nil
    return frame
  }

  /// One frame from the peer.
  mutating func receive(_ frame: [UInt8], report: FlowReport, now: Instant) -> Actions {
    var actions = Actions()
    if let first = frame.first, Self.handshakeTypes.contains(first) {
      // The peer repeats a handshake message: ours to it was lost. Not a
      // frame, so neither damage nor a gap.
      handshakeStrays += 1
      if handshakeStrays > Self.maxBadFrames {
        actions.failure = "\(handshakeStrays) handshake messages after the handshake"
        return actions
      }
      if let (question, answer) = handshakeAnswer, frame == question, handshakeAnswersLeft > 0 {
        handshakeAnswersLeft -= 1
        actions.transmit.append(answer)
      }
      return actions
    }
    guard let (header, plain) = Self.open(frame, key: receiveKey) else {
      // Damaged below us (or not from the peer): whatever it was, ask for
      // what we need next.
      counts.dropped += 1
      badFrames += 1
      if badFrames > Self.maxBadFrames {
        actions.failure = "\(badFrames) frames in a row do not verify"
        return actions
      }
      requestResend(report: report, now: now, into: &actions)
      return actions
    }
    badFrames = 0
    if header.marker == Self.controlMarker {
      // Serials only grow: an older control frame says nothing new.
      if let last = lastPeerSerial, header.number <= last { return actions }
      lastPeerSerial = header.number
    }
    actions.peerReport = header.report
    if let failure = acknowledge(header.ack, now: now) {
      actions.failure = failure
      return actions
    }
    if header.marker == Self.controlMarker {
      if header.flags & Self.resendFlag != 0 {
        resend(from: header.ack, holding: plain, report: report, now: now, into: &actions)
      }
      return actions
    }
    if header.number == expected {
      actions.deliver.append(plain)
      expected &+= 1
      while let next = held.removeValue(forKey: expected) {
        actions.deliver.append(next)
        expected &+= 1
      }
      unacknowledgedByUs += actions.deliver.count
      lastRequest = nil
      if !held.isEmpty {
        // Another gap behind the one just filled.
        requestResend(report: report, now: now, into: &actions)
      } else if unacknowledgedByUs >= Self.ackEvery {
        actions.transmit.append(control(flags: 0, report: report))
      } else if ackDue == nil {
        ackDue = now + Self.ackDelay
      }
    } else if header.number < expected || held[header.number] != nil {
      // Sent again though we had it: our acknowledgement may have been lost.
      counts.dropped += 1
      if ackDue == nil { ackDue = now + Self.ackDelay }
    } else {
      // Past a gap: held (within the window), and what is missing asked for.
      if header.number - expected <= UInt64(Self.window) {
        held[header.number] = plain
      } else {
        counts.dropped += 1
      }
      requestResend(report: report, now: now, into: &actions)
    }
    return actions
  }

  /// Time passed: a delayed acknowledgement, or frames the peer has not
  /// acknowledged for `resendTimeout`: the oldest is sent again (the peer
  /// then asks for the rest, if it lost them). `canSend`: a frame would go
  /// out without waiting for the peer's flow control; while it would wait,
  /// the peer has not taken what it has, so nothing was lost yet.
  mutating func expire(report: FlowReport, canSend: Bool, now: Instant) -> Actions {
    var actions = Actions()
    if let due = ackDue, now >= due {
      actions.transmit.append(control(flags: 0, report: report))
    }
    if let due = resendDue, now >= due {
      guard let oldest = unacknowledged.first else {
        resendDue = nil
        return actions
      }
      resendDue = now + Self.resendTimeout
      guard canSend else { return actions }
      timeouts += 1
      if timeouts > Self.maxTimeouts {
        actions.failure =
          "the peer acknowledged none of our frames for"
          + " \((Self.resendTimeout * Self.maxTimeouts).components.seconds) s"
        return actions
      }
      actions.resend.append(oldest.frame)
      counts.resent += 1
      shrink()
      // The peer may have no credits left to acknowledge with: its frames
      // lost below L2CAP spent them, and we never saw those frames.
      actions.starved = true
      // A frame sent again carries the report it was sealed with; this
      // one tells the peer what our flow control has done since.
      actions.transmit.append(control(flags: 0, report: report))
    }
    return actions
  }

  /// The peer took every data frame below `ack`.
  private mutating func acknowledge(_ ack: UInt64, now: Instant) -> String? {
    guard ack <= nextNumber else {
      return "it acknowledged frame \(ack), which was never sent"
    }
    guard ack > peerAck else { return nil }
    let taken = Int(ack - peerAck)
    let drop = min(taken, unacknowledged.count)
    for entry in unacknowledged[0..<drop] { unacknowledgedBytes -= entry.frame.count }
    unacknowledged.removeFirst(drop)
    peerAck = ack
    timeouts = 0
    resendDue = unacknowledged.isEmpty ? nil : now + Self.resendTimeout
    clean += taken
    if clean >= Self.growAfter {
      clean = 0
      payloadSize = min(largestPayload, payloadSize * 2)
    }
    return nil
  }

  /// Sends again every kept frame from `from` on within the window that the
  /// peer's bitmap `holding` does not show (once per half timeout for the
  /// same `from`), and seals smaller frames from now on.
  private mutating func resend(
    from: UInt64, holding: [UInt8], report: FlowReport, now: Instant,
    into actions: inout Actions
  ) {
    if let last = lastResend, last.from == from, now - last.at < Self.resendTimeout / 2 { return }
    lastResend = (from, now)
    func held(_ number: UInt64) -> Bool {
      guard number > from else { return false }
      let bit = number - from - 1
      guard bit < UInt64(holding.count * 8) else { return false }
      return holding[Int(bit / 8)] & (1 << (bit % 8)) != 0
    }
    let frames = unacknowledged.filter {
      $0.number >= from && $0.number - from <= UInt64(Self.window) && !held($0.number)
    }.map(\.frame)
    guard !frames.isEmpty else { return }
    actions.resend += frames
    counts.resent += frames.count
    shrink()
    if actions.transmit.isEmpty { actions.transmit.append(control(flags: 0, report: report)) }
    resendDue = now + Self.resendTimeout
  }

  private mutating func shrink() {
    clean = 0
    payloadSize = max(Self.smallestPayload, payloadSize / 2)
  }

  private mutating func requestResend(report: FlowReport, now: Instant, into actions: inout Actions)
  {
    if let last = lastRequest, last.ack == expected {
      if now - last.at < Self.resendTimeout / 2 { return }
      actions.starved = true
    }
    lastRequest = (expected, now)
    counts.requests += 1
    actions.transmit.append(control(flags: Self.resendFlag, report: report))
  }

  /// A control frame with our acknowledgement.
  private mutating func control(flags: UInt8, report: FlowReport) -> [UInt8] {
    let header = Header(
      marker: Self.controlMarker, number: nextSerial, ack: expected, report: report, flags: flags)
    nextSerial &+= 1
    unacknowledgedByUs = 0
    ackDue = nil
    return Self.seal(holding, header: header, key: sendKey)
  }

  /// The bitmap of the data frames held past `expected`, trailing zero
  /// bytes left out.
  private var holding: [UInt8] {
    guard !held.isEmpty else { return [] }
    var bitmap = [UInt8](repeating: 0, count: Self.window / 8)
    for number in held.keys {
      let bit = number &- expected &- 1
      guard bit < UInt64(Self.window) else { continue }
      bitmap[Int(bit / 8)] |= 1 << (bit % 8)
    }
    while bitmap.last == 0 { bitmap.removeLast() }
    return bitmap
  }
}
