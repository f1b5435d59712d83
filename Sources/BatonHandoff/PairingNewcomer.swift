import BatonSystem

/// The newcomer's side of a pairing (the device where the code was typed),
/// as a synchronous state machine (PROTOCOL.md section 14): `hello` (P1)
/// out; P2 in, checked by the member's tag, P3 out; the P4 parts in, P5
/// out. `Pairing.run` drives it over a channel.
///
/// It commits nothing: `.finished` (with the enrolment, once every part
/// opened and P5 is to be sent) is the only success.
public struct PairingNewcomer {
  enum State {
    case awaitingReply(CPace)
    case awaitingEnrolment(keys: PairingMessage.Keys, parts: [[UInt8]], count: UInt16?, bytes: Int)
    case done
  }

  public let code: PairingCode
  public let me: PairingIdentity
  /// P1, the first message: send it when connected.
  public let hello: [UInt8]
  /// The member, once its P2 verified.
  public private(set) var member: PairingIdentity?
  private var state: State

  /// A new attempt with a random session id and CPace scalar.
  public init(code: PairingCode, me: PairingIdentity) throws(PairingError) {
    try self.init(
      code: code, me: me, sid: HandoffCrypto.random(PairingMessage.sidBytes), scalar: nil)
  }

  /// With a fixed session id and (if given) CPace scalar: for test vectors.
  init(code: PairingCode, me: PairingIdentity, sid: [UInt8], scalar: [UInt8]?) throws(PairingError)
  {
    precondition(sid.count == PairingMessage.sidBytes)
    self.code = code
    self.me = me
    let ad = PairingMessage.associatedData(me)
    let cpace: CPace
    do {
      cpace =
        if let scalar {
          try CPace(
            role: .initiator, password: code.password, sid: sid,
            channel: PairingMessage.channel(slot: code.slot), associatedData: ad, scalar: scalar)
        } else {
          try CPace(
            role: .initiator, password: code.password, sid: sid,
            channel: PairingMessage.channel(slot: code.slot), associatedData: ad)
        }
    } catch {
      throw .share(error)
    }
    hello = PairingMessage.makeHello(slot: code.slot, sid: sid, share: cpace.share, ad: ad)
    state = .awaitingReply(cpace)
  }

  /// The next message from the member.
  public mutating func receive(_ m: [UInt8]) -> PairingStep {
    let step = next(m)
    switch step {
    case .failed, .finished: state = .done
    case .send, .enrol: break
    }
    return step
  }

  private mutating func next(_ m: [UInt8]) -> PairingStep {
    if let abort = PairingMessage.readAbort(m, role: .newcomer) {
      return .failed(abort, send: [])
    }
    switch state {
    case .awaitingReply(let cpace):
      return reply(m, cpace: cpace)
    case .awaitingEnrolment(let keys, var parts, let count, var bytes):
      let part: (index: UInt16, count: UInt16, part: [UInt8])
      do { part = try PairingMessage.readEnrolmentPart(m, key: keys.enrol) } catch {
        return .fail(.malformed(step: "P4", reason: error.reason, .newcomer))
      }
      guard Int(part.index) == parts.count, count == nil || count == part.count else {
        return .fail(
          .malformed(
            step: "P4",
            reason: "part \(part.index) of \(part.count) where part \(parts.count) was next",
            .newcomer))
      }
      bytes = bytes &+ part.part.count
      guard bytes <= PairingMessage.maxEnrolmentBytes else {
        return .fail(
          .malformed(
            step: "P4",
            reason: "the enrolment passes \(PairingMessage.maxEnrolmentBytes) bytes", .newcomer))
      }
      parts.append(part.part)
      guard parts.count == Int(part.count) else {
        state = .awaitingEnrolment(keys: keys, parts: parts, count: part.count, bytes: bytes)
        return .send([])
      }
      let enrolment = parts.flatMap { $0 }
      guard let member else { return .fail(.refusedByMember) }
      return .finished(
        send: [PairingMessage.makeAcknowledgement(enrolment: enrolment, key: keys.acknowledge)],
        PairingOutcome(peer: member, enrolment: enrolment))
    case .done:
      return .failed(
        .malformed(step: "message", reason: "it came after the pairing ended", .newcomer),
        send: [])
    }
  }

  private mutating func reply(_ m: [UInt8], cpace: CPace) -> PairingStep {
    if let v = PairingMessage.versionOf(m, kind: PairingMessage.reply), v != PairingMessage.version
    {
      return .fail(.unsupportedVersion(v, .newcomer))
    }
    let p2: PairingMessage.Reply
    do { p2 = try PairingMessage.readReply(m) } catch {
      return .fail(.malformed(step: "P2", reason: error.reason, .newcomer))
    }
    guard p2.identity.key != me.key else {
      return .fail(
        .malformed(step: "P2", reason: "it shows this device's own key (a reflection)", .newcomer))
    }
    var isk: [UInt8]
    do { isk = try cpace.finish(peerShare: p2.share, peerAssociatedData: p2.ad) } catch {
      return .fail(.share(error))
    }
    let keys = PairingMessage.Keys(isk: isk)
    HandoffCrypto.wipe(&isk)
    guard
      HandoffCrypto.constantTimeEqual(
        p2.tag, PairingMessage.memberTag(keys, p1: hello, p2Head: p2.head))
    else { return .fail(.wrongCode(.newcomer)) }
    member = p2.identity
    state = .awaitingEnrolment(keys: keys, parts: [], count: nil, bytes: 0)
    return .send([
      PairingMessage.makeConfirm(tag: PairingMessage.newcomerTag(keys, p1: hello, p2: m))
    ])
  }
}
