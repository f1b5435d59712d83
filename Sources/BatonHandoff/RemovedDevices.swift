import BatonSystem

/// The devices removed from the group, as the beacon check reads them
/// (`HandoffEngine.openAnyEpoch`, PROTOCOL.md 6.3): a beacon that opens only
/// with an older epoch's keys and resolves to one of them is the removed
/// device's, still on the epoch it was removed from, and is dropped. The
/// engine keeps this in a mutex, since the radio's threads ask without
/// waiting for the engine.
struct RemovedDevices: Sendable {
  /// Each removed device's id, with the name its records gave it.
  var names: [DeviceID: String]
  /// The removed devices whose beacon was heard already (reported once).
  private var heard: Set<DeviceID> = []

  init(_ membership: Membership) { names = Self.names(in: membership) }

  /// The removals `membership` knows of (a removal is for good), by name.
  static func names(in membership: Membership) -> [DeviceID: String] {
    let removed = membership.removedIDs
    guard !removed.isEmpty else { return [:] }
    let known = Dictionary(
      membership.members.map { ($0.id, $0.name) }, uniquingKeysWith: { first, _ in first })
    return Dictionary(uniqueKeysWithValues: removed.map { ($0, known[$0] ?? "device \($0)") })
  }

  /// The removed device whose resolvable nonce (`Beacon.seal(_:keys:device:)`)
  /// `beacon` carries under `keys`, and whether it is the first beacon of
  /// that device heard; nil when no removed device sealed it.
  mutating func sender(of beacon: [UInt8], keys: HandoffKeys) -> (
    device: DeviceID, name: String, first: Bool
  )? {
    guard
      let (device, name) = names.first(where: { Beacon.resolves(beacon, to: $0.key, keys: keys) })
    else { return nil }
    return (device, name, heard.insert(device).inserted)
  }
}
