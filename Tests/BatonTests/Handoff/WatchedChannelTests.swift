import BatonTestSupport
import Synchronization
import Testing

@testable import BatonHandoff

/// `WatchedChannel`, which a link's watchdog reads: the action it calls when
/// a send starts must cost the same at the thousandth send as at the first.
@Suite struct WatchedChannelTests {
  /// Where the stack is, inside the action, at each call.
  final class Depths: Sendable {
    let values = Mutex<[UInt]>([])
    func record() {
      var marker = 0
      let address = withUnsafeMutablePointer(to: &marker) { UInt(bitPattern: $0) }
      values.withLock { $0.append(address) }
    }
  }

  /// Before: every send passed the stored action through `Mutex.withLock`'s
  /// generic `inout`, which wrapped it in two more reabstraction thunks each
  /// time; after 2,000 pushed notes the call of the action overflowed a
  /// pool thread's stack (SIGSEGV, an agent gone mid catch-up).
  @Test func theSendStartActionDoesNotGrowWithEverySend() async throws {
    let (a, b) = InMemoryMessageChannel.pair()
    let watched = WatchedChannel(a)
    let depths = Depths()
    watched.onSendStart { depths.record() }
    for _ in 0..<1000 { try await watched.send([1]) }
    let recorded = depths.values.withLock { $0 }
    #expect(recorded.count == 1000)
    let spread = (recorded.max() ?? 0) - (recorded.min() ?? 0)
    #expect(spread < 4096, "the stack under the action grew by \(spread) bytes over 1000 sends")
    await b.close()
  }
}
