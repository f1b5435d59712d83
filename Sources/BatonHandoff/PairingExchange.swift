import BatonSystem

/// Who a side of a pairing is, as it shows itself to the other and to the
/// user: its name and device public key (CPace's associated data, so the
/// ISK binds both).
public struct PairingIdentity: Equatable, Sendable {
  public let name: String
  public let key: DevicePublicKey

  /// The name is cut at a character boundary to 64 bytes of UTF-8, as the
  /// wire carries it.
  public init(name: String, key: DevicePublicKey) {
    self.name = String(name.prefix(utf8Bytes: PairingMessage.maxNameBytes))
    self.key = key
  }

  /// What a user compares on both screens (`DevicePublicKey.fingerprint`).
  public var fingerprint: String { key.fingerprint }
}

/// How a pairing ended well, on one side: who the other side is and, for
/// the newcomer, the enrolment the member handed over.
public struct PairingOutcome: Equatable, Sendable {
  public let peer: PairingIdentity
  /// The newcomer's copy of the member's enrolment bytes; nil on the member.
  public let enrolment: [UInt8]?

  public var fingerprint: String { peer.fingerprint }
}

/// What a pairing state machine answers to a message (`PairingMember`,
/// `PairingNewcomer`); the driver (`Pairing`) carries it out.
public enum PairingStep: Equatable, Sendable {
  /// Send these messages in order, then wait for the next one.
  case send([[UInt8]])
  /// Member only: P3 verified; ask the caller for the enrolment of this
  /// newcomer and hand it to `PairingMember.enrol` (or `refuse`).
  case enrol(PairingIdentity)
  /// Send these, then the exchange is over and it succeeded: the side may
  /// commit what it does with `PairingOutcome`.
  case finished(send: [[UInt8]], PairingOutcome)
  /// Send these (an abort, if the peer should hear why), close, report the
  /// error; nothing is committed.
  case failed(PairingError, send: [[UInt8]])

  static func fail(_ error: PairingError) -> PairingStep {
    .failed(error, send: PairingMessage.abort(for: error).map { [$0] } ?? [])
  }
}
