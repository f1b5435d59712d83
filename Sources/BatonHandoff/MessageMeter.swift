import Synchronization

/// How much of the message a channel is receiving has come so far: a note
/// of a megabyte arrives in hundreds of frames, and `baton status` shows
/// its bytes as they come (`TransferProgress.receiving`). Set by
/// `SecureChannel.receive` on whatever thread runs it, read by the engine.
final class MessageMeter: Sendable {
  private let bytes = Atomic<Int>(0)

  /// Bytes of the message under way; 0 between messages.
  var value: Int { bytes.load(ordering: .relaxed) }

  func set(_ count: Int) { bytes.store(count, ordering: .relaxed) }
}
