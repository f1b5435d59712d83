import Synchronization

#if canImport(Glibc)
  import Glibc
#endif
import Testing

@testable import BatonSystem

/// `Capabilities` on a thread of its own (capabilities are a thread's):
/// lowered, CAP_NET_ADMIN stays permitted, and `withNetAdmin` makes it
/// effective for its body only.
@Suite struct CapabilitiesTests {
  @Test(.enabled(if: getuid() == 0, "only root holds CAP_NET_ADMIN here"))
  func netAdminIsEffectiveOnlyWithinWithNetAdmin() async {
    let seen = Mutex<[(effective: Bool, permitted: Bool)]>([])
    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
      OwnedThread.start(name: "test-caps") {
        seen.withLock { $0.append(Capabilities.netAdmin) }
        Capabilities.lowerAtStart()
        seen.withLock { $0.append(Capabilities.netAdmin) }
        Capabilities.withNetAdmin { seen.withLock { $0.append(Capabilities.netAdmin) } }
        seen.withLock { $0.append(Capabilities.netAdmin) }
        done.resume()
      }
    }
    let states = seen.withLock { $0.map { [$0.effective, $0.permitted] } }
    #expect(states == [[true, true], [false, true], [true, true], [false, true]])
    // This thread (another) keeps what it had.
    #expect(Capabilities.netAdmin.effective)
  }
}
