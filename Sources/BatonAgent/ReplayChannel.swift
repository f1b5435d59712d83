import BatonSystem
import Synchronization

/// A channel whose first message was read already (to tell a pairing's P1
/// from a handoff's M1 while `baton pair` shows a code): `receive` hands
/// that message out first, then reads on.
final class ReplayChannel: ChannelWrapper {
  let inner: any MessageChannel
  private let first: Mutex<[UInt8]?>

  init(_ inner: any MessageChannel, first: [UInt8]) {
    self.inner = inner
    self.first = Mutex(first)
  }

  func receive() async throws -> [UInt8]? {
    if let message = first.withLock({ m -> [UInt8]? in
      defer { m = nil }
      return m
    }) {
      return message
    }
    return try await inner.receive()
  }
}
