import BatonSystem

/// Failures of LE credit-based L2CAP channels, whichever backend runs them:
/// our own (`L2CAPChannel`, BatonL2CAP) or the kernel's (`L2CAPSocketChannel`,
/// BatonBlueZ).
public enum L2CAPError: Error, CustomStringConvertible, Equatable {
  /// The channel is closed (by either side, or its connection ended).
  case channelClosed(psm: UInt16, reason: String)
  /// A message longer than the peer's MTU.
  case messageTooLong(size: Int, mtu: Int)
  /// The peer refused the channel.
  case connectionRefused(psm: UInt16, result: String)
  /// The peer did not answer a signalling request.
  case timedOut(String)
  /// The peer sent something the protocol forbids; the channel was closed.
  case protocolViolation(String)
  /// A PSM outside the LE dynamic range 0x0080-0x00FF.
  case invalidPSM(UInt16)
  /// All 64 LE dynamic CIDs are in use on this connection.
  case noFreeChannelID

  public var description: String {
    switch self {
    case .channelClosed(let psm, let reason):
      "L2CAP channel on PSM 0x\(hex(psm)) is closed (\(reason))"
    case .messageTooLong(let size, let mtu):
      "message of \(size) bytes exceeds the channel MTU of \(mtu) bytes; split it"
    case .connectionRefused(let psm, let result):
      "the peer refused an L2CAP channel on PSM 0x\(hex(psm)): \(result)"
    case .timedOut(let what):
      "the peer did not answer the L2CAP \(what) in time"
    case .protocolViolation(let what):
      "L2CAP protocol violation by the peer: \(what); channel closed"
    case .invalidPSM(let psm):
      "PSM 0x\(hex(psm)) is not an LE dynamic PSM (0x0080-0x00FF)"
    case .noFreeChannelID:
      "no free L2CAP channel ID on this connection (64 channels open)"
    }
  }
}
