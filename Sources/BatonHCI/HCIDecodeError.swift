import BatonRadio
import BatonSystem

/// Why a packet could not be decoded.
public enum HCIDecodeError: Error, CustomStringConvertible, Equatable, ByteDecodingError {
  case truncated(String, needed: Int, got: Int)
  case oversized(String, expected: Int, got: Int)
  case invalid(String, reason: String)

  public var description: String {
    switch self {
    case .truncated(let what, let needed, let got):
      "malformed \(what): truncated (needs at least \(needed) bytes, got \(got))"
    case .oversized(let what, let expected, let got):
      "malformed \(what): \(got) bytes where \(expected) were expected"
    case .invalid(let what, let reason):
      "malformed \(what): \(reason)"
    }
  }

  package static func truncated(_ context: String, wanted: Int, at offset: Int, of count: Int)
    -> HCIDecodeError
  {
    .truncated(context, needed: offset + max(wanted, 0), got: count)
  }

  package static func trailing(_ context: String, at offset: Int, of count: Int) -> HCIDecodeError {
    .oversized(context, expected: offset, got: count)
  }
}

/// HCI packets are read with `ByteReader<HCIDecodeError>`, naming what is
/// decoded: `ByteReader(packet, decoding: "HCI event")`.
extension ByteReader where Failure == HCIDecodeError {
  package init(_ bytes: [UInt8], from offset: Int = 0, decoding what: String) {
    self.init(bytes, from: offset, context: what)
  }

  package mutating func address() throws(HCIDecodeError) -> BluetoothAddress {
    BluetoothAddress(littleEndian: try take(6))!
  }
}
