/// The radio address an agent advertises and connects from (PROTOCOL.md,
/// "Addresses"): a Bluetooth *resolvable private address* whose hash part is
/// keyed with the group key and the agent's device id.
///
/// To anyone without the group key it is 46 random-looking bits, new at every
/// rotation, so two of an agent's addresses cannot be linked. A key holder
/// that has learnt the agent's device id in a session can tell that a new
/// address is the same agent's, and so keeps the peer's name across address
/// rotation without a new session.
public struct ResolvableAddress: Sendable, Equatable {
  /// Six bytes, little-endian as HCI carries them: `hash[3] || prand[3]`.
  public let bytes: [UInt8]

  /// A fresh address for `device`: 22 random bits (not all zero, not all one)
  /// under the `01` marker of a resolvable private address, and the hash.
  public init(device: DeviceID, keys: HandoffKeys) {
    while true {
      var prand = HandoffCrypto.random(3)
      prand[2] = prand[2] & 0x3F | 0x40
      let random = prand[0..<2] + [prand[2] & 0x3F]
      let allOnes = random.elementsEqual([0xFF, 0xFF, 0x3F])
      if random.allSatisfy({ $0 == 0 }) || allOnes { continue }
      self.init(device: device, prand: prand, keys: keys)
      return
    }
  }

  /// The address for `device` with the given random part (for test vectors).
  init(device: DeviceID, prand: [UInt8], keys: HandoffKeys) {
    precondition(prand.count == 3)
    bytes = Self.hash(device: device, prand: prand, keys: keys) + prand
  }

  /// Whether `address` (six little-endian bytes) is one that `device` made.
  public static func resolves(_ address: [UInt8], to device: DeviceID, keys: HandoffKeys) -> Bool {
    guard address.count == 6, address[5] & 0xC0 == 0x40 else { return false }
    let prand = Array(address[3..<6])
    return HandoffCrypto.constantTimeEqual(
      hash(device: device, prand: prand, keys: keys), Array(address[0..<3]))
  }

  /// BLAKE2b-128(key k_address, u64 device || prand)[0..<3].
  static func hash(device: DeviceID, prand: [UInt8], keys: HandoffKeys) -> [UInt8] {
    var input = (0..<8).map { UInt8(truncatingIfNeeded: device.rawValue >> (8 * $0)) }
    input += prand
    return Array(HandoffCrypto.hash(input, key: keys.address, length: 16).prefix(3))
  }
}
