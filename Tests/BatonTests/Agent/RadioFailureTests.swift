import Testing

@testable import BatonAgent
@testable import BatonBlueZ
@testable import BatonHCI
@testable import BatonHost
@testable import BatonRadio
@testable import BatonSystem

/// Each backend's errors in the kinds the agent acts on (`RadioFailure`):
/// the agent matches these, never a backend's own error type.
@Suite struct RadioFailureTests {
  let peer = BluetoothAddress(littleEndian: [1, 2, 3, 4, 5, 6])!

  @Test func ourOwnHostsStatuses() {
    #expect(
      BLEHost.failure(of: HCIError.connectionFailed(peer: peer, status: .memoryCapacityExceeded))
        == .noRoom)
    #expect(
      BLEHost.failure(
        of: HCIError.commandFailed(command: "LE Create Connection", status: .connectionLimitExceeded)) == .noRoom)
    #expect(BLEHost.failure(of: HCIError.connectionAttemptPending(peer: peer)) == .attemptStuck)
    #expect(
      BLEHost.failure(of: HCIError.connectionFailed(peer: peer, status: .commandDisallowed)) == nil)
    #expect(BLEHost.failure(of: BlueZError.connect(peer: peer, errno: .noMemory)) == nil)
  }

  @Test func theKernelsErrnos() {
    #expect(BlueZHost.failure(of: BlueZError.connect(peer: peer, errno: .noMemory)) == .noRoom)
    #expect(BlueZHost.failure(of: BlueZError.connect(peer: peer, errno: .linkLimit)) == .noRoom)
    #expect(BlueZHost.failure(of: BlueZError.connect(peer: peer, errno: .busy)) == nil)
    #expect(BlueZHost.failure(of: HCIError.connectionAttemptPending(peer: peer)) == nil)
  }
}
