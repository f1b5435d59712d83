/// Why a handoff session or operation failed (PROTOCOL.md, "Errors").
public enum HandoffError: Error, CustomStringConvertible, Equatable {
  /// The peer could not prove it holds the group key (or we could not verify
  /// it). `keyMayDiffer` is false when the key cannot be the cause (a
  /// malformed hello, another protocol version, a claim of our own device id).
  case authenticationFailed(peer: String, reason: String, keyMayDiffer: Bool = true)
  /// The peer speaks another handshake version (PROTOCOL.md section 4): it
  /// said so in its hello or its challenge response.
  case peerProtocolVersion(peer: String, version: UInt8)
  /// The peer closed the channel on our hello without answering, which is what
  /// an agent of protocol 1 does with a hello of another version, and what an
  /// agent of this protocol does with a hello that reached it damaged.
  case peerRefusedHello(peer: String)
  /// The peer sent something the protocol does not allow at this point.
  case protocolViolation(peer: String, reason: String)
  /// The channel closed before the session finished.
  case channelClosed(peer: String)
  /// The peer sent nothing for the session timeout.
  case timeout(peer: String, seconds: Double)
  /// The channel's messages are too small for the protocol.
  case channelTooSmall(size: Int)
  /// The peer's name is not on the allow-list.
  case peerNotAllowed(name: String)
  /// The peer reported an error and ended the session.
  case peerError(peer: String, text: String)
  /// A message we built is over the limit the peer's decoder enforces; not sent.
  case oversizeMessage(peer: String, kind: String, size: Int, limit: Int)
  /// The peer proved the group key and its device key but is not a member
  /// of the group (or was removed): refused (PROTOCOL.md 6.3).
  case notAMember(peer: String, reason: String)
  /// The peer refused this device as not a member (its ERROR code 2).
  case refusedByMember(peer: String, text: String)
  /// `baton devices remove` named no single member, or could not remove it.
  case noSuchDevice(name: String, reason: String)

  /// The peer broke the protocol or ended with ERROR: counted as a failure
  /// wherever it happens (a session or a link).
  var isPeerFailure: Bool {
    switch self {
    case .protocolViolation, .peerError: true
    default: false
    }
  }

  public var description: String {
    switch self {
    case .authenticationFailed(let peer, let reason, true):
      "peer \(peer) failed authentication (\(reason)): the handshake was damaged in transit"
        + " (a radio fault; the next session retries), or it uses another group key, or the"
        + " handshake was tampered with or replayed; if this repeats, check that both agents"
        + " use the same key file"
    case .authenticationFailed(let peer, let reason, false):
      "peer \(peer) failed authentication: \(reason)"
    case .peerProtocolVersion(let peer, let version) where version < SecureChannel.handshakeVersion:
      "peer \(peer) speaks baton protocol \(version); upgrade it to this version"
        + " (protocol \(SecureChannel.handshakeVersion))"
    case .peerProtocolVersion(let peer, let version):
      "peer \(peer) speaks baton protocol \(version), newer than this agent's"
        + " \(SecureChannel.handshakeVersion); upgrade this agent"
    case .peerRefusedHello(let peer):
      "peer \(peer) closed the connection on our protocol \(SecureChannel.handshakeVersion) hello"
        + " without answering: the hello reached it damaged (a radio fault; the next session"
        + " retries), or it speaks baton protocol 1; if this repeats, upgrade it to this version"
    case .protocolViolation(let peer, let reason):
      "peer \(peer) broke the handoff protocol: \(reason)"
    case .channelClosed(let peer):
      "connection to \(peer) closed before the session finished; the next session will retry"
    case .timeout(let peer, let seconds):
      "peer \(peer) sent nothing for \((seconds * 10).rounded() / 10) s; session abandoned, the next one will retry"
    case .channelTooSmall(let size):
      "channel carries only \(size)-byte messages; handoff needs at least \(HandoffLimits.minimumMessageSize)"
    case .peerNotAllowed(let name):
      "peer '\(name)' is not in the allowed peers list; add it to the configuration to accept it"
    case .peerError(let peer, let text):
      "peer \(peer) ended the session: \(text)"
    case .oversizeMessage(let peer, let kind, let size, let limit):
      "did not send a \(size)-byte \(kind) message to \(peer): peers refuse more than \(limit)"
        + " bytes; session ended (please report this as a bug)"
    case .notAMember(let peer, let reason):
      "refused \(peer): \(reason)"
    case .refusedByMember(let peer, let text):
      "peer \(peer) refused this device: \(text)"
    case .noSuchDevice(let name, let reason):
      "cannot remove '\(name)': \(reason)"
    }
  }
}

extension HandoffError {
  /// Failures that another try with the same beacon content from the same
  /// address would only repeat: a failed handshake, or a peer of another
  /// protocol version (it must be upgraded first).
  package var endsHandshakesWithThisAddress: Bool {
    switch self {
    case .authenticationFailed, .peerProtocolVersion, .peerRefusedHello: true
    default: false
    }
  }
}
