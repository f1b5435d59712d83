import BatonSystem

/// An incoming activity a folder is asked about before it is written, and
/// told of after (`IncomingGate`): Handoff's `willContinueUserActivity` and
/// `restoreUserActivityState`, as the folder's `accept-command` and
/// `after-command` (baton.conf(5)).
public struct IncomingActivity: Sendable, Hashable {
  public var activityType: String
  /// The note's path in its folder (for `written`: where its bytes went,
  /// which is a conflict copy's when the local file was kept).
  public var path: String
  public var hash: ContentHash
  public var size: Int
  /// The peer handing it over (its name, or its address when unknown).
  public var peer: String
  /// The name of the device that made this version ("" if not told).
  public var origin: String
  /// The note's title, its first line ("" if it has none).
  public var title: String

  public init(
    activityType: String, path: String, hash: ContentHash, size: Int, peer: String, origin: String,
    title: String = ""
  ) {
    self.activityType = activityType
    self.path = path
    self.hash = hash
    self.size = size
    self.peer = peer
    self.origin = origin
    self.title = title
  }
}

/// What a folder's gate says of an incoming activity.
public enum IncomingDecision: Sendable, Equatable {
  case accept
  /// Declined, with the reason for the log ("the accept command exited with status 1").
  case decline(String)
  /// Not decided yet (the command runs, or waits its turn): the note is not
  /// written now; the engine keeps it and asks again when the gate calls
  /// back (`HandoffEngine.incomingDecided()`), or, with no room to keep it,
  /// fetches it again.
  case pending
}

/// Asked, synchronously and without blocking, before the engine writes an
/// incoming note of a folder, and told after it was written. The decision
/// is made elsewhere (a command on a thread of the gate's own); the engine
/// never waits for it, so a slow or hanging command holds back only the
/// note it was asked about.
public protocol IncomingGate: Sendable {
  func decision(for activity: IncomingActivity) -> IncomingDecision
  /// The activity was written (at `activity.path`).
  func written(_ activity: IncomingActivity)
}
