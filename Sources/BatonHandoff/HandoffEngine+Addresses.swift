/// The agent's radio addresses (PROTOCOL.md, "Addresses").
extension HandoffEngine {
  /// A fresh resolvable address for this agent, six little-endian bytes.
  public nonisolated func newAddress() -> [UInt8] {
    ResolvableAddress(device: me.device, keys: keys).bytes
  }

  /// The name of the peer that made `address` (six little-endian bytes), if it
  /// is an agent we have had a session with; nil otherwise.
  public func peerName(resolving address: [UInt8]) -> String? {
    guard let peers = try? store.peers() else { return nil }
    return peers.first { ResolvableAddress.resolves(address, to: $0.device, keys: keys) }?.name
  }

  /// Whether `beacon` was sealed by `device` (its resolvable nonce,
  /// PROTOCOL.md 3.3). Nonisolated: the keys never change.
  public nonisolated func beacon(_ beacon: [UInt8], isFrom device: DeviceID) -> Bool {
    Beacon.resolves(beacon, to: device, keys: keys)
  }

  /// The peer (name and device id) that sealed `beacon`, if it is an agent
  /// we have had a session or link with; nil otherwise (PROTOCOL.md 3.3).
  public func peer(resolvingBeacon beacon: [UInt8]) -> (name: String, device: DeviceID)? {
    guard let peers = try? store.peers() else { return nil }
    return peers.first { Beacon.resolves(beacon, to: $0.device, keys: keys) }
      .map { ($0.name, $0.device) }
  }

  /// The peer (name and device id) that made `address`, if it is an agent we
  /// have had a session or link with; nil otherwise.
  public func peer(resolving address: [UInt8]) -> (name: String, device: DeviceID)? {
    guard let peers = try? store.peers() else { return nil }
    return peers.first { ResolvableAddress.resolves(address, to: $0.device, keys: keys) }
      .map { ($0.name, $0.device) }
  }
}
