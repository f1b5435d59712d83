/// The agent's radio addresses (PROTOCOL.md, "Addresses").
extension HandoffEngine {
  /// A fresh resolvable address for this agent, six little-endian bytes.
  public nonisolated func newAddress() -> [UInt8] {
    ResolvableAddress(device: me.device, keys: keys).bytes
  }

  /// The name of the peer that made `address` (six little-endian bytes), if it
  /// is an agent we have had a session with; nil otherwise.
  public func peerName(resolving address: [UInt8]) -> String? {
    peer(resolving: address)?.name
  }

  /// Whether `beacon` was sealed by `device` (its resolvable nonce,
  /// PROTOCOL.md 3.3). Nonisolated: the keys never change.
  public nonisolated func beacon(_ beacon: [UInt8], isFrom device: DeviceID) -> Bool {
    Beacon.resolves(beacon, to: device, keys: keys)
  }

  /// The peer (name and device id) that sealed `beacon`, if it is an agent
  /// we have had a session or link with; nil otherwise (PROTOCOL.md 3.3).
  public func peer(resolvingBeacon beacon: [UInt8]) -> (name: String, device: DeviceID)? {
    knownPeer { Beacon.resolves(beacon, to: $0, keys: $1) }
  }

  /// The peer (name and device id) that made `address`, if it is an agent we
  /// have had a session or link with; nil otherwise.
  public func peer(resolving address: [UInt8]) -> (name: String, device: DeviceID)? {
    knownPeer { ResolvableAddress.resolves(address, to: $0, keys: $1) }
  }

  /// The known peer for which `resolves` holds under the current epoch's
  /// keys or, failing that, an older epoch's this device holds (a member
  /// that has not heard of the newer epoch yet still has its name); a
  /// removed device is not resolved under an older epoch's keys.
  private func knownPeer(_ resolves: (DeviceID, HandoffKeys) -> Bool) -> (
    name: String, device: DeviceID
  )? {
    guard let peers = try? store.peers() else { return nil }
    if let peer = peers.first(where: { resolves($0.device, keys) }) {
      return (peer.name, peer.device)
    }
    guard !olderKeys.isEmpty else { return nil }
    let removed = removedDevices.withLock { $0.names }
    for older in olderKeys {
      if let peer = peers.first(where: { removed[$0.device] == nil && resolves($0.device, older.keys) }) {
        return (peer.name, peer.device)
      }
    }
    return nil
  }
}
