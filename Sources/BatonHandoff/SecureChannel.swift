import BatonSystem
import Synchronization

/// Who a handshake proved the peer to be: its device key (the device id is
/// derived from it) and the name it claims.
package struct PeerIdentity: Sendable, Equatable {
  var key: DevicePublicKey
  var name: String
  var device: DeviceID { key.deviceID }

  package init(key: DevicePublicKey, name: String) {
    self.key = key
    self.name = name
  }
}

/// This agent as a handshake shows it: its device key pair and its name.
package struct LocalIdentity: Sendable {
  let key: DeviceKey
  let name: String
  var peer: PeerIdentity { PeerIdentity(key: key.publicKey, name: name) }
  var device: DeviceID { key.deviceID }

  package init(key: DeviceKey, name: String) {
    self.key = key
    self.name = name
  }
}

/// A `MessageChannel` after the mutual handshake: messages split into frames,
/// each sealed with a per-direction session key and numbered, which the
/// frame layer (`FrameChannel`) sends again when a fault below loses or
/// damages one (PROTOCOL.md, "Handshake" and "Frames and messages").
package struct SecureChannel: Sendable {
  /// Header and tag of a frame, and the kind and more bytes of its plaintext.
  static let frameOverhead = FrameRecovery.overhead + 2

  /// The frame layer over the handshake's channel; closing it closes that.
  let channel: any MessageChannel
  let frames: FrameChannel
  let peer: PeerIdentity
  let peerLabel: String
  /// This device's key, which vouches for its counters in what it sends.
  let deviceKey: DeviceKey
  /// How long a receive waits for each frame; zero waits as long as the
  /// channel is open (a link's reader, whose liveness `HandoffLink` watches).
  var timeout: Duration
  let maxNoteSize: Int
  /// The note being transferred, so that a failure mid-transfer names it.
  var transferring: (activityType: String, path: String)?
  /// Told how much of a message has come while its frames arrive.
  var meter: MessageMeter?

  // MARK: Handshake

  /// The handshake version (M1 and M2 byte 1). Version 2 added the ephemeral
  /// X25519 key agreement; version 5 keyed the summary fingerprints, so
  /// summaries of versions 4 and 5 never match; version 6 numbers frames so
  /// that a lost or damaged one is sent again; version 7 authenticates each side
  /// by its device key (`DeviceKey`); version 8 sends a frame again in
  /// parts, and its control frames show the parts held; version 9 carries
  /// each version's vouchers (`Vouchers`) and moves the frame keys to a new
  /// key phase every hour (`FrameRecovery`); version 10 seals each identity
  /// under a key the ephemeral exchange makes (M1 carries the initiator's
  /// ephemeral key); version 11 sends LINK with the initiator's MEMBERS and
  /// LINK carries the sender's summary root (section 6.2); the beacon's own
  /// format version stays `Beacon.protocolVersion` (PROTOCOL.md section 4,
  /// "Versions").
  package static let handshakeVersion: UInt8 = 11
  package static let hello: UInt8 = 0x01
  static let challengeResponse: UInt8 = 0x02
  static let response: UInt8 = 0x03
  static let labelResponder = Array("baton-auth-R".utf8)
  static let labelInitiator = Array("baton-auth-I".utf8)
  static let labelSession = Array("baton-session-4".utf8)
  static let labelIdentity = Array("baton-identity-1".utf8)
  static let signatureResponder = Array("baton-device-R".utf8)
  static let signatureInitiator = Array("baton-device-I".utf8)
  /// Byte sizes: M1; the headers (everything before the sealed identity) of M2 and M3;
  /// where each ephemeral public key sits in its message (the initiator's in
  /// M1, the responder's in M2).
  package static let helloBytes = 34
  /// The version notice: `0x02, version`.
  static let versionNoticeBytes = 2
  package static let challengeResponseHeaderBytes = 58
  static let responseHeaderBytes = 25
  package static let responderEphemeralRange = 2..<34
  package static let initiatorEphemeralRange = 2..<34

  /// Runs the three-message handshake; throws `HandoffError.authenticationFailed`
  /// (after closing the channel) when the peer does not prove the group key, and
  /// `peerProtocolVersion` or `peerRefusedHello` when it speaks another version.
  static func handshake(
    over channel: any MessageChannel, initiator: Bool, keys: HandoffKeys, me: LocalIdentity,
    peerLabel: String, timeout: Duration, maxNoteSize: Int
  ) async throws -> SecureChannel {
    guard channel.maximumMessageSize >= HandoffLimits.minimumMessageSize else {
      throw HandoffError.channelTooSmall(size: channel.maximumMessageSize)
    }
    func fail(_ reason: String, keyMayDiffer: Bool = true) async -> HandoffError {
      await channel.close()
      return .authenticationFailed(peer: peerLabel, reason: reason, keyMayDiffer: keyMayDiffer)
    }
    // One deadline for the whole handshake, however many repeats it takes.
    let deadline = ContinuousClock.now + timeout
    func next() async throws -> [UInt8] {
      // A timeout names the handshake's whole time, not what was left of it.
      let silence = HandoffError.timeout(peer: peerLabel, seconds: timeout.secondsValue)
      let left = ContinuousClock.now.duration(to: deadline)
      guard left > .zero else { throw silence }
      let m: [UInt8]?
      do {
        m = try await receiveWithTimeout(channel, left, peer: peerLabel)
      } catch HandoffError.timeout {
        throw silence
      }
      guard let m else { throw HandoffError.channelClosed(peer: peerLabel) }
      return m
    }
    // A fault below drops the message it hit instead of failing the channel:
    // a lost or damaged handshake message is sent again (section 4, "Repeats").
    channel.tolerateLoss()
    // This session's ephemeral X25519 key, wiped once the shared secret is made.
    var ephemeralSecret = HandoffCrypto.random(HandoffCrypto.x25519Bytes)
    defer { HandoffCrypto.wipe(&ephemeralSecret) }
    let ephemeralPublic = HandoffCrypto.x25519PublicKey(secret: ephemeralSecret)
    let m1: [UInt8]
    let m2: [UInt8]
    let m3: [UInt8]
    let peer: PeerIdentity
    // The X25519 secret of the two ephemeral keys, wiped on the way out.
    var shared: [UInt8] = []
    defer { HandoffCrypto.wipe(&shared) }
    if initiator {
      m1 = makeHello(ephemeral: ephemeralPublic)
      try await channel.send(m1)
      let repeater = HandshakeRepeater(m1, over: channel)
      var opened: (m2: [UInt8], id: PeerIdentity, shared: [UInt8])?
      // The version an M2 of another version claimed: believed once it comes
      // twice, or the peer ends the channel (an M2 damaged in its version
      // byte comes right the second time).
      var otherVersion: UInt8?
      while opened == nil {
        let answer: [UInt8]
        do {
          answer = try await next()
        } catch HandoffError.channelClosed {
          await repeater.stop()
          if let otherVersion {
            throw HandoffError.peerProtocolVersion(peer: peerLabel, version: otherVersion)
          }
          // A protocol 1 responder closes on a hello of another version, saying
          // nothing. A channel that failed here (data lost or damaged, a stall,
          // a connection timeout) is a radio fault instead: retried as any.
          guard channel.closedByPeer else { throw HandoffError.channelClosed(peer: peerLabel) }
          throw HandoffError.peerRefusedHello(peer: peerLabel)
        } catch {
          await repeater.stop()
          throw error
        }
        if answer.count == versionNoticeBytes, answer[0] == challengeResponse {
          await repeater.stop()
          // A version notice with our own version: the responder read another
          // in our hello, which was damaged on the way; it has closed.
          guard answer[1] != handshakeVersion else { throw HandoffError.channelClosed(peer: peerLabel) }
          await channel.close()
          throw HandoffError.peerProtocolVersion(peer: peerLabel, version: answer[1])
        }
        if answer.count > versionNoticeBytes, answer[0] == challengeResponse,
          answer[1] != handshakeVersion
        {
          if otherVersion != answer[1], await repeater.now() {
            otherVersion = answer[1]
            continue
          }
          await repeater.stop()
          await channel.close()
          throw HandoffError.peerProtocolVersion(peer: peerLabel, version: answer[1])
        }
        // A low-order key is no damage a radio makes: closed at once, before M3.
        guard
          let (opening, dh) = openChallengeResponse(
            answer, hello: m1, ephemeralSecret: ephemeralSecret, keys: keys)
        else {
          await repeater.stop()
          throw await fail(Self.lowOrderFailure, keyMayDiffer: false)
        }
        switch opening {
        case .identity(let id): opened = (answer, id, dh)
        case .sealBroken:
          // Damaged on the way, or sealed under another key: ask again while
          // repeats are left (the responder answers a repeated hello with the
          // same M2), then count it as not opening.
          if await repeater.now() { continue }
          await repeater.stop()
          throw await fail("its challenge response does not verify")
        case .signatureBroken:
          await repeater.stop()
          throw await fail(Self.signatureFailure, keyMayDiffer: false)
        }
      }
      await repeater.stop()
      guard let (answer, id, dh) = opened else { throw HandoffError.channelClosed(peer: peerLabel) }
      m2 = answer
      shared = dh
      // Refused before M3 goes out (PROTOCOL.md section 4): M3 would prove
      // our identity to whoever reflected our own.
      guard id.device != me.device else {
        throw await fail(
          "it claims this agent's own device id (a reflected handshake, or a copy of this"
            + " agent's state directory used by another agent); closed before answering",
          keyMayDiffer: false)
      }
      peer = id
      m3 = makeResponse(
        hello: m1, challengeResponse: m2, nonce: HandoffCrypto.random(24), shared: shared, me: me,
        keys: keys)
      try await channel.send(m3)
    } else {
      // M2 for a hello, and the X25519 secret it was sealed under; nil if the
      // hello's ephemeral key is a low-order point (section 4).
      func answer(_ hello: [UInt8]) -> (m2: [UInt8], shared: [UInt8])? {
        guard
          let dh = HandoffCrypto.x25519(
            secret: ephemeralSecret, peerPublic: Array(hello[initiatorEphemeralRange]))
        else { return nil }
        let m2 = makeChallengeResponse(
          hello: hello, ephemeral: ephemeralPublic, nonce: HandoffCrypto.random(24), shared: dh,
          me: me, keys: keys)
        return (m2, dh)
      }
      // The hello; a damaged one is dropped, since the initiator repeats it.
      var hello: [UInt8]?
      var answered: (m2: [UInt8], shared: [UInt8])?
      var malformed = 0
      while hello == nil {
        let m = try await next()
        if m.count >= 2, m[0] == Self.hello, m[1] != handshakeVersion {
          // Tell the peer our version (a protocol 1 initiator reports it), then close.
          try? await channel.send([challengeResponse, handshakeVersion])
          await channel.close()
          throw HandoffError.peerProtocolVersion(peer: peerLabel, version: m[1])
        }
        if m.count == helloBytes, m[0] == Self.hello {
          guard let a = answer(m) else {
            throw await fail(Self.lowOrderFailure, keyMayDiffer: false)
          }
          hello = m
          answered = a
        } else {
          malformed += 1
          guard malformed <= HandshakeRepeater.limit else {
            throw await fail("malformed hello (not a baton agent?)", keyMayDiffer: false)
          }
        }
      }
      guard var hello, let first = answered else {
        throw HandoffError.channelClosed(peer: peerLabel)
      }
      var challengeResponse = first.m2
      shared = first.shared
      try await channel.send(challengeResponse)
      var repeater = HandshakeRepeater(challengeResponse, over: channel)
      var opened: (m3: [UInt8], id: PeerIdentity)?
      // What else may come before M3: repeated hellos (answered with M2
      // again), another hello (the first reached us damaged: the initiator
      // could not open our M2 and repeated its own; answered afresh), and
      // frames of an initiator that finished (its M3 was lost; dropped, and
      // sent again by the frame layer once we are done).
      var strays = 0
      var restarts = 0
      while opened == nil {
        let m: [UInt8]
        do {
          m = try await next()
        } catch {
          await repeater.stop()
          throw error
        }
        if m == hello {
          await repeater.now()
          continue
        }
        if m.count == helloBytes, m[0] == Self.hello, m[1] == handshakeVersion,
          restarts < HandshakeRepeater.limit, let fresh = answer(m)
        {
          restarts += 1
          await repeater.stop()
          hello = m
          HandoffCrypto.wipe(&shared)
          (challengeResponse, shared) = fresh
          try await channel.send(challengeResponse)
          repeater = HandshakeRepeater(challengeResponse, over: channel)
          continue
        }
        if m.first != Self.response {
          strays += 1
          guard strays <= FrameRecovery.maxBadFrames else {
            await repeater.stop()
            throw await fail("its response does not verify")
          }
          continue
        }
        switch openResponse(
          m, hello: hello, challengeResponse: challengeResponse, shared: shared, keys: keys)
        {
        case .identity(let id): opened = (m, id)
        case .sealBroken:
          // Damaged on the way (an initiator that opened M2 holds the key):
          // M2 again asks for M3 again.
          if await repeater.now() { continue }
          await repeater.stop()
          throw await fail("its response does not verify")
        case .signatureBroken:
          await repeater.stop()
          throw await fail(Self.signatureFailure, keyMayDiffer: false)
        }
      }
      await repeater.stop()
      guard let (answer, id) = opened else { throw HandoffError.channelClosed(peer: peerLabel) }
      m1 = hello
      m2 = challengeResponse
      m3 = answer
      peer = id
    }
    guard peer.device != me.device else {
      throw await fail(
        "it claims this agent's own device id (a reflected handshake, or a copy of this"
          + " agent's state directory used by another agent)", keyMayDiffer: false)
    }
    let (initiatorID, responderID) = initiator ? (me.device, peer.device) : (peer.device, me.device)
    let (toResponder, toInitiator) = sessionKeys(
      hello: m1, challengeResponse: m2, response: m3, initiator: initiatorID,
      responder: responderID, shared: shared, keys: keys)
    let label = "\(peer.name) (\(peerLabel))"
    // The initiator answers a repeated M2 (its M3 was lost) with M3 again.
    let frames = FrameChannel(
      channel, sendKey: initiator ? toResponder : toInitiator,
      receiveKey: initiator ? toInitiator : toResponder, peerLabel: label,
      handshakeAnswer: initiator ? (m2, m3) : nil)
    return SecureChannel(
      channel: frames, frames: frames, peer: peer, peerLabel: label, deviceKey: me.key,
      timeout: timeout, maxNoteSize: maxNoteSize)
  }

  /// M1: `0x01, version, ephemeral[32]`: the initiator's ephemeral X25519
  /// public key, fresh for each handshake, is also its challenge.
  package static func makeHello(ephemeral: [UInt8]) -> [UInt8] {
    [hello, handshakeVersion] + ephemeral
  }

  /// Whose identity a key seals (`identityKey`).
  package enum IdentitySide { case responder, initiator }

  /// The key that seals one side's identity: BLAKE2b-512 keyed with `k_auth`
  /// over `"baton-identity-1" || M1 || the header of M2 || shared`; the first
  /// 32 bytes seal the responder's identity, the last 32 the initiator's.
  /// `challengeResponse` is M2, or only its header. A capture opens them only
  /// with an ephemeral secret, not with the group key alone (PROTOCOL.md
  /// section 4, "Forward secrecy").
  static func identityKey(
    _ side: IdentitySide, hello m1: [UInt8], challengeResponse m2: [UInt8], shared: [UInt8],
    keys: HandoffKeys
  ) -> [UInt8] {
    var okm = HandoffCrypto.hash(
      labelIdentity + m1 + m2.prefix(challengeResponseHeaderBytes) + shared, key: keys.auth,
      length: 64)
    defer { HandoffCrypto.wipe(&okm) }
    return Array(side == .responder ? okm[0..<32] : okm[32..<64])
  }

  /// M2: `0x02, version, ephemeral[32], nonce[24], seal(identity)` with AD
  /// `"baton-auth-R" || M1 || the first 58 bytes of M2`, under the responder's
  /// identity key (`identityKey`); the identity's signature is over
  /// `"baton-device-R" || M1 || those 58 bytes || key || name`.
  package static func makeChallengeResponse(
    hello m1: [UInt8], ephemeral: [UInt8], nonce: [UInt8], shared: [UInt8], me: LocalIdentity,
    keys: HandoffKeys
  ) -> [UInt8] {
    let head = [challengeResponse, handshakeVersion] + ephemeral + nonce
    var key = identityKey(
      .responder, hello: m1, challengeResponse: head, shared: shared, keys: keys)
    defer { HandoffCrypto.wipe(&key) }
    return head
      + HandoffCrypto.seal(
        signedIdentity(me, label: signatureResponder, transcript: m1 + head),
        ad: labelResponder + m1 + head, nonce: nonce, key: key)
  }

  /// Opens M2 with the X25519 secret of the initiator's ephemeral key and the
  /// one M2 carries.
  package static func openChallengeResponse(
    _ m2: [UInt8], hello m1: [UInt8], shared: [UInt8], keys: HandoffKeys
  ) -> IdentityOpening {
    guard m2.count > challengeResponseHeaderBytes else { return .sealBroken }
    var key = identityKey(.responder, hello: m1, challengeResponse: m2, shared: shared, keys: keys)
    defer { HandoffCrypto.wipe(&key) }
    return openIdentity(
      m2, headerBytes: challengeResponseHeaderBytes, type: challengeResponse,
      sealLabel: labelResponder, signatureLabel: signatureResponder, transcript: m1, key: key)
  }

  /// Opens M2 as the initiator does, with its ephemeral secret: what opening
  /// found, and the X25519 secret made with M2's ephemeral key (empty if M2
  /// is too short to hold one, which does not open). Nil if M2's key is a
  /// low-order point.
  package static func openChallengeResponse(
    _ m2: [UInt8], hello m1: [UInt8], ephemeralSecret: [UInt8], keys: HandoffKeys
  ) -> (IdentityOpening, shared: [UInt8])? {
    guard m2.count > challengeResponseHeaderBytes else { return (.sealBroken, []) }
    guard
      let shared = HandoffCrypto.x25519(
        secret: ephemeralSecret, peerPublic: Array(m2[responderEphemeralRange]))
    else { return nil }
    return (openChallengeResponse(m2, hello: m1, shared: shared, keys: keys), shared)
  }

  /// M3: `0x03, nonce[24], seal(identity)` with AD
  /// `"baton-auth-I" || M1 || M2 || the first 25 bytes of M3`, under the
  /// initiator's identity key (`identityKey`); the identity's signature is
  /// over `"baton-device-I" || M1 || M2 || those 25 bytes || key || name`.
  package static func makeResponse(
    hello m1: [UInt8], challengeResponse m2: [UInt8], nonce: [UInt8], shared: [UInt8],
    me: LocalIdentity, keys: HandoffKeys
  ) -> [UInt8] {
    let head = [response] + nonce
    var key = identityKey(.initiator, hello: m1, challengeResponse: m2, shared: shared, keys: keys)
    defer { HandoffCrypto.wipe(&key) }
    return head
      + HandoffCrypto.seal(
        signedIdentity(me, label: signatureInitiator, transcript: m1 + m2 + head),
        ad: labelInitiator + m1 + m2 + head, nonce: nonce, key: key)
  }

  package static func openResponse(
    _ m3: [UInt8], hello m1: [UInt8], challengeResponse m2: [UInt8], shared: [UInt8],
    keys: HandoffKeys
  ) -> IdentityOpening {
    var key = identityKey(.initiator, hello: m1, challengeResponse: m2, shared: shared, keys: keys)
    defer { HandoffCrypto.wipe(&key) }
    return openIdentity(
      m3, headerBytes: responseHeaderBytes, type: response, sealLabel: labelInitiator,
      signatureLabel: signatureInitiator, transcript: m1 + m2, key: key)
  }

  /// The two session keys: BLAKE2b-512 keyed with the payload key over
  /// `"baton-session-4" || M1 || M2 || M3 || u64 initiator || u64 responder || shared`,
  /// where `shared` is the X25519 secret of the two ephemeral keys; the first
  /// 32 bytes key initiator-to-responder frames, the last 32 the reverse. Both
  /// the group key and the ephemeral secrets are needed to make them.
  static func sessionKeys(
    hello m1: [UInt8], challengeResponse m2: [UInt8], response m3: [UInt8], initiator: DeviceID,
    responder: DeviceID, shared: [UInt8], keys: HandoffKeys
  ) -> (toResponder: [UInt8], toInitiator: [UInt8]) {
    precondition(shared.count == HandoffCrypto.x25519Bytes)
    var w = ByteWriter()
    w.raw(labelSession + m1 + m2 + m3)
    w.u64(initiator.rawValue)
    w.u64(responder.rawValue)
    w.raw(shared)
    var okm = HandoffCrypto.hash(w.bytes, key: keys.payload, length: 64)
    defer { HandoffCrypto.wipe(&okm) }
    return (Array(okm[0..<32]), Array(okm[32..<64]))
  }

  /// `key[32] || string name`: who the identity says it is.
  static func identityBytes(_ id: PeerIdentity) -> [UInt8] {
    var w = ByteWriter()
    w.raw(id.key.bytes)
    w.string(id.name, max: HandoffLimits.maxNameBytes)
    return w.bytes
  }

  /// The sealed identity: `key[32] || string name || signature[64]`, the
  /// signature by the device key over `label || transcript || key || name`.
  static func signedIdentity(_ me: LocalIdentity, label: [UInt8], transcript: [UInt8])
    -> [UInt8]
  {
    let identity = identityBytes(me.peer)
    return identity + me.key.sign(label + transcript + identity)
  }

  /// What opening a sealed identity found.
  package enum IdentityOpening: Equatable {
    case identity(PeerIdentity)
    /// The seal does not open, or what it holds is malformed: damage, or
    /// another group key.
    case sealBroken
    /// The seal opens (the sender holds the group key) but the device key's
    /// signature does not verify: a key holder tampering with the handshake.
    case signatureBroken

    package var peer: PeerIdentity? {
      if case .identity(let peer) = self { return peer }
      return nil
    }
  }

  static let lowOrderFailure =
    "its ephemeral key is not a usable X25519 key (a low-order point); closed"

  static let signatureFailure =
    "its device key's signature does not verify, though it holds the group key (a key holder"
    + " altering the handshake, or a broken agent); closed"

  /// Opens M2 (header: type, version, ephemeral, nonce) or M3 (header: type,
  /// nonce) with its identity key: the seal's AD is `sealLabel || transcript` followed by
  /// the message's own header, the signature is over `signatureLabel || transcript ||
  /// header || key || name`.
  static func openIdentity(
    _ m: [UInt8], headerBytes: Int, type: UInt8, sealLabel: [UInt8], signatureLabel: [UInt8],
    transcript: [UInt8], key: [UInt8]
  ) -> IdentityOpening {
    guard m.count > headerBytes + HandoffCrypto.aeadTagBytes, m[0] == type else {
      return .sealBroken
    }
    if type == challengeResponse, m[1] != handshakeVersion { return .sealBroken }
    let head = Array(m[0..<headerBytes])
    let nonce = Array(m[(headerBytes - 24)..<headerBytes])
    guard
      let plain = HandoffCrypto.open(
        Array(m[headerBytes...]), ad: sealLabel + transcript + head, nonce: nonce, key: key)
    else { return .sealBroken }
    var r = WireReader(plain)
    guard let keyBytes = try? r.raw(DevicePublicKey.byteCount),
      let name = try? r.string(max: HandoffLimits.maxNameBytes),
      let signature = try? r.raw(DevicePublicKey.signatureBytes), r.isAtEnd,
      let peerKey = DevicePublicKey(bytes: keyBytes)
    else { return .sealBroken }
    let identity = Array(plain[0..<(plain.count - DevicePublicKey.signatureBytes)])
    guard peerKey.verifies(signature, of: signatureLabel + transcript + head + identity) else {
      return .signatureBroken
    }
    return .identity(PeerIdentity(key: peerKey, name: name))
  }

  // MARK: Frames

  /// Seals data frame `counter` as a peer that has taken none of ours and
  /// has nothing to report (PROTOCOL.md section 11's vectors; hand-driven
  /// peers in tests).
  package static func sealFrame(_ plaintext: [UInt8], counter: UInt64, key: [UInt8]) -> [UInt8] {
    FrameRecovery.seal(
      plaintext,
      header: FrameRecovery.Header(
        marker: FrameRecovery.dataMarker, number: counter, ack: 0,
        report: FlowReport(framesSent: 0, creditsGranted: 0), flags: 0),
      key: key)
  }

  /// Opens a data frame that must carry `counter`; nil if anything does not
  /// verify (or it is a control frame).
  package static func openFrame(_ frame: [UInt8], counter: UInt64, key: [UInt8]) -> [UInt8]? {
    guard let (header, plain) = FrameRecovery.open(frame, key: key),
      header.marker == FrameRecovery.dataMarker, header.number == counter
    else { return nil }
    return plain
  }

  /// Sends one message, split into as many frames as the channel's size needs,
  /// with this device's vouchers (`HandoffMessage.vouched(by:)`).
  /// Each frame's plaintext is `kind, more, fragment`.
  /// A message over its kind's limit (section 9) is not sent at all: the peer
  /// would reject it, so the session ends here with `oversizeMessage`.
  mutating func send(_ message: HandoffMessage) async throws {
    let message = message.vouched(by: deviceKey)
    let body = message.body
    let limit = HandoffMessage.limit(for: message.kind, maxNoteSize: maxNoteSize)
    guard body.count <= limit else {
      await channel.close()
      throw HandoffError.oversizeMessage(
        peer: peerLabel, kind: "\(message.kind)", size: body.count, limit: limit)
    }
    var offset = 0
    repeat {
      // Smaller after a fault (`FrameRecovery.payloadSize`).
      let room = frames.maximumMessageSize - 2
      let end = min(body.count, offset + room)
      let more: UInt8 = end < body.count ? 1 : 0
      let plain = [message.kind.rawValue, more] + body[offset..<end]
      try await frames.send(plain)
      offset = end
    } while offset < body.count
  }

  /// Receives one whole message; throws on a bad frame, a closed channel or a timeout.
  mutating func receive() async throws -> HandoffMessage {
    var kind: UInt8?
    var body: [UInt8] = []
    while true {
      let next =
        timeout == .zero
        ? try await frames.receive()
        : try await receiveWithTimeout(frames, timeout, peer: peerLabel)
      guard let plain = next else {
        throw HandoffError.channelClosed(peer: peerLabel)
      }
      guard plain.count >= 2 else {
        await channel.close()
        throw HandoffError.protocolViolation(peer: peerLabel, reason: "a frame with no kind")
      }
      if let kind, kind != plain[0] {
        await channel.close()
        throw HandoffError.protocolViolation(peer: peerLabel, reason: "fragment kind changed")
      }
      kind = plain[0]
      let limit =
        HandoffMessage.Kind(rawValue: plain[0]).map {
          HandoffMessage.limit(for: $0, maxNoteSize: maxNoteSize)
        } ?? HandoffLimits.maxControlBytes
      body += plain[2...]
      guard body.count <= limit else {
        await channel.close()
        throw HandoffError.protocolViolation(
          peer: peerLabel, reason: "message exceeds \(limit) bytes")
      }
      if plain[1] == 0 { break }
      if plain[0] == HandoffMessage.Kind.note.rawValue { meter?.set(body.count) }
    }
    meter?.set(0)
    do {
      return try HandoffMessage.decode(kind: kind!, body: body, maxNoteSize: maxNoteSize)
    } catch {
      await channel.close()
      throw HandoffError.protocolViolation(peer: peerLabel, reason: error.description)
    }
  }
}

/// `channel.receive()`, abandoned (and the channel closed) after `timeout`.
func receiveWithTimeout(_ channel: any MessageChannel, _ timeout: Duration, peer: String)
  async throws -> [UInt8]?
{
  // Closing the channel ends the receive, with nil or an error: either way
  // the peer's silence is what the caller learns.
  switch await channel.withinDeadline(timeout, { try await channel.receive() }) {
  case .finished(let message): return message
  case .failed(let error): throw error
  case .expired: throw HandoffError.timeout(peer: peer, seconds: timeout.secondsValue)
  }
}
