import Foundation
import Testing

@testable import BatonKit

/// Our host against bumble's simulated controllers: two of our hosts on one
/// radio, a fresh simulator per test.
@Suite("BLEHost", .serialized)
struct BLEHostTests {
  /// Two hosts up on a fresh radio; `body` runs, then everything stops.
  static func withHosts(
    _ count: Int = 2, hciLog: String? = nil, _ body: ([BLEHost], SimulatedRadio) async throws -> Void
  ) async throws {
    let radio = try SimulatedRadio(controllers: count)
    defer { radio.stop() }
    var hosts: [BLEHost] = []
    do {
      for index in 0..<count {
        hosts.append(try await BLEHost.open(controller: radio.spec(index), hciLog: index == 0 ? hciLog : nil))
      }
      try await body(hosts, radio)
    } catch {
      for host in hosts { await host.close() }
      throw error
    }
    for host in hosts { await host.close() }
  }

  /// Waits for the first report from `address` on `stream` (at most `seconds`).
  static func firstReport(
    from address: BluetoothAddress, in stream: AsyncStream<AdvertisingReport>, seconds: Double = 5
  ) async -> AdvertisingReport? {
    await withTaskGroup(of: AdvertisingReport?.self) { group in
      group.addTask {
        for await report in stream where report.address == address { return report }
        return nil
      }
      group.addTask {
        try? await Task.sleep(for: .seconds(seconds))
        return nil
      }
      let first = await group.next() ?? nil
      group.cancelAll()
      return first
    }
  }

  @Test func bringUpGivesARandomStaticAddressAndBuffers() async throws {
    try await Self.withHosts(1) { hosts, _ in
      let host = hosts[0]
      #expect(host.address.isRandomStatic)
      #expect(host.controller.aclBuffers.length == 27)
      #expect(host.controller.aclBuffers.count == 64)
      let old = host.address
      let new = try await host.rotateAddress()
      #expect(new != old && new.isRandomStatic && host.address == new)
    }
  }

  @Test func advertisementIsHeardWithExactBytesAndUpdated() async throws {
    try await Self.withHosts { hosts, _ in
      let data: [UInt8] = [0x02, 0x01, 0x06, 0x05, 0xFF, 0x4C, 0x00, 0x0C, 0x0E] + Array(repeating: 0xAB, count: 22)
      #expect(data.count == 31)
      try await hosts[0].startAdvertising(data: data, intervalMilliseconds: 40)
      let scan = try await hosts[1].startScanning()
      let report = await Self.firstReport(from: hosts[0].address, in: scan)
      #expect(report?.data == data)
      #expect(report?.addressType == .random)
      let changed: [UInt8] = [0x03, 0xFF, 0x01, 0x02]
      try await hosts[0].updateAdvertisingData(changed)
      let deadline = ContinuousClock.now + .seconds(5)
      var seen = false
      for await report in scan where report.address == hosts[0].address {
        if report.data == changed { seen = true; break }
        if ContinuousClock.now > deadline { break }
      }
      #expect(seen)
    }
  }

  /// Sends `bytes` over `from` in messages of `chunk` bytes and collects
  /// them on `to`; returns what arrived.
  static func transfer(_ bytes: [UInt8], from: L2CAPChannel, to: L2CAPChannel, chunk: Int) async throws -> [UInt8] {
    let sender = Task {
      var offset = 0
      while offset < bytes.count {
        let end = min(bytes.count, offset + chunk)
        try await from.send(Array(bytes[offset..<end]))
        offset = end
      }
    }
    var received: [UInt8] = []
    while received.count < bytes.count, let message = try await to.receive() {
      received += message
    }
    try await sender.value
    return received
  }

  static func pattern(_ count: Int, seed: Int = 0) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: ($0 &+ seed) &* 7 &+ ($0 >> 8)) }
  }

  @Test func centralAndPeripheralExchangeMessagesOverL2CAP() async throws {
    try await Self.withHosts { hosts, _ in
      let (a, b) = (hosts[0], hosts[1])
      let listener = b.listen(psm: 0x0081)
      try await b.startAdvertising(data: [0x02, 0x01, 0x06], intervalMilliseconds: 30)
      let connection = try await a.connect(to: b.address, timeout: .seconds(5))
      #expect(connection.role == .central)
      let channel = try await a.openChannel(connection, psm: 0x0081)
      var iterator = listener.makeAsyncIterator()
      let accepted = try #require(await iterator.next())
      #expect(channel.maximumMessageSize == 65535)
      let big = Self.pattern(100_000)
      #expect(try await Self.transfer(big, from: channel, to: accepted, chunk: 60_000) == big)
      let back = Self.pattern(100_000, seed: 3)
      #expect(try await Self.transfer(back, from: accepted, to: channel, chunk: 1000) == back)
      await #expect(throws: L2CAPError.self) { try await channel.send(Array(repeating: 0, count: 65536)) }
      await channel.close()
      #expect(try await accepted.receive() == nil)
      await #expect(throws: L2CAPError.self) { try await accepted.send([1]) }
      await a.disconnect(connection)
      #expect(!connection.isConnected)
    }
  }
}
