/// What the agent asks of the engine beyond sessions: `baton send`, and
/// which beacons come from keyed peers (for `baton status`).
extension HandoffEngine {
  /// Makes a note the current activity even if it did not change (`baton
  /// send`): the beacon then names it.
  public func makeCurrent(activityType: String, path: String) {
    ensureScanned()
    guard index[Self.key(activityType, path)] != nil else { return }
    current = (activityType, path)
    persist { try store.setCurrentActivity(activityType: activityType, path: path) }
  }

  /// Whether a keyed beacon still shows an index other than ours (unlike
  /// `shouldConnect`, this records nothing).
  public func indexDiffers(beacon data: [UInt8]) -> Bool {
    ensureScanned()
    guard let content = Beacon.open(advertisingData: data, keys: keys) else { return false }
    return content.indexDigest != indexDigest
  }

  /// Whether `data` is a beacon sealed with our group key. Nonisolated (the
  /// keys never change): every advertisement heard asks, most of them
  /// strangers', and none should wait for the engine's thread or wake it.
  public nonisolated func isGroupBeacon(_ data: [UInt8]) -> Bool {
    Beacon.open(advertisingData: data, keys: keys) != nil
  }

  /// A group beacon's content (its flags tell whether the sender can be
  /// connected to now); nil for anything else.
  public nonisolated func openBeacon(_ data: [UInt8]) -> BeaconContent? {
    Beacon.open(advertisingData: data, keys: keys)
  }
}
