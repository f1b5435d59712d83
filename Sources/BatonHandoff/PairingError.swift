import BatonSystem

/// Which side of a pairing: the member printed the code, the newcomer typed it.
public enum PairingRole: String, Sendable, Equatable {
  case member
  case newcomer
}

/// Why a pairing did not enrol anyone, said for the user of the side that
/// reports it (PROTOCOL.md section 14, "Failures"). Every failure leaves
/// nothing committed on that side.
public enum PairingError: Error, CustomStringConvertible, Equatable, Sendable {
  /// The confirmation tags did not match: the codes differ.
  case wrongCode(PairingRole)
  /// The member's code had expired when P1 arrived.
  case codeExpired(minutes: Int, PairingRole)
  /// Another newcomer's attempt with this code is running.
  case codeInUse
  /// The code's one attempt was made already.
  case codeSpent
  /// The newcomer asked for another slot than this member's code.
  case wrongSlot(code: UInt8, asked: UInt8)
  /// The peer speaks another pairing version.
  case unsupportedVersion(UInt8, PairingRole)
  /// A message that is not what the exchange expects at this step.
  case malformed(step: String, reason: String, PairingRole)
  /// The peer's CPace share was refused.
  case share(CPace.Failure)
  /// The peer aborted, saying only that its side failed (`reason`).
  case peerAborted(reason: String, PairingRole)
  /// The member's caller refused to enrol the newcomer (member side).
  case enrolmentRefused(String)
  /// The member refused to enrol this device (newcomer side).
  case refusedByMember
  /// The enrolment is larger than a pairing carries.
  case enrolmentTooLarge(Int)
  /// The channel closed before `step` arrived.
  case interrupted(step: String, PairingRole)
  /// Nothing arrived for `step` within the deadline.
  case timeout(step: String, after: Duration, PairingRole)
  /// The channel's messages are too small for a pairing.
  case channelTooSmall(Int)
  /// Sending failed.
  case channel(String, PairingRole)

  /// What the user does next, per side.
  static func again(_ role: PairingRole) -> String {
    role == .member ? "run 'baton pair' again for a new code" : "ask for a new code"
  }

  public var description: String {
    switch self {
    case .wrongCode(let role):
      "the code was wrong (or was typed on another machine); \(Self.again(role))"
    case .codeExpired(let minutes, let role):
      "the code has expired (a code is valid for \(minutes) minute\(minutes == 1 ? "" : "s"));"
        + " \(Self.again(role))"
    case .codeInUse:
      "this code is in use: another machine is pairing with it; wait for it to finish, or"
        + " ask for a new code"
    case .codeSpent:
      "this code was already used (a code allows one attempt); ask for a new code"
    case .wrongSlot(let code, let asked):
      "the newcomer asked for code slot \(asked), this member's code has slot \(code) (the"
        + " code was typed wrong, or for another machine); the newcomer should check the"
        + " first two digits"
    case .unsupportedVersion(let version, let role):
      "the other machine speaks pairing version \(version), this one \(PairingMessage.version);"
        + " update baton on both, then \(Self.again(role))"
    case .malformed(let step, let reason, let role):
      "the other machine's \(step) is malformed (\(reason)): not a baton pairing, or a hostile"
        + " one; nothing was enrolled; \(Self.again(role))"
    case .share(let failure):
      "\(failure)"
    case .peerAborted(let reason, let role):
      "the other machine ended the pairing: \(reason); nothing was enrolled; \(Self.again(role))"
    case .enrolmentRefused(let reason):
      "the new device was not enrolled: \(reason)"
    case .refusedByMember:
      "the member refused to enrol this device (its 'baton pair' says why); nothing was"
        + " enrolled"
    case .enrolmentTooLarge(let size):
      "the enrolment is \(size) bytes, more than the \(PairingMessage.maxEnrolmentBytes) a"
        + " pairing carries"
    case .interrupted(let step, let role):
      "the pairing was interrupted before \(step) (the connection closed); nothing was"
        + " enrolled; \(Self.again(role))"
    case .timeout(let step, let after, let role):
      "the other machine sent no \(step) within \(after); nothing was enrolled;"
        + " \(Self.again(role))"
    case .channelTooSmall(let size):
      "the connection carries messages of \(size) bytes, a pairing needs"
        + " \(PairingMessage.minimumMessageSize)"
    case .channel(let reason, let role):
      "sending failed (\(reason)); nothing was enrolled; \(Self.again(role))"
    }
  }
}
