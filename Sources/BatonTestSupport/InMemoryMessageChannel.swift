import BatonSystem
import Synchronization

/// One end of an in-memory `MessageChannel` pair: what one end sends the other
/// receives, in order. Used to run the handoff protocol with no radio.
package final class InMemoryMessageChannel: MessageChannel {
  private struct Inbox {
    var messages: [[UInt8]] = []
    var waiter: CheckedContinuation<[UInt8]?, Never>?
    var closed = false
  }

  private final class Shared: Sendable {
    /// Sends (both directions) left before the pair breaks; nil: never.
    let budget: Mutex<Int?>
    init(budget: Int?) { self.budget = Mutex(budget) }
  }

  package let maximumMessageSize: Int
  private let inbox = Mutex(Inbox())
  private let shared: Shared
  private let peerBox = Mutex<InMemoryMessageChannel?>(nil)

  private init(maximumMessageSize: Int, shared: Shared) {
    self.maximumMessageSize = maximumMessageSize
    self.shared = shared
  }

  /// A connected pair. With `breakAfter`, the pair closes (both ends) once that
  /// many messages have been sent in total: a dropped connection.
  package static func pair(maximumMessageSize: Int = 512, breakAfter: Int? = nil)
    -> (InMemoryMessageChannel, InMemoryMessageChannel)
  {
    let shared = Shared(budget: breakAfter)
    let a = InMemoryMessageChannel(maximumMessageSize: maximumMessageSize, shared: shared)
    let b = InMemoryMessageChannel(maximumMessageSize: maximumMessageSize, shared: shared)
    a.peerBox.withLock { $0 = b }
    b.peerBox.withLock { $0 = a }
    return (a, b)
  }

  package struct Closed: Error, CustomStringConvertible {
    package var description: String { "in-memory channel closed" }
  }

  package struct TooLarge: Error, CustomStringConvertible {
    package let size: Int
    package var description: String { "message of \(size) bytes exceeds the channel's size" }
  }

  package func send(_ message: [UInt8]) async throws {
    guard message.count <= maximumMessageSize else { throw TooLarge(size: message.count) }
    let broken = shared.budget.withLock { budget -> Bool in
      guard let left = budget else { return false }
      if left <= 0 { return true }
      budget = left - 1
      return false
    }
    guard let peer = peerBox.withLock({ $0 }) else { throw Closed() }
    if broken {
      await close()
      throw Closed()
    }
    guard !inbox.withLock({ $0.closed }) else { throw Closed() }
    guard peer.deliver(message) else { throw Closed() }
  }

  /// Hands `message` to this end's receiver; false if this end is closed.
  private func deliver(_ message: [UInt8]) -> Bool {
    let (accepted, waiter) = inbox.withLock {
      box -> (Bool, CheckedContinuation<[UInt8]?, Never>?) in
      guard !box.closed else { return (false, nil) }
      if let waiter = box.waiter {
        box.waiter = nil
        return (true, waiter)
      }
      box.messages.append(message)
      return (true, nil)
    }
    waiter?.resume(returning: message)
    return accepted
  }

  package func receive() async throws -> [UInt8]? {
    await withTaskCancellationHandler {
      await withCheckedContinuation { (continuation: CheckedContinuation<[UInt8]?, Never>) in
        let immediate: [UInt8]?? = inbox.withLock { box in
          if !box.messages.isEmpty { return .some(box.messages.removeFirst()) }
          if box.closed { return .some(nil) }
          box.waiter = continuation
          return nil
        }
        if let immediate { continuation.resume(returning: immediate) }
      }
    } onCancel: {
      self.closeLocal(discarding: true)
    }
  }

  /// Marks this end closed and wakes its receiver; messages already delivered
  /// stay readable unless this end itself closed (`discarding`).
  private func closeLocal(discarding: Bool) {
    let waiter = inbox.withLock { box -> CheckedContinuation<[UInt8]?, Never>? in
      box.closed = true
      if discarding { box.messages.removeAll() }
      defer { box.waiter = nil }
      return box.waiter
    }
    waiter?.resume(returning: nil)
  }

  package func close() async {
    closeLocal(discarding: true)
    let peer = peerBox.withLock { p -> InMemoryMessageChannel? in
      defer { p = nil }
      return p
    }
    peer?.closeLocal(discarding: false)
    peer?.peerBox.withLock { $0 = nil }
  }
}
