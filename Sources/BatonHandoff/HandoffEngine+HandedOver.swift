import BatonSystem
import FoundationEssentials

/// A peer's current activity as it arrived here: what `baton continue`
/// opens and `baton status` shows next to the peer.
public struct HandedOverActivity: Sendable, Equatable {
  public var peerDevice: DeviceID
  public var peerName: String
  public var activityType: String
  /// The note's path in its folder.
  public var path: String
  public var title: String
  /// When it arrived (or, already held, was named by the peer).
  public var time: Date

  public init(
    peerDevice: DeviceID, peerName: String, activityType: String, path: String, title: String,
    time: Date
  ) {
    self.peerDevice = peerDevice
    self.peerName = peerName
    self.activityType = activityType
    self.path = path
    self.title = title
    self.time = time
  }
}

/// Which of a peer's notes is its current activity, as far as this agent
/// can tell: in a session, the one its ACTIVITY names (PROTOCOL.md 6,
/// step 1); on a link, the last note made on the peer (its origin) that it
/// pushed, since a link carries no ACTIVITY. Only a note held here with the
/// peer's content counts: one not written (refused, a full disk) is not
/// handed over.
extension HandoffEngine {
  /// Tells `body` of every note that arrives from now on (the agent's
  /// desktop notifications); it is called on the engine's thread and must
  /// return at once.
  public func onArrival(_ body: @escaping @Sendable (Arrival) -> Void) {
    arrivals = body
  }

  /// A session's ACTIVITY, after its note was fetched (`arrived`) or found held.
  func recordHandedOver(
    _ entry: HandoffIndexEntry, title: String, from device: DeviceID, name: String, arrived: Bool
  ) {
    recordHandedOver(
      entry.activityType, entry.path, hash: entry.hash, title: title, device, name,
      arrived: arrived)
  }

  /// A note pushed on a link, after it was applied (`arrived`: not held before).
  func recordHandedOver(
    _ payload: ActivityPayload, from device: DeviceID, name: String, arrived: Bool
  ) {
    recordHandedOver(
      payload.activityType, payload.path, hash: payload.hash, title: payload.title, device, name,
      arrived: arrived)
  }

  /// Records the activity, and tells `arrivals` when it was written now:
  /// a peer's current activity met again (in each session while it stays
  /// the same) is not news.
  private func recordHandedOver(
    _ type: String, _ path: String, hash: ContentHash, title: String, _ device: DeviceID,
    _ name: String, arrived: Bool
  ) {
    guard let note = index[Self.key(type, path)], !note.deleted, note.entry.hash == hash else {
      return
    }
    let activity = HandedOverActivity(
      peerDevice: device, peerName: name, activityType: type, path: path,
      title: title.isEmpty ? String(path.split(separator: "/").last ?? Substring(path)) : title,
      time: Date())
    handedOver[device] = activity
    if arrived { arrivals?(.handedOver(activity)) }
  }

  /// Every peer's, newest first; a note deleted or renamed since is left out.
  var handedOverNewestFirst: [HandedOverActivity] {
    handedOver.values
      .filter { index[Self.key($0.activityType, $0.path)].map { !$0.deleted } ?? false }
      .sorted { $0.time > $1.time }
  }
}
