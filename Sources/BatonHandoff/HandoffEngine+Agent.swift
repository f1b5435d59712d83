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

  /// Whether a keyed beacon still shows an index other than ours (records
  /// nothing). Nonisolated: it compares with `currentIndexDigest`.
  public nonisolated func indexDiffers(beacon data: [UInt8]) -> Bool {
    guard let content = Beacon.open(advertisingData: data, keys: keys) else { return false }
    return content.indexDigest != currentIndexDigest
  }

  /// Whether `data` is a beacon sealed with our group key. Nonisolated (the
  /// keys never change): every advertisement heard asks, most of them
  /// strangers', and none should wait for the engine's thread or wake it.
  public nonisolated func isGroupBeacon(_ data: [UInt8]) -> Bool {
    openAnyEpoch(data) != nil
  }

  /// A group beacon's content (its flags tell whether the sender can be
  /// connected to now); nil for anything else.
  public nonisolated func openBeacon(_ data: [UInt8]) -> BeaconContent? {
    openAnyEpoch(data)?.content
  }

  /// A beacon opened with the current epoch's keys or, failing that, an
  /// older epoch's this device holds (a member that has not heard of the
  /// newer epoch yet, PROTOCOL.md 6.3), with that epoch. A beacon of an older
  /// epoch that resolves to a removed device is nil: that device is on the
  /// epoch it was removed from, and nobody links with it there. Only a
  /// beacon whose tag verified under an older epoch's keys pays for that
  /// check (strangers' never do).
  nonisolated func openAnyEpoch(_ data: [UInt8]) -> (content: BeaconContent, epoch: UInt32)? {
    if let content = Beacon.open(advertisingData: data, keys: keys) { return (content, epoch) }
    for older in olderKeys {
      if let content = Beacon.open(advertisingData: data, keys: older.keys) {
        if let removed = removedDevices.withLock({ $0.sender(of: data, keys: older.keys) }) {
          if removed.first {
            logger.info(
              "ignoring the beacons of \(removed.name) (\(removed.device)), sealed with the keys of"
                + " epoch \(older.epoch): it was removed from the group")
          }
          return nil
        }
        return (content, older.epoch)
      }
    }
    return nil
  }

  /// Opens a beacon heard from `address`, remembering which epoch's keys a
  /// handshake this agent starts with that address must use. Nonisolated,
  /// like `openBeacon(_:)`.
  public nonisolated func openBeacon(_ data: [UInt8], from address: String) -> BeaconContent? {
    guard let (content, epoch) = openAnyEpoch(data) else { return nil }
    beaconEpochs.withLock { epochs in
      if epoch == self.epoch {
        epochs[address] = nil
      } else {
        if epochs.count > 256 { epochs.removeAll() }
        epochs[address] = epoch
      }
    }
    return content
  }

  /// The keys a handshake this agent starts with `address` uses: those of
  /// the epoch its beacon opened with.
  func handshakeKeys(for address: String) -> HandoffKeys {
    guard let epoch = beaconEpochs.withLock({ $0[address] }),
      let older = olderKeys.first(where: { $0.epoch == epoch })
    else { return keys }
    return older.keys
  }
}
