/// What a credit-based channel has done in one direction, for the layer
/// above to carry to the peer (sealed) so that each end can repair the
/// credits a fault below it lost (PROTOCOL.md section 5, "Faults").
///
/// Both counts run from the channel's opening, modulo 2^32.
public struct FlowReport: Sendable, Equatable {
  /// K-frames this end has sent.
  public var framesSent: UInt32
  /// Credits this end has granted the peer, the initial ones included.
  public var creditsGranted: UInt32

  public init(framesSent: UInt32, creditsGranted: UInt32) {
    self.framesSent = framesSent
    self.creditsGranted = creditsGranted
  }
}
