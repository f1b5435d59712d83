/// An ordered, message-oriented byte channel between two agents: reliable
/// but for faults below it (a lost or damaged HCI packet), which the frame
/// layer above recovers once it runs (`tolerateLoss`).
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
  /// The largest message that travels as one unit below (for L2CAP: one
  /// K-frame), so that a fault loses only that message; at most
  /// `maximumMessageSize`.
  var preferredMessageSize: Int { get }
  /// What this end's flow control has done, if the channel has credits to
  /// lose (L2CAP run by our own host); nil otherwise.
  var flowReport: FlowReport? { get }
  /// The peer's `flowReport`, as it was when the peer sent the message just
  /// received: credits granted to us that never arrived, and credits for
  /// our frames that never reached the peer, are made good.
  func repairFlow(peer: FlowReport)
  /// Whether a message sent now would wait for the peer's flow control.
  var sendWouldWait: Bool { get }
  /// From now on the layer above recovers lost and damaged messages (it
  /// numbers and seals them): a fault below drops what it hit, where before
  /// it failed the channel at once so that a handshake learns it at once.
  func tolerateLoss()
  /// The layer above has asked the peer twice for a frame that did not
  /// come: the peer may have spent its credits on frames lost below us,
  /// and cannot tell us, having none; grants it a few more (bounded).
  func grantSpare()
}

extension MessageChannel {
  /// A channel that cannot tell why it closed says "the peer", the only
  /// cause a reliable channel has.
  public var closedByPeer: Bool { true }
  public var preferredMessageSize: Int { maximumMessageSize }
  public var flowReport: FlowReport? { nil }
  public func repairFlow(peer: FlowReport) {}
  public var sendWouldWait: Bool { false }
  public func tolerateLoss() {}
  public func grantSpare() {}
}
