import BatonSystem
import Synchronization

/// The initiator's channel during the handshake: it opens M2 as it arrives
/// and, if the responder claims this agent's own device id (a reflected
/// handshake, or a copy of this agent's state directory used by another
/// agent), closes the channel and throws before M3 goes out (PROTOCOL.md
/// section 4: I checks before sending M3). Every other message passes
/// through unchanged; `SecureChannel.handshake` still opens M2 itself.
final class OwnIdentityCheck: MessageChannel {
  let inner: any MessageChannel
  private let me: DeviceID
  private let keys: HandoffKeys
  private let peerLabel: String
  /// M1 once sent; whether M2 has been checked.
  private let state = Mutex<(hello: [UInt8]?, checked: Bool)>((nil, false))

  init(_ inner: any MessageChannel, me: DeviceID, keys: HandoffKeys, peerLabel: String) {
    self.inner = inner
    self.me = me
    self.keys = keys
    self.peerLabel = peerLabel
  }

  var maximumMessageSize: Int { inner.maximumMessageSize }

  func send(_ message: [UInt8]) async throws {
    state.withLock { if $0.hello == nil { $0.hello = message } }
    try await inner.send(message)
  }

  func receive() async throws -> [UInt8]? {
    guard let message = try await inner.receive() else { return nil }
    let hello = state.withLock { s -> [UInt8]? in
      guard !s.checked, let hello = s.hello else { return nil }
      s.checked = true
      return hello
    }
    if let hello,
      let claimed = SecureChannel.openChallengeResponse(message, hello: hello, keys: keys),
      claimed.device == me
    {
      await inner.close()
      throw HandoffError.authenticationFailed(
        peer: peerLabel,
        reason: "it claims this agent's own device id (a reflected handshake, or a copy of this"
          + " agent's state directory used by another agent); closed before answering",
        keyMayDiffer: false)
    }
    return message
  }

  func close() async { await inner.close() }
  var closedByPeer: Bool { inner.closedByPeer }
}
