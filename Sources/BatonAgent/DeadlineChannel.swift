import BatonSystem

/// A message channel whose every send must finish within `deadline`;
/// otherwise the channel is closed (which wakes the stuck send) and the send
/// fails with `DeadlineChannel.Expired`.
///
/// A peer that vanishes without disconnecting (a killed agent whose
/// controller keeps the link up, or one gone out of range before the
/// supervision timeout) would otherwise leave a sender waiting for L2CAP
/// credits that never come. Receives are not bounded here: the session
/// bounds each one itself (`HandoffPolicy.receiveTimeout`), and two
/// deadlines on one receive would race to say why it ended.
final class DeadlineChannel: ChannelWrapper {
  struct Expired: Error, CustomStringConvertible {
    let operation: String
    let seconds: Int64
    var description: String {
      "the peer did not take part for \(seconds) s (\(operation)); the channel was closed"
    }
  }

  let inner: any MessageChannel
  let deadline: Duration

  init(_ inner: any MessageChannel, deadline: Duration) {
    self.inner = inner
    self.deadline = deadline
  }

  func send(_ message: [UInt8]) async throws {
    switch await inner.withinDeadline(deadline, { try await inner.send(message) }) {
    case .finished: return
    case .failed(let error): throw error
    case .expired: throw Expired(operation: "sending", seconds: deadline.components.seconds)
    }
  }
}
