import Synchronization
import Testing

@testable import BatonAgent
@testable import BatonBlueZ
@testable import BatonDBus
@testable import BatonSystem

/// The advertisement monitor bluetoothd calls for every advertisement of a
/// peer: each call must cost what the first did.
@Suite struct AdvertisementMonitorTests {
  /// Where the stack is, inside the handler, at each call.
  final class Depths: Sendable {
    let values = Mutex<[UInt]>([])
    func record() {
      var marker = 0
      let address = withUnsafeMutablePointer(to: &marker) { UInt(bitPattern: $0) }
      values.withLock { $0.append(address) }
    }
  }

  /// Before: the handler was a bare optional closure in a Mutex, read with
  /// `withLock { $0 }`: the generic `inout` reabstracted it at every call,
  /// one thunk more each time, so the bus thread's stack under the handler
  /// (and the heap of thunk contexts) grew with every advertisement heard.
  @Test func deviceFoundDoesNotGrowWithEveryCall() {
    let monitor = AdvertisementMonitor()
    let depths = Depths()
    let found = Mutex(0)
    monitor.onEvent { event in
      if case .found = event {
        found.withLock { $0 += 1 }
        depths.record()
      }
    }
    for _ in 0..<1000 {
      _ = monitor.object.method(":1.1", "DeviceFound", [.objectPath("/org/bluez/hci0/dev_11")])
    }
    #expect(found.withLock { $0 } == 1000)
    let recorded = depths.values.withLock { $0 }
    let spread = (recorded.max() ?? 0) - (recorded.min() ?? 0)
    #expect(spread < 4096, "the stack under the handler grew by \(spread) bytes over 1000 calls")
  }
}
