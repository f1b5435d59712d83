import Testing

@testable import BatonHCI
@testable import BatonHost

/// How the host lets go of the controller when the agent stops.
@Suite struct BLEHostCloseTests {
  /// Advertising (and scanning) stop before the connections are taken
  /// down: a peer that heard us last could otherwise start a connection
  /// the controller holds pending once we are gone (bumble's never ends,
  /// and it refuses every later LE Create Connection).
  @Test func closeStopsAdvertisingBeforeDisconnecting() async throws {
    let fake = FakeController()
    let host = try await BLEHost.open(transport: fake)
    try await host.startAdvertising(data: [0x02, 0x01, 0x06])
    fake.inject(FakeController.connectionComplete(handle: 1))
    var connections = host.incomingConnections.makeAsyncIterator()
    _ = try #require(await connections.next())
    // The connection ended that advertising; the agent advertises again to
    // stay reachable for other peers.
    try await host.startAdvertising(data: [0x02, 0x01, 0x06])
    let before = fake.sent.count
    await host.close()
    let opcodes = fake.sent.dropFirst(before).compactMap { packet -> UInt16? in
      guard packet.count >= 4, packet[0] == 0x01 else { return nil }
      return UInt16(packet[1]) | UInt16(packet[2]) << 8
    }
    let advertisingOff = try #require(opcodes.firstIndex(of: 0x200A), "\(opcodes)")
    let disconnect = try #require(opcodes.firstIndex(of: 0x0406), "\(opcodes)")
    #expect(advertisingOff < disconnect)
  }
}
