import BatonSystem
import Synchronization

/// Sends one handshake message again while its sender waits for the
/// answer (PROTOCOL.md section 4, "Repeats"): every `interval`, at most
/// `HandshakeRepeater.limit` times in all, counting the repeats `now()`
/// sends when the peer's answer says ours was lost or damaged. A repeat
/// has the same bytes as the first, so the peer answers it with the same
/// bytes too.
///
/// The timer runs on a task of its own, so the wait for the answer is an
/// ordinary receive; `stop()` ends it before the sender's next message
/// goes out, so a repeat never follows that message.
final class HandshakeRepeater: Sendable {
  /// Repeats of one message, in all.
  static let limit = 3
  /// How long a side waits for an answer before it repeats its message: many
  /// round trips of a slow link (a 100 ms connection interval), and the
  /// time to make M2 (an Ed25519 signature and an X25519 agreement).
  static let interval: Duration = .seconds(1)

  private let channel: any MessageChannel
  private let message: [UInt8]
  private let sent = Mutex(0)
  private let timer: Mutex<Task<Void, Never>?> = Mutex(nil)

  /// Starts the timer for `message`, which the caller has just sent.
  init(_ message: [UInt8], over channel: any MessageChannel, interval: Duration = interval) {
    self.channel = channel
    self.message = message
    let task = Task { [weak self] in
      while true {
        do { try await Timers.shared.sleep(for: interval) } catch { return }
        guard let self, await self.now() else { return }
      }
    }
    timer.withLock { $0 = task }
  }

  /// Sends the message again now, if repeats are left; false when none is
  /// (or the channel refused it).
  @discardableResult
  func now() async -> Bool {
    let allowed = sent.withLock { count -> Bool in
      guard count < Self.limit else { return false }
      count += 1
      return true
    }
    guard allowed, !Task.isCancelled else { return false }
    do {
      try await channel.send(message)
      return true
    } catch {
      return false
    }
  }

  /// Ends the timer, after any repeat it is sending.
  func stop() async {
    guard let task = timer.withLock({ t -> Task<Void, Never>? in defer { t = nil }; return t })
    else { return }
    task.cancel()
    await task.value
  }

  deinit { timer.withLock { $0?.cancel() } }
}
