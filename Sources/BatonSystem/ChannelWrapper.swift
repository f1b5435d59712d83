/// A message channel that wraps another and adds one thing (a deadline,
/// a watch, a disconnect on close): everything it does not implement
/// itself goes to `inner`, so that the frame layer's members (flow
/// reports, loss tolerance, spare credits) reach the channel that has
/// them however many wrappers sit between. A wrapper that conformed to
/// `MessageChannel` alone would get that protocol's defaults instead (no
/// report, no tolerance) and silently turn fault recovery off.
public protocol ChannelWrapper: MessageChannel {
  /// The channel this one wraps.
  var inner: any MessageChannel { get }
}

extension ChannelWrapper {
  public var maximumMessageSize: Int { inner.maximumMessageSize }
  public func send(_ message: [UInt8]) async throws { try await inner.send(message) }
  public func receive() async throws -> [UInt8]? { try await inner.receive() }
  public func close() async { await inner.close() }
  public var closedByPeer: Bool { inner.closedByPeer }
  public var preferredMessageSize: Int { inner.preferredMessageSize }
  public var flowReport: FlowReport? { inner.flowReport }
  public func repairFlow(peer: FlowReport) { inner.repairFlow(peer: peer) }
  public var sendWouldWait: Bool { inner.sendWouldWait }
  public func tolerateLoss() { inner.tolerateLoss() }
  public func grantSpare() { inner.grantSpare() }
}
