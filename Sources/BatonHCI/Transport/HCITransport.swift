/// A way to reach a BLE controller: moves whole HCI packets in H4 form (one
/// packet-type byte, 0x01 command, 0x02 ACL, 0x04 event, then the packet).
///
/// Implementations: `TCPTransport` (`tcp:HOST:PORT`), `SerialTransport`
/// (`serial:/dev/ttyX[:BAUD]`) and `HCIUserChannelTransport` (`hciN`, the
/// kernel's HCI user channel through libbluetooth). `receive()` blocks; the
/// HCI layer calls it from a reader thread of its own, so an idle agent makes
/// no wake-ups.
public protocol HCITransport: AnyObject, Sendable, CustomStringConvertible {
  /// Sends one H4 packet (type byte first). Thread-safe.
  func send(_ packet: [UInt8]) throws
  /// Blocks until the next whole H4 packet (type byte first); nil once the
  /// transport is closed or the other end has gone.
  func receive() throws -> [UInt8]?
  /// Closes the transport; a blocked `receive()` returns nil. Idempotent.
  func close()
  /// Whether bytes already read wait in the transport (a whole or a partial
  /// packet): the next `receive()` need not wait for the controller. For
  /// the reader only; false for a transport that reads a packet at a time.
  var hasBufferedBytes: Bool { get }
}

extension HCITransport {
  public var hasBufferedBytes: Bool { false }
}
