import BatonSystem

/// A 48-bit Bluetooth device address. `bytes` are in HCI (little-endian)
/// order; `description` is the usual printed form, most significant byte
/// first: "C4:12:34:56:78:9A".
public struct BluetoothAddress: Hashable, Sendable, CustomStringConvertible {
  /// Little-endian, as on the wire.
  public let bytes: [UInt8]

  /// From six little-endian bytes; nil for any other count.
  public init?(littleEndian bytes: [UInt8]) {
    guard bytes.count == 6 else { return nil }
    self.bytes = bytes
  }

  /// From the printed form "AA:BB:CC:DD:EE:FF" (most significant first).
  public init?(_ text: String) {
    guard let bytes = littleEndianBytes(printedAddress: text) else { return nil }
    self.bytes = bytes
  }

  public var description: String {
    bytes.reversed().map { hex($0) }.joined(separator: ":")
  }

  /// A new random static address: 46 random bits, the two top bits set
  /// (Core spec Vol 6 Part B 1.3.2.1), not all ones or all zeros otherwise.
  public static func randomStatic() -> BluetoothAddress {
    var generator = SystemRandomNumberGenerator()
    while true {
      var bytes = (0..<6).map { _ in UInt8.random(in: 0...255, using: &generator) }
      bytes[5] |= 0xC0
      let rest = bytes[0..<5] + [bytes[5] & 0x3F]
      if rest.allSatisfy({ $0 == 0 })
        || rest.enumerated().allSatisfy({ $0.element == ($0.offset == 5 ? 0x3F : 0xFF) })
      {
        continue
      }
      return BluetoothAddress(littleEndian: bytes)!
    }
  }

  /// Whether this is a random static address (two top bits set).
  public var isRandomStatic: Bool { bytes[5] & 0xC0 == 0xC0 }
}

/// LE address types as HCI carries them.
public enum AddressType: UInt8, Sendable, CustomStringConvertible {
  case `public` = 0x00
  case random = 0x01
  case publicIdentity = 0x02
  case randomIdentity = 0x03

  public var description: String {
    switch self {
    case .public: "public"
    case .random: "random"
    case .publicIdentity: "public-identity"
    case .randomIdentity: "random-identity"
    }
  }
}
