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
/// - A kept frame larger than the smallest is never sent again whole: it
///   is split once into *parts* of the smallest size, each sealed on its own
///   (marker `partMarker`), and the receiver joins them. A request shows
///   which parts of the frame it needs next arrived, so only the parts a
///   fault hit are sent again: a frame sealed large before the first fault
///   would otherwise meet a fault on nearly every try.
/// - Each side updates the key it seals with about every
///   `keyUpdateInterval` (a *key phase*, two bits of the marker byte), so a
///   link that runs for days does not keep one key: a key a thief takes
///   opens at most the last two phases it captured. A side moves on only
///   once the peer acknowledged everything it sealed in the phase before,
///   so a receiver needs its current key, the one before it, and the next.
package struct FrameRecovery: Sendable {
  package typealias Instant = ContinuousClock.Instant

  package static let dataMarker: UInt8 = 0x11
  package static let controlMarker: UInt8 = 0x12
  package static let partMarker: UInt8 = 0x13
  /// The marker byte's two high bits: the key phase, modulo 4.
  static let phaseShift: UInt8 = 6
  /// How long a side seals with one key at most (PROTOCOL.md section 5,
  /// "Key updates").
  package static let keyUpdateInterval: Duration = .seconds(3600)
  /// marker, u64 number, u64 ack, u32 frames sent, u32 credits granted, u8 flags.
  static let headerBytes = 26
  /// Header and AEAD tag.
  static let overhead = headerBytes + HandoffCrypto.aeadTagBytes
  /// First bytes of M1, M2 and M3 (section 4), which no frame starts with.
  static let handshakeTypes: ClosedRange<UInt8> = 0x01...0x03
  /// Control frame flag: send every data frame from `ack` again.
  package static let resendFlag: UInt8 = 0x01
  /// A part's plaintext: `u8 count || bytes`; its header's flags byte is
  /// its index (0 to count - 1).
  static let partCounts: ClosedRange<Int> = 2...255
  /// The bytes a receiver keeps in parts of frames not yet whole; parts
  /// beyond it are dropped (and sent again when asked for).
  static let maxPartBytes = 1 << 20
  /// Bytes of a parts bitmap: one bit for each of up to 255 parts.
  static let partBitmapBytes = 32
  /// A control frame's plaintext at most (`Holding`): the bitmaps of the
  /// frames held and of the parts of as many frames as fit.
  static let maxControlPlaintext = 512
  /// Frames and parts sent again for one request or timeout at most: the
  /// peer asks again for the rest, and a burst far past its credits would
  /// only wait behind them.
  static let resendBudget = 128

  /// Data frames a receiver holds past a gap, so that only what is missing
  /// is sent again; a control frame's `Holding` shows those it holds, and
  /// the parts it holds of frames not yet whole.
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
  package struct Header: Equatable, Sendable {
    /// The kind: `dataMarker`, `controlMarker` or `partMarker`.
    var marker: UInt8
    /// The sender's key phase modulo 4, in the marker byte's high bits.
    var phase: UInt8 = 0
    var number: UInt64
    var ack: UInt64
    var report: FlowReport
    var flags: UInt8

    var bytes: [UInt8] {
      var w = ByteWriter()
      w.u8(marker | phase << FrameRecovery.phaseShift)
      w.u64(number)
      w.u64(ack)
      w.u32(report.framesSent)
      w.u32(report.creditsGranted)
      w.u8(flags)
      return w.bytes
    }

    /// Data frames, control frames and parts draw nonces from separate
    /// spaces; a part's also holds its index.
    var nonce: [UInt8] {
      var w = ByteWriter()
      w.u64(number)
      switch marker {
      case FrameRecovery.controlMarker: w.u8(1)
      case FrameRecovery.partMarker:
        w.u8(2)
        w.u8(flags)
      default: w.u8(0)
      }
      return w.bytes + [UInt8](repeating: 0, count: 24 - w.bytes.count)
    }

    package init(
      marker: UInt8, phase: UInt8 = 0, number: UInt64, ack: UInt64, report: FlowReport,
      flags: UInt8
    ) {
      self.marker = marker
      self.phase = phase & 3
      self.number = number
      self.ack = ack
      self.report = report
      self.flags = flags
    }

    init?(_ frame: [UInt8]) {
      guard frame.count >= FrameRecovery.overhead else { return nil }
      var r = WireReader(Array(frame[0..<FrameRecovery.headerBytes]))
      guard let byte = try? r.u8(), let number = try? r.u64(), let ack = try? r.u64(),
        let sent = try? r.u32(), let granted = try? r.u32(), let flags = try? r.u8()
      else { return nil }
      let marker = byte & ~(3 << FrameRecovery.phaseShift)
      guard
        [FrameRecovery.dataMarker, FrameRecovery.controlMarker, FrameRecovery.partMarker]
          .contains(marker)
      else { return nil }
      self.init(
        marker: marker, phase: byte >> FrameRecovery.phaseShift, number: number, ack: ack,
        report: FlowReport(framesSent: sent, creditsGranted: granted), flags: flags)
    }
  }

  /// What the driver does after a step.
  package struct Actions: Sendable {
    /// Plaintexts of data frames, in order.
    package var deliver: [[UInt8]] = []
    /// Control frames to send.
    var transmit: [[UInt8]] = []
    /// Data frames and parts to send again, in order, after `transmit`.
    var resend: [[UInt8]] = []
    /// The peer's flow report from a frame that opened.
    var peerReport: FlowReport?
    /// The channel cannot go on: close it and tell the layer above.
    package var failure: String?
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

  /// What a control frame says its sender holds past `ack`: its
  /// plaintext is empty (nothing), or `u8 n || frames || parts...` with
  /// `frames` the n-byte bitmap of data frames held (bit i of byte i / 8:
  /// frame `ack + 1 + i`, at most `window / 8` bytes), then for each frame
  /// of which some parts arrived, in order, `u16 offset || u8 m || bitmap`:
  /// the frame `ack + offset` and the m-byte bitmap (1 to 32 bytes) of its
  /// parts held (bit i: part i).
  struct Holding: Equatable, Sendable {
    var frames: [UInt8] = []
    /// Parts held, by frame offset from `ack`.
    var parts: [UInt16: [UInt8]] = [:]

    init(frames: [UInt8] = [], parts: [UInt16: [UInt8]] = [:]) {
      self.frames = frames
      self.parts = parts
    }

    init?(_ plain: [UInt8]) {
      guard !plain.isEmpty else { return }
      guard plain.count <= FrameRecovery.maxControlPlaintext else { return nil }
      var r = WireReader(plain)
      guard let n = try? r.u8(), Int(n) <= FrameRecovery.window / 8,
        let frames = try? r.take(Int(n))
      else { return nil }
      self.frames = frames
      var last: UInt16?
      while !r.isAtEnd {
        guard let offset = try? r.u16(), let m = try? r.u8(),
          Int(offset) <= FrameRecovery.window, last.map({ offset > $0 }) ?? true,
          (1...FrameRecovery.partBitmapBytes).contains(Int(m)), let bitmap = try? r.take(Int(m))
        else { return nil }
        parts[offset] = bitmap
        last = offset
      }
    }

    var bytes: [UInt8] {
      guard !frames.isEmpty || !parts.isEmpty else { return [] }
      var w = ByteWriter()
      w.u8(UInt8(frames.count))
      w.raw(frames)
      for (offset, bitmap) in parts.sorted(by: { $0.key < $1.key }) {
        w.u16(offset)
        w.u8(UInt8(bitmap.count))
        w.raw(bitmap)
      }
      return w.bytes
    }

    static func bit(_ i: UInt64, of bitmap: [UInt8]) -> Bool {
      guard i < UInt64(bitmap.count) * 8 else { return false }
      return bitmap[Int(i / 8)] & (1 << (i % 8)) != 0
    }

    /// A bitmap of `bits`, trailing zero bytes left out.
    static func bitmap(_ bits: some Sequence<Int>, size: Int) -> [UInt8] {
      var bitmap = [UInt8](repeating: 0, count: size)
      for bit in bits where bit >= 0 && bit < size * 8 { bitmap[bit / 8] |= 1 << (bit % 8) }
      while bitmap.last == 0 { bitmap.removeLast() }
      return bitmap
    }
  }

  package static func seal(_ plaintext: [UInt8], header: Header, key: [UInt8]) -> [UInt8] {
    let head = header.bytes
    return head + HandoffCrypto.seal(plaintext, ad: head, nonce: header.nonce, key: key)
  }

  /// The header and plaintext of `frame` if it opens under `key`.
  static func open(_ frame: [UInt8], key: [UInt8]) -> (Header, [UInt8])? {
    guard let header = Header(frame) else { return nil }
    return open(frame, header: header, key: key)
  }

  /// The key of the phase after the one `key` seals: BLAKE2b-256 keyed with
  /// `key` of `"baton-key-update-1"` (PROTOCOL.md section 5, "Key updates").
  package static func nextKey(_ key: [UInt8]) -> [UInt8] {
    HandoffCrypto.hash(Array("baton-key-update-1".utf8), key: key)
  }

  private static func open(_ frame: [UInt8], header: Header, key: [UInt8]) -> (Header, [UInt8])? {
    guard
      let plain = HandoffCrypto.open(
        Array(frame[headerBytes...]), ad: Array(frame[0..<headerBytes]), nonce: header.nonce,
        key: key)
    else { return nil }
    switch header.marker {
    case controlMarker:
      guard Holding(plain) != nil else { return nil }
    case partMarker:
      guard let count = plain.first, partCounts.contains(Int(count)), header.flags < count,
        plain.count > 1
      else { return nil }
    default:
      guard header.flags == 0 else { return nil }
    }
    return (header, plain)
  }

  /// The key frames are sealed with now, its phase, and when it began.
  private var sendKey: [UInt8]
  private var sendPhase: UInt64 = 0
  private var sendPhaseBegan: Instant?
  /// The key the peer's frames open with now, its phase, and the key of
  /// the phase before (frames sealed then may still be sent again).
  private var receiveKey: [UInt8]
  private var receivePhase: UInt64 = 0
  private var previousReceiveKey: [UInt8]?
  /// The largest plaintext a data frame carries on this channel.
  package let largestPayload: Int
  /// The plaintext size sealed now (halved after a fault).
  private(set) var payloadSize: Int
  private var clean = 0

  /// A data frame kept until the peer acknowledges it; once it is sent
  /// again in parts, only its parts are kept and go out.
  private struct Kept {
    var number: UInt64
    /// The key phase its frame, or its parts once split, were sealed in.
    var phase: UInt64
    var frame: [UInt8]
    var plaintext: [UInt8]
    var parts: [[UInt8]]?
    var bytes: Int { frame.count + plaintext.count + (parts?.reduce(0) { $0 + $1.count } ?? 0) }
  }

  // Sending.
  private var nextNumber: UInt64 = 0
  private var unacknowledged: [Kept] = []
  private var unacknowledgedBytes = 0
  /// The peer needs data frames from this number on.
  private var peerAck: UInt64 = 0
  /// The parts the peer said it holds past `peerAck`.
  private var peerParts: [UInt16: [UInt8]] = [:]
  private var nextSerial: UInt64 = 0
  private var resendDue: Instant?
  private var timeouts = 0
  private var lastResend: (from: UInt64, at: Instant)?

  // Receiving.
  private var expected: UInt64 = 0
  /// Data frames that arrived past a gap, by number.
  private var held: [UInt64: [UInt8]] = [:]
  /// Parts of data frames not yet whole, by number.
  private var partial: [UInt64: Partial] = [:]
  private var partialBytes = 0
  private var lastPeerSerial: UInt64?
  /// Data frames taken since our last frame told the peer.
  private var unacknowledgedByUs = 0
  private var ackDue: Instant?
  private var lastRequest: (ack: UInt64, at: Instant)?
  /// A request held back by the half timeout, sent then if still needed.
  private var requestDue: Instant?
  private var badFrames = 0
  private(set) var counts = Counts()

  private struct Partial {
    var count: Int
    var parts: [Int: [UInt8]] = [:]
    var bytes = 0
  }

  // The handshake's tail (PROTOCOL.md section 4, "Repeats").
  /// The initiator's M2 and M3: M2 again is answered with M3 again.
  private let handshakeAnswer: (question: [UInt8], answer: [UInt8])?
  private var handshakeAnswersLeft = HandshakeRepeater.limit
  /// Handshake messages received after the handshake, all dropped.
  private var handshakeStrays = 0

  package init(
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
  package var deadline: Instant? { [ackDue, resendDue, requestDue].compactMap { $0 }.min() }

  /// Whether every data frame sent has been acknowledged.
  package var allAcknowledged: Bool { unacknowledged.isEmpty }

  /// Seals `plaintext` (at most `largestPayload` bytes) as the next data
  /// frame, kept until the peer acknowledges it; nil (and the channel
  /// fails) once a peer that acknowledges nothing left too much to keep.
  package mutating func sealData(_ plaintext: [UInt8], report: FlowReport, now: Instant) -> [UInt8]? {
    precondition(plaintext.count <= largestPayload)
    guard unacknowledgedBytes <= Self.maxUnacknowledgedBytes else { return nil }
    updateSendKeyIfDue(now: now)
    let header = Header(
      marker: Self.dataMarker, phase: UInt8(truncatingIfNeeded: sendPhase), number: nextNumber,
      ack: expected, report: report, flags: 0)
    let frame = Self.seal(plaintext, header: header, key: sendKey)
    nextNumber &+= 1
    let kept = Kept(number: header.number, phase: sendPhase, frame: frame, plaintext: plaintext)
    unacknowledged.append(kept)
    unacknowledgedBytes += kept.bytes
    if resendDue == nil { resendDue = now + Self.resendTimeout }
    // The frame tells the peer what we took.
    unacknowledgedByUs = 0
    ackDue = nil
    return frame
  }

  /// One frame from the peer.
  package mutating func receive(_ frame: [UInt8], report: FlowReport, now: Instant) -> Actions {
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
    guard let (header, plain) = openFromPeer(frame) else {
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
    switch header.marker {
    case Self.controlMarker:
      // `open` checked that it parses.
      let holding = Holding(plain) ?? Holding()
      if header.ack == peerAck { peerParts = holding.parts }
      if header.flags & Self.resendFlag != 0 {
        resend(from: header.ack, holding: holding, report: report, now: now, into: &actions)
      }
    case Self.partMarker:
      takePart(
        number: header.number, index: Int(header.flags), plain, report: report, now: now,
        into: &actions)
    default:
      take(number: header.number, plain, report: report, now: now, into: &actions)
    }
    return actions
  }

  /// A data frame's plaintext, arrived whole or joined from its parts.
  private mutating func take(
    number: UInt64, _ plain: [UInt8], report: FlowReport, now: Instant, into actions: inout Actions
  ) {
    if number == expected {
      dropParts(of: number)
      actions.deliver.append(plain)
      expected &+= 1
      while let next = held.removeValue(forKey: expected) {
        actions.deliver.append(next)
        expected &+= 1
      }
      unacknowledgedByUs += actions.deliver.count
      lastRequest = nil
      if gap {
        // Another gap behind the one just filled.
        requestResend(report: report, now: now, into: &actions)
      } else if unacknowledgedByUs >= Self.ackEvery {
        actions.transmit.append(control(flags: 0, report: report))
      } else if ackDue == nil {
        ackDue = now + Self.ackDelay
      }
    } else if number < expected || held[number] != nil {
      // Sent again though we had it: our acknowledgement may have been lost.
      counts.dropped += 1
      if ackDue == nil { ackDue = now + Self.ackDelay }
    } else {
      // Past a gap: held (within the window), and what is missing asked for.
      if number - expected <= UInt64(Self.window) {
        dropParts(of: number)
        held[number] = plain
      } else {
        counts.dropped += 1
      }
      requestResend(report: report, now: now, into: &actions)
    }
  }

  /// Part `index` of data frame `number` (`plain` = u8 count || bytes):
  /// kept until the frame is whole, then taken as the frame.
  private mutating func takePart(
    number: UInt64, index: Int, _ plain: [UInt8], report: FlowReport, now: Instant,
    into actions: inout Actions
  ) {
    let count = Int(plain[0])
    let bytes = plain.count - 1
    guard number >= expected, held[number] == nil, partial[number]?.parts[index] == nil else {
      // A part of a frame we have, or one we have of a frame we lack.
      counts.dropped += 1
      if number < expected || held[number] != nil, ackDue == nil { ackDue = now + Self.ackDelay }
      return
    }
    guard number - expected <= UInt64(Self.window), partial[number].map({ $0.count == count }) ?? true,
      partialBytes + bytes <= Self.maxPartBytes
    else {
      // Beyond what we hold, or not the split its first part announced.
      counts.dropped += 1
      requestResend(report: report, now: now, into: &actions)
      return
    }
    var frame = partial[number] ?? Partial(count: count)
    frame.parts[index] = Array(plain[1...])
    frame.bytes += bytes
    partialBytes += bytes
    partial[number] = frame
    if frame.parts.count == count {
      // Every index is below `count` (`open`), so all are there.
      let whole = (0..<count).compactMap { frame.parts[$0] }.flatMap { $0 }
      take(number: number, whole, report: report, now: now, into: &actions)
    } else if number > expected || (0..<index).contains(where: { frame.parts[$0] == nil }) {
      // A gap before this part, or before this frame.
      requestResend(report: report, now: now, into: &actions)
    }
  }

  private mutating func dropParts(of number: UInt64) {
    if let frame = partial.removeValue(forKey: number) { partialBytes -= frame.bytes }
  }

  /// Time passed: a delayed acknowledgement, or frames the peer has not
  /// acknowledged for `resendTimeout`: the oldest is sent again (the peer
  /// then asks for the rest, if it lost them). `canSend`: a frame would go
  /// out without waiting for the peer's flow control; while it would wait,
  /// the peer has not taken what it has, so nothing was lost yet.
  package mutating func expire(report: FlowReport, canSend: Bool, now: Instant) -> Actions {
    var actions = Actions()
    if let due = requestDue, now >= due {
      requestDue = nil
      if gap { requestResend(report: report, now: now, into: &actions) }
    }
    if let due = ackDue, now >= due {
      actions.transmit.append(control(flags: 0, report: report))
    }
    if let due = resendDue, now >= due {
      guard !unacknowledged.isEmpty else {
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
      shrink()
      let again = sendAgain(0, holdingParts: peerParts[0] ?? [], report: report)
      actions.resend += again
      counts.resent += again.count
      // The peer may have no credits left to acknowledge with: its frames
      // lost below L2CAP spent them, and we never saw those frames.
      actions.starved = true
      // A frame sent again carries the report it was sealed with; this
      // one tells the peer what our flow control has done since.
      actions.transmit.append(control(flags: 0, report: report))
    }
    return actions
  }

  /// What goes out to send kept frame `i` again: the frame if it is no
  /// larger than the smallest, else its parts (split and sealed the first
  /// time: `smallestPayload` bytes each, count byte included) less those
  /// in the peer's bitmap `holdingParts`. Parts are sealed once, so a nonce
  /// never seals other bytes; they are as small as frames get, since a
  /// frame sent again has met a fault already.
  private mutating func sendAgain(_ i: Int, holdingParts: [UInt8], report: FlowReport) -> [[UInt8]] {
    if unacknowledged[i].parts == nil {
      let kept = unacknowledged[i]
      let size = max(Self.smallestPayload - 1, (kept.plaintext.count + 254) / 255)
      let count = (kept.plaintext.count + size - 1) / size
      guard kept.plaintext.count > Self.smallestPayload, Self.partCounts.contains(count) else {
        return [kept.frame]
      }
      let parts = (0..<count).map { index in
        let bytes = kept.plaintext[(index * size)..<min(kept.plaintext.count, (index + 1) * size)]
        let header = Header(
          marker: Self.partMarker, phase: UInt8(truncatingIfNeeded: sendPhase),
          number: kept.number, ack: expected, report: report, flags: UInt8(index))
        return Self.seal([UInt8(count)] + bytes, header: header, key: sendKey)
      }
      // Never sent whole again: only the parts are kept.
      unacknowledged[i] = Kept(
        number: kept.number, phase: sendPhase, frame: [], plaintext: [], parts: parts)
      unacknowledgedBytes += unacknowledged[i].bytes - kept.bytes
    }
    let parts = unacknowledged[i].parts ?? []
    return parts.indices.filter { !Holding.bit(UInt64($0), of: holdingParts) }.map { parts[$0] }
  }

  /// The peer took every data frame below `ack`.
  private mutating func acknowledge(_ ack: UInt64, now: Instant) -> String? {
    guard ack <= nextNumber else {
      return "it acknowledged frame \(ack), which was never sent"
    }
    guard ack > peerAck else { return nil }
    let taken = Int(ack - peerAck)
    let drop = min(taken, unacknowledged.count)
    for kept in unacknowledged[0..<drop] { unacknowledgedBytes -= kept.bytes }
    unacknowledged.removeFirst(drop)
    peerAck = ack
    peerParts = [:]
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
  /// peer's bitmap does not show held, or of a frame sent in parts the
  /// parts it does not show, up to `resendBudget` of them (once per half
  /// timeout for the same `from`); seals smaller frames from now on.
  private mutating func resend(
    from: UInt64, holding: Holding, report: FlowReport, now: Instant,
    into actions: inout Actions
  ) {
    if let last = lastResend, last.from == from, now - last.at < Self.resendTimeout / 2 { return }
    lastResend = (from, now)
    let wanted = unacknowledged.indices.filter {
      let number = unacknowledged[$0].number
      return number >= from && number - from <= UInt64(Self.window)
        && !(number > from && Holding.bit(number - from - 1, of: holding.frames))
    }
    guard !wanted.isEmpty else { return }
    shrink()
    var budget = Self.resendBudget
    for i in wanted where budget > 0 {
      let offset = UInt16(unacknowledged[i].number - from)
      let again = sendAgain(i, holdingParts: holding.parts[offset] ?? [], report: report)
        .prefix(budget)
      budget -= again.count
      actions.resend += again
      counts.resent += again.count
    }
    if actions.transmit.isEmpty { actions.transmit.append(control(flags: 0, report: report)) }
    resendDue = now + Self.resendTimeout
  }

  // MARK: Key updates

  /// Moves to the next send key once the current one has sealed for
  /// `keyUpdateInterval` and the peer acknowledged every frame and part
  /// sealed in the phase before (the peer keeps only that phase's key).
  private mutating func updateSendKeyIfDue(now: Instant) {
    guard let began = sendPhaseBegan else {
      sendPhaseBegan = now
      return
    }
    guard now - began >= Self.keyUpdateInterval,
      unacknowledged.allSatisfy({ $0.phase == sendPhase })
    else { return }
    // The old key is zeroed, not just dropped: its bytes would stay in the
    // freed heap, where a copy of the agent's memory could find them.
    var old = sendKey
    sendKey = Self.nextKey(sendKey)
    HandoffCrypto.wipe(&old)
    sendPhase &+= 1
    sendPhaseBegan = now
  }

  /// A frame of the peer's, opened with the key of the phase it names: the
  /// current one, the one before, or the next (which then becomes current,
  /// and the oldest key is forgotten). Phases further apart never open.
  private mutating func openFromPeer(_ frame: [UInt8]) -> (Header, [UInt8])? {
    guard let header = Header(frame) else { return nil }
    let current = UInt8(truncatingIfNeeded: receivePhase) & 3
    switch header.phase {
    case current:
      return Self.open(frame, header: header, key: receiveKey)
    case (current &+ 1) & 3:
      var next = Self.nextKey(receiveKey)
      guard let opened = Self.open(frame, header: header, key: next) else {
        HandoffCrypto.wipe(&next)
        return nil
      }
      // The key two phases back is forgotten: zeroed, as the send side's.
      HandoffCrypto.wipe(&previousReceiveKey)
      previousReceiveKey = receiveKey
      receiveKey = next
      receivePhase &+= 1
      return opened
    case (current &+ 3) & 3:
      guard let previous = previousReceiveKey else { return nil }
      return Self.open(frame, header: header, key: previous)
    default:
      return nil
    }
  }

  /// The key phases this side seals and opens in (for tests).
  package var keyPhases: (send: UInt64, receive: UInt64) { (sendPhase, receivePhase) }

  /// Zeroes the keys, when the channel is gone: after this nothing seals or
  /// opens, and no copy of the agent's memory holds the link's keys.
  mutating func forgetKeys() {
    HandoffCrypto.wipe(&sendKey)
    HandoffCrypto.wipe(&receiveKey)
    HandoffCrypto.wipe(&previousReceiveKey)
  }

  private mutating func shrink() {
    clean = 0
    payloadSize = max(Self.smallestPayload, payloadSize / 2)
  }

  /// Frames or parts arrived past one we lack.
  private var gap: Bool { !held.isEmpty || partial[expected] != nil }

  /// Asks for what we lack, at once or, within half a timeout of asking
  /// for the same, when that has passed.
  private mutating func requestResend(report: FlowReport, now: Instant, into actions: inout Actions)
  {
    if let last = lastRequest, last.ack == expected {
      if now - last.at < Self.resendTimeout / 2 {
        if requestDue == nil { requestDue = last.at + Self.resendTimeout / 2 }
        return
      }
      actions.starved = true
    }
    requestDue = nil
    lastRequest = (expected, now)
    counts.requests += 1
    // A fault on the way here: ours would meet them too.
    shrink()
    actions.transmit.append(control(flags: Self.resendFlag, report: report))
  }

  /// A control frame with our acknowledgement.
  private mutating func control(flags: UInt8, report: FlowReport) -> [UInt8] {
    let header = Header(
      marker: Self.controlMarker, phase: UInt8(truncatingIfNeeded: sendPhase), number: nextSerial,
      ack: expected, report: report, flags: flags)
    nextSerial &+= 1
    unacknowledgedByUs = 0
    ackDue = nil
    return Self.seal(holding.bytes, header: header, key: sendKey)
  }

  /// What we hold past `expected`: whole data frames, and the parts of as
  /// many frames as fit in a control frame no larger than the data frames
  /// we seal now (a large one would meet the faults that small frames
  /// avoid); a frame or part left out is only sent again.
  private var holding: Holding {
    var holding = Holding(
      frames: Array(
        Holding.bitmap(
          held.keys.compactMap { $0 > expected ? Int(exactly: $0 - expected - 1) : nil },
          size: Self.window / 8
        ).prefix(payloadSize - 1)))
    var room = min(Self.maxControlPlaintext, payloadSize) - 1 - holding.frames.count
    for (number, frame) in partial.sorted(by: { $0.key < $1.key }) {
      guard number >= expected, let offset = UInt16(exactly: number - expected) else { continue }
      let bitmap = Holding.bitmap(frame.parts.keys, size: Self.partBitmapBytes)
      guard !bitmap.isEmpty, room >= 3 + bitmap.count else { break }
      room -= 3 + bitmap.count
      holding.parts[offset] = bitmap
    }
    return holding
  }
}
