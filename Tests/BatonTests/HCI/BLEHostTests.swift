import Foundation
import Synchronization
import Testing

@testable import BatonHCI
@testable import BatonHost
@testable import BatonL2CAP
@testable import BatonRadio

/// Our host against bumble's simulated controllers: two of our hosts on one
/// radio, a fresh simulator per test.
@Suite("BLEHost", .serialized)
struct BLEHostTests {
  /// Two hosts up on a fresh radio; `body` runs, then everything stops.
  static func withHosts(
    _ count: Int = 2, hciLog: String? = nil, pace: LinkPace.Schedule = .standard,
    _ body: ([BLEHost], SimulatedRadio) async throws -> Void
  ) async throws {
    let radio = try SimulatedRadio(controllers: count)
    defer { radio.stop() }
    var hosts: [BLEHost] = []
    do {
      for index in 0..<count {
        hosts.append(
          try await BLEHost.open(
            controller: radio.spec(index), hciLog: index == 0 ? hciLog : nil, pace: pace))
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
      let data: [UInt8] =
        [0x02, 0x01, 0x06, 0x05, 0xFF, 0x4C, 0x00, 0x0C, 0x0E] + Array(repeating: 0xAB, count: 22)
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
        if report.data == changed {
          seen = true
          break
        }
        if ContinuousClock.now > deadline { break }
      }
      #expect(seen)
    }
  }

  /// The scan schedule's search (a burst or a window) asks for each
  /// advertiser once per scan (the controller's Filter_Duplicates, which the
  /// simulated radio models): a peer's changed beacon is not reported again
  /// until every report is asked for. An advertisement the subscriber does
  /// not accept (a stranger's) never reaches its stream.
  @Test func aSearchHearsEachAdvertiserOnceAndStrangersNotAtAll() async throws {
    try await Self.withHosts(3) { hosts, _ in
      let (peer, stranger, scanner) = (hosts[0], hosts[1], hosts[2])
      func beacon(_ fill: UInt8) -> [UInt8] { [0x02, 0x01, 0x06, 0x05, 0xFF, 0xFF, 0xFF, fill, fill] }
      try await peer.startAdvertising(data: beacon(1), intervalMilliseconds: 40)
      try await stranger.startAdvertising(
        data: [0x02, 0x01, 0x06, 0x03, 0xFF, 0x4C, 0x00], intervalMilliseconds: 40)
      // Asked before the scan starts, so that it starts filtered: a report
      // from an unfiltered start could otherwise come after the filter's.
      try await scanner.setScanning(true, everyReport: false)
      let scan = try await scanner.startScanning(accepting: { $0.count > 6 && $0[5] == 0xFF })
      final class Heard: Sendable { let reports = Mutex<[AdvertisingReport]>([]) }
      let heardSoFar = Heard()
      let collector = Task {
        for await report in scan { heardSoFar.reports.withLock { $0.append(report) } }
      }
      defer { collector.cancel() }
      func heard(_ data: [UInt8]) -> Bool {
        heardSoFar.reports.withLock { $0.contains { $0.data == data } }
      }
      #expect(await eventually(5) { heard(beacon(1)) })
      try await peer.updateAdvertisingData(beacon(2))
      // About 25 advertisements of the changed beacon go out meanwhile.
      try await Task.sleep(for: .seconds(1))
      #expect(!heard(beacon(2)), "the controller reported the peer twice in one search")
      try await scanner.setScanning(true, everyReport: true)
      #expect(await eventually(5) { heard(beacon(2)) })
      #expect(heardSoFar.reports.withLock { $0.allSatisfy { $0.address == peer.address } })
    }
  }

