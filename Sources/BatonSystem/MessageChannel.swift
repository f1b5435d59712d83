/// A reliable, ordered, message-oriented byte channel between two agents.
///
/// This is the seam between the Bluetooth layers and the handoff protocol: an
/// L2CAP LE credit-based channel (one SDU per message) conforms to it, and so
/// does an in-memory pair used to test the protocol with no radio.
public protocol MessageChannel: AnyObject, Sendable {
  /// The largest message the channel carries (the L2CAP MTU).
  var maximumMessageSize: Int { get }
  /// Sends one whole message; suspends while the peer has no credit.
  func send(_ message: [UInt8]) async throws
  /// The next whole message, or nil once the channel is closed.
  func receive() async throws -> [UInt8]?
  /// Closes the channel (and, for L2CAP, disconnects it). Idempotent.
  func close() async
  /// Whether the channel ended because the peer closed it (for L2CAP: its
  /// Disconnection Request, or its own end of the connection), rather than
  /// because this end closed it or detected a fault (data lost or damaged
  /// below it, a stall, a connection that timed out). False while open.
  /// The handshake tells an old peer's refusal from a radio fault with it.
  var closedByPeer: Bool { get }
}

extension MessageChannel {
  /// A channel that cannot tell why it closed says "the peer", the only
  /// cause a reliable channel has.
  public var closedByPeer: Bool { true }
}
