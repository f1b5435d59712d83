import BatonSystem

/// The member's side of a pairing (the device that printed the code), as a
/// synchronous state machine (PROTOCOL.md section 14): P1 in, P2 out; P3
/// in (the newcomer's tag); the enrolment out as P4; P5 in. `Pairing.run`
/// drives it over a channel.
///
/// It commits nothing: `.finished` after P5 is the only success, and the
/// caller records the addition then. The enrolment is asked for (`.enrol`)
/// only once P3 proved that the newcomer used the same code.
public struct PairingMember {
  enum State {
    case awaitingHello
    case awaitingConfirm(keys: PairingMessage.Keys, p1: [UInt8], p2: [UInt8])
    case awaitingEnrolment(keys: PairingMessage.Keys)
    case awaitingAcknowledgement(keys: PairingMessage.Keys, enrolment: [UInt8])
    case done
  }

  public let code: PairingCode
  public let me: PairingIdentity
  private var state = State.awaitingHello
  /// The newcomer, once a valid P1 named it.
  public private(set) var newcomer: PairingIdentity?
  /// Whether a P1 for this code arrived and claimed it.
  public private(set) var claimed = false
  private let scalar: [UInt8]?

  public init(code: PairingCode, me: PairingIdentity) {
    self.init(code: code, me: me, scalar: nil)
  }

  /// With a fixed CPace scalar: for test vectors only.
  init(code: PairingCode, me: PairingIdentity, scalar: [UInt8]?) {
    self.code = code
    self.me = me
    self.scalar = scalar
  }

  /// The next message from the newcomer. `claim` is called once, when the
  /// first valid P1 for this code's slot arrived (before any CPace work):
  /// nil lets the attempt go on, an error refuses it (`PairingOffer.claim`).
  public mutating func receive(_ m: [UInt8], claim: () -> PairingError? = { nil }) -> PairingStep {
    let step = next(m, claim: claim)
    switch step {
    case .failed, .finished: state = .done
    case .send, .enrol: break
    }
    return step
  }

  private mutating func next(_ m: [UInt8], claim: () -> PairingError?) -> PairingStep {
    if let abort = PairingMessage.readAbort(m, role: .member) {
      return .failed(abort, send: [])
    }
    switch state {
    case .awaitingHello:
      return hello(m, claim: claim)
    case .awaitingConfirm(let keys, let p1, let p2):
      let tag: [UInt8]
      do { tag = try PairingMessage.readConfirm(m) } catch {
        return .fail(.malformed(step: "P3", reason: error.reason, .member))
      }
      guard
        HandoffCrypto.constantTimeEqual(tag, PairingMessage.newcomerTag(keys, p1: p1, p2: p2)),
        let newcomer
      else { return .fail(.wrongCode(.member)) }
      state = .awaitingEnrolment(keys: keys)
      return .enrol(newcomer)
    case .awaitingEnrolment:
      return .fail(.malformed(step: "message", reason: "it came before the enrolment", .member))
    case .awaitingAcknowledgement(let keys, let enrolment):
      let digest: [UInt8]
      do { digest = try PairingMessage.readAcknowledgement(m, key: keys.acknowledge) } catch {
        return .fail(.malformed(step: "P5", reason: error.reason, .member))
      }
      guard digest == HandoffCrypto.hash(enrolment, length: 32), let newcomer else {
        return .fail(
          .malformed(step: "P5", reason: "it acknowledges other enrolment bytes", .member))
      }
      return .finished(send: [], PairingOutcome(peer: newcomer, enrolment: nil))
    case .done:
      return .failed(
        .malformed(step: "message", reason: "it came after the pairing ended", .member), send: [])
    }
  }

  private mutating func hello(_ m: [UInt8], claim: () -> PairingError?) -> PairingStep {
    if let v = PairingMessage.versionOf(m, kind: PairingMessage.hello), v != PairingMessage.version
    {
      return .fail(.unsupportedVersion(v, .member))
    }
    let p1: PairingMessage.Hello
    do { p1 = try PairingMessage.readHello(m) } catch {
      return .fail(.malformed(step: "P1", reason: error.reason, .member))
    }
    guard p1.slot == code.slot else { return .fail(.wrongSlot(code: code.slot, asked: p1.slot)) }
    // The code's one attempt: spent from here on, whatever follows.
    claimed = true
    if let refusal = claim() { return .fail(refusal) }
    guard p1.identity.key != me.key else {
      return .fail(
        .malformed(step: "P1", reason: "it shows this device's own key (a reflection)", .member))
    }
    newcomer = p1.identity
    let ad = PairingMessage.associatedData(me)
    var isk: [UInt8]
    let share: [UInt8]
    do {
      let cpace =
        if let scalar {
          try CPace(
            role: .responder, password: code.password, sid: p1.sid,
            channel: PairingMessage.channel(slot: code.slot), associatedData: ad, scalar: scalar)
        } else {
          try CPace(
            role: .responder, password: code.password, sid: p1.sid,
            channel: PairingMessage.channel(slot: code.slot), associatedData: ad)
        }
      share = cpace.share
      isk = try cpace.finish(peerShare: p1.share, peerAssociatedData: p1.ad)
    } catch {
      return .fail(.share(error))
    }
    let keys = PairingMessage.Keys(isk: isk)
    HandoffCrypto.wipe(&isk)
    let head = PairingMessage.makeReplyHead(share: share, ad: ad)
    let p2 = head + PairingMessage.memberTag(keys, p1: m, p2Head: head)
    state = .awaitingConfirm(keys: keys, p1: m, p2: p2)
    return .send([p2])
  }

  /// The caller's enrolment for the newcomer `.enrol` named: sealed into P4
  /// parts of at most `messageSize` bytes each.
  public mutating func enrol(_ enrolment: [UInt8], messageSize: Int) -> PairingStep {
    guard case .awaitingEnrolment(let keys) = state else {
      state = .done
      return .failed(
        .malformed(step: "enrolment", reason: "none was asked for", .member), send: [])
    }
    guard enrolment.count <= PairingMessage.maxEnrolmentBytes else {
      state = .done
      return .fail(.enrolmentTooLarge(enrolment.count))
    }
    guard messageSize >= PairingMessage.minimumMessageSize else {
      state = .done
      return .fail(.channelTooSmall(messageSize))
    }
    state = .awaitingAcknowledgement(keys: keys, enrolment: enrolment)
    return .send(
      PairingMessage.enrolmentParts(enrolment, key: keys.enrol, messageSize: messageSize))
  }

  /// The caller would not enrol the newcomer: `reason` is reported here,
  /// the newcomer hears that the member refused.
  public mutating func refuse(_ reason: String) -> PairingStep {
    state = .done
    return .fail(.enrolmentRefused(reason))
  }
}
