/// What reached this agent from a peer, as the engine tells whoever
/// watches (`HandoffEngine.onArrival`): the agent's desktop notifications.
public enum Arrival: Sendable, Equatable {
  /// A peer's current activity arrived and was written here; one held
  /// already (met again in a later session) is not told again.
  case handedOver(HandedOverActivity)
  /// An incoming note was written, whatever brought it (a catch-up too),
  /// at `path` (a conflict copy's, when the local file was kept).
  case written(IncomingActivity)
}