  /// Sends `bytes` over `from` in messages of `chunk` bytes and collects
  /// them on `to`; returns what arrived.
  static func transfer(_ bytes: [UInt8], from: L2CAPChannel, to: L2CAPChannel, chunk: Int)
    async throws -> [UInt8]
  {
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
      await #expect(throws: L2CAPError.self) {
        try await channel.send(Array(repeating: 0, count: 65536))
      }
      await channel.close()
      #expect(try await accepted.receive() == nil)
      await #expect(throws: L2CAPError.self) { try await accepted.send([1]) }
      await a.disconnect(connection)
      #expect(!connection.isConnected)
    }
  }

  @Test func severalConnectionsAtOnceAndDisconnectFromEachSide() async throws {
    try await Self.withHosts(3) { hosts, _ in
      let (a, b, c) = (hosts[0], hosts[1], hosts[2])
      let listenB = b.listen(psm: 0x0082)
      let listenC = c.listen(psm: 0x0082)
      try await b.startAdvertising(data: [0x02, 0x01, 0x06], intervalMilliseconds: 30)
      try await c.startAdvertising(data: [0x02, 0x01, 0x06], intervalMilliseconds: 30)
      let toB = try await a.connect(to: b.address, timeout: .seconds(5))
      let toC = try await a.connect(to: c.address, timeout: .seconds(5))
      #expect(toB.handle != toC.handle)
      #expect(a.connections.count == 2)
      let chB = try await a.openChannel(toB, psm: 0x0082)
      let chC = try await a.openChannel(toC, psm: 0x0082)
      var itB = listenB.makeAsyncIterator()
      var itC = listenC.makeAsyncIterator()
      let atB = try #require(await itB.next())
      let atC = try #require(await itC.next())
      try await chB.send(Array("to b".utf8))
      try await chC.send(Array("to c".utf8))
      #expect(try await atB.receive() == Array("to b".utf8))
      #expect(try await atC.receive() == Array("to c".utf8))
      // B's side disconnects: A sees it, and B advertises again.
      var incomingB = b.incomingConnections.makeAsyncIterator()
      let fromA = try #require(await incomingB.next())
      await b.disconnect(fromA)
      #expect(await toB.waitForDisconnection() == .remoteUserTerminated)
      #expect(try await chB.receive() == nil)
      // A disconnects C.
      await a.disconnect(toC)
      #expect(!toC.isConnected)
      #expect(try await atC.receive() == nil)
      #expect(a.connections.isEmpty)
      // B advertises again after its connection ended: A reconnects.
      let again = try await a.connect(to: b.address, timeout: .seconds(5))
      #expect(again.isConnected)
    }
  }

  @Test func aQuietLinkSlowsDownAndDataSpeedsItUp() async throws {
    var schedule = LinkPace.Schedule.standard
    schedule.quietSpell = .milliseconds(300)
    try await Self.withHosts(pace: schedule) { hosts, _ in
      let (a, b) = (hosts[0], hosts[1])
      let listener = b.listen(psm: 0x0083)
      try await b.startAdvertising(data: [0x02, 0x01, 0x06], intervalMilliseconds: 30)
      let connection = try await a.connect(to: b.address, timeout: .seconds(5))
      var incoming = b.incomingConnections.makeAsyncIterator()
      let atB = try #require(await incoming.next())
      let channel = try await a.openChannel(connection, psm: 0x0083)
      var iterator = listener.makeAsyncIterator()
      let accepted = try #require(await iterator.next())
      // bumble's controller takes the top of the range asked for: 200 ms
      // idle, 50 ms busy; the peripheral hears it over the air and asks
      // for nothing itself.
      #expect(
        await eventually(10, "the idle pace on both sides") {
          connection.interval == .milliseconds(200) && atB.interval == .milliseconds(200)
        })
      #expect(atB.wantedPace == nil)
      try await accepted.send(Array("wake up".utf8))
      #expect(try await channel.receive() == Array("wake up".utf8))
      #expect(
        await eventually(10, "the busy pace on both sides") {
          connection.interval == .milliseconds(50) && atB.interval == .milliseconds(50)
        })
      #expect(
        await eventually(10, "idle again") { connection.interval == .milliseconds(200) })
    }
  }

  @Test func connectTimesOutByOurOwnClock() async throws {
    try await Self.withHosts(1) { hosts, _ in
      let nobody = BluetoothAddress.randomStatic()
      await #expect(throws: HCIError.self) {
        _ = try await hosts[0].connect(to: nobody, timeout: .milliseconds(500))
      }
    }
  }

  @Test func lostTransportEndsStreamsAndIsReported() async throws {
    let radio = try SimulatedRadio(controllers: 1)
    let host = try await BLEHost.open(controller: radio.spec(0))
    let scan = try await host.startScanning()
    let incoming = host.incomingConnections
    radio.stop()
    let reason = await host.waitUntilClosed()
    #expect(reason != nil)
    #expect("\(reason!)".contains("lost"))
    for await _ in scan {}
    for await _ in incoming {}
    #expect(host.isClosed)
    await #expect(throws: (any Error).self) {
      try await host.startAdvertising(data: [], intervalMilliseconds: 100)
    }
  }

  @Test func badSpecsAndUnreachableControllersGiveClearErrors() async throws {
    await #expect(throws: ControllerSpecError.self) {
      _ = try await BLEHost.open(controller: "tcp:127.0.0.1")
    }
    do {
      _ = try await BLEHost.open(controller: "tcp:127.0.0.1:1")
      Issue.record("connecting to port 1 should fail")
    } catch {
      #expect("\(error)".contains("tcp:127.0.0.1:1"))
    }
  }

  @Test func btsnoopLogOfAFullSessionDecodesCleanlyInBtmon() async throws {
    let dir = try TestEnvironment.temporaryDirectory("hci-log")
    defer { try? FileManager.default.removeItem(at: dir) }
    let path = dir.appendingPathComponent("session.btsnoop").path
    try await Self.withHosts(hciLog: path) { hosts, _ in
      let (a, b) = (hosts[0], hosts[1])
      let listener = a.listen(psm: 0x0083)
      try await a.startAdvertising(
        data: [0x02, 0x01, 0x06, 0x03, 0xFF, 0x01, 0x02], intervalMilliseconds: 30)
      let scanA = try await a.startScanning()
      try await b.startAdvertising(data: [0x02, 0x01, 0x06], intervalMilliseconds: 30)
      _ = await Self.firstReport(from: b.address, in: scanA)
      try await a.stopScanning()
      let connection = try await b.connect(to: a.address, timeout: .seconds(5))
      let channel = try await b.openChannel(connection, psm: 0x0083)
      var iterator = listener.makeAsyncIterator()
      let accepted = try #require(await iterator.next())
      let data = Self.pattern(20_000)
      #expect(try await Self.transfer(data, from: channel, to: accepted, chunk: 5000) == data)
      #expect(try await Self.transfer(data, from: accepted, to: channel, chunk: 5000) == data)
      await channel.close()
      await b.disconnect(connection)
      _ = try await a.rotateAddress()
    }
    let btmon = try ChildProcess("/usr/bin/btmon", ["-r", path])
    var lines: [String] = []
    while let line = btmon.readLine() { lines.append(line) }
    #expect(btmon.wait() == 0)
    let text = lines.joined(separator: "\n")
    #expect(text.contains("LE Connection Complete"))
    #expect(text.contains("LE Connection Request"))
    #expect(text.contains("ACL Data TX"))
    #expect(text.contains("Advertising Report"))
    let bad = lines.filter {
      let l = $0.lowercased()
      return l.contains("malformed") || l.contains("invalid size") || l.contains("invalid packet")
        || l.contains("too short") || l.contains("unknown packet")
    }
    #expect(bad.isEmpty, "btmon complained: \(bad.prefix(5))")
    #expect(lines.count > 100)
  }

  @Test func legacyReportsAreUnderstoodAndDuplicatesDropped() async throws {
    let radio = try SimulatedRadio(controllers: 2, extendedAdvertising: false)
    defer { radio.stop() }
    let a = try await BLEHost.open(controller: radio.spec(0))
    let b = try await BLEHost.open(controller: radio.spec(1), duplicateWindow: .seconds(10))
    try await a.startAdvertising(
      data: [0x02, 0x01, 0x06, 0x02, 0xFF, 0x42], intervalMilliseconds: 20)
    let scan = try await b.startScanning()
    let report = await Self.firstReport(from: a.address, in: scan)
    #expect(report?.extended == false)
    #expect(report?.data == [0x02, 0x01, 0x06, 0x02, 0xFF, 0x42])
    // About 50 advertisements a second, each reported twice: within the
    // window, none of them is delivered again.
    let repeats = await withTaskGroup(of: Int.self) { group in
      group.addTask {
        var count = 0
        for await r in scan where r.address == a.address { count += 1 }
        return count
      }
      try? await Task.sleep(for: .milliseconds(800))
      try? await b.stopScanning()
      return await group.next() ?? -1
    }
    #expect(repeats == 0)
    await a.close()
    await b.close()
  }
}
