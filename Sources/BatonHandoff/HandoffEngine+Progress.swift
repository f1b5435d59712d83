import BatonSystem

/// Each peer's transfer to this agent as it runs (`TransferProgress`), for
/// `baton status` and the progress lines logged every
/// `TransferProgress.logInterval`. A session counts what its pulls want; a
/// link what its own walk of the peer's summary (the link sender's `walk`)
/// finds the peer holds and this agent lacks, which the peer then pushes.
/// Kept in memory only, per peer device; a transfer ends with its session
/// or link, when everything wanted arrived, or after `transferIdleLimit`
/// without news.
extension HandoffEngine {
  /// A transfer that learns nothing for this long is no longer shown: a note
  /// wanted that the peer does not push (its limit is lower, it declines to)
  /// must not keep it in `baton status` for ever.
  static var transferIdleLimit: Duration { .seconds(30) }

  /// The transfers running, by peer name.
  func transferSnapshots() -> [TransferProgress.Snapshot] {
    let now = ContinuousClock.now
    // A large note on its way shows the bytes that came so far; one that
    // nothing announced (a save pushed on a link) shows as a transfer of
    // its own while it comes.
    for (device, meter) in meters {
      let coming = meter.value
      if var progress = transfers[device] {
        if progress.unannounced {
          progress.receivingUnannounced(bytes: coming, at: now)
        } else {
          progress.receiving(bytes: coming, at: now)
        }
        transfers[device] = progress
      } else if coming > 0, let name = links.values.first(where: { $0.peerDevice == device })?.peerName
      {
        var progress = TransferProgress(peerName: name, start: now)
        progress.receivingUnannounced(bytes: coming, at: now)
        transfers[device] = progress
      }
    }
    for (device, progress) in transfers
    where progress.isStale(at: now, idle: Self.transferIdleLimit) {
      logger.debug(
        "\(progress.logLine(at: now)); nothing new for \(Self.transferIdleLimit), no longer shown")
      transfers[device] = nil
    }
    return transfers.values.map { $0.snapshot(at: now) }.sorted { $0.peerName < $1.peerName }
  }

  /// Reads `meter` for `device`'s transfer from now on (a link's reader).
  func watch(_ meter: MessageMeter, from device: DeviceID) {
    meters[device] = meter
  }

  func unwatch(_ meter: MessageMeter, from device: DeviceID) {
    if meters[device] === meter { meters[device] = nil }
  }

  /// Adds notes a pull is about to ask `device` for.
  func expectTransfer(_ entries: [HandoffIndexEntry], from device: DeviceID, name: String) {
    guard !entries.isEmpty else { return }
    let now = ContinuousClock.now
    var progress = transfers[device] ?? TransferProgress(peerName: name, start: now)
    for e in entries { progress.want(Self.key(e.activityType, e.path), bytes: e.size, at: now) }
    transfers[device] = progress
  }

  /// A link's walk step: of the peer's entries found, those this agent lacks
  /// as the walk began (`before`) are wanted; those held since (pushed while
  /// the walk ran) count as arrived.
  func expectPushes(_ entries: [HandoffIndexEntry], before: HandoffIndex, _ link: HandoffLink) {
    let now = ContinuousClock.now
    var progress: TransferProgress?
    for e in entries where wouldFetch(e, against: before) {
      if progress == nil {
        progress =
          transfers[link.peerDevice] ?? TransferProgress(peerName: link.peerName, start: now)
      }
      if wouldFetch(e, against: index) {
        progress?.want(Self.key(e.activityType, e.path), bytes: e.size, at: now)
      } else {
        progress?.alreadyArrived(bytes: e.size, at: now)
      }
    }
    if let progress { transfers[link.peerDevice] = progress }
  }

  /// A note arrived from `device` (written or not: it came).
  func transferArrived(_ payload: ActivityPayload, from device: DeviceID) {
    guard var progress = transfers[device] else { return }
    let now = ContinuousClock.now
    guard
      progress.arrived(
        Self.key(payload.activityType, payload.path), bytes: payload.content.count, at: now)
        || progress.arrivedUnannounced(bytes: payload.content.count, at: now)
    else { return }
    if progress.logDue(at: now) { logger.info(progress.logLine(at: now)) }
    transfers[device] = progress
    if progress.isFinished { endTransfer(from: device) }
  }

  /// A note wanted from `device` that will not come (NOTE_UNAVAILABLE, a
  /// rename taken without its bytes).
  func transferDropped(_ type: String, _ path: String, from device: DeviceID) {
    guard var progress = transfers[device] else { return }
    progress.drop(Self.key(type, path), at: ContinuousClock.now)
    transfers[device] = progress
    if progress.isFinished { endTransfer(from: device) }
  }

  /// The walk is over: what `device` still has to send is known.
  func transferTotalsKnown(from device: DeviceID) {
    guard var progress = transfers[device] else { return }
    progress.allKnown(at: ContinuousClock.now)
    transfers[device] = progress
    if progress.isFinished { endTransfer(from: device) }
  }

  /// Ends the transfer from `device`; one long enough to have logged its
  /// progress logs where it ended.
  func endTransfer(from device: DeviceID) {
    guard let progress = transfers.removeValue(forKey: device) else { return }
    if progress.logged {
      let now = ContinuousClock.now
      logger.info(
        "\(progress.logLine(at: now))\(progress.isFinished ? "; done" : "; ended")")
    }
  }

  /// Whether a pull would fetch the peer's entry `e`, given `index`: what
  /// `needs` decides (`HandoffIndex.wouldFetch`), without its side effects
  /// and without checking the vouchers.
  func wouldFetch(_ e: HandoffIndexEntry, against index: HandoffIndex) -> Bool {
    guard folders[e.activityType] != nil, e.size <= policy.maxNoteSize,
      EntryAdmission.isSafePath(e.path)
    else { return false }
    return index.wouldFetch(e)
  }
}
