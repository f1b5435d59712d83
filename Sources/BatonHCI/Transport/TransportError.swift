import BatonSystem

/// Failures of the transports (`TCPTransport`, `SerialTransport`).
public enum TransportError: Error, CustomStringConvertible, Equatable {
  /// A byte that is not an H4 packet type where one should start.
  case framing(type: UInt8)
  /// Opening failed (connect, open, termios).
  case openFailed(spec: String, reason: String)
  /// A write failed: the other end is gone.
  case writeFailed(transport: String, reason: String)
  /// A read failed.
  case readFailed(transport: String, reason: String)
  /// The packet handed to `send` is not a whole H4 packet.
  case badPacket(length: Int)

  public var description: String {
    switch self {
    case .framing(let type):
      "H4 framing lost: byte 0x\(hex(type)) is not a packet type (01, 02, 03, 04, 05); "
        + "the byte stream is out of step, reopen the controller"
    case .openFailed(let spec, let reason):
      "cannot open controller \(spec): \(reason)"
    case .writeFailed(let transport, let reason):
      "cannot write to \(transport): \(reason); the controller is gone, reopen it"
    case .readFailed(let transport, let reason):
      "cannot read from \(transport): \(reason); the controller is gone, reopen it"
    case .badPacket(let length):
      "refusing to send a \(length)-byte H4 packet (needs a type byte and a header)"
    }
  }
}
