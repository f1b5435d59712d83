import Foundation
import Testing

@testable import BatonHCI
@testable import BatonHost
@testable import BatonRadio
@testable import BatonSystem

/// Our host against an independent host: bumble's own stack
/// (Tests/Radio/peer.py) on another controller of the same simulated radio.
@Suite("Bumble interop", .serialized)
struct BumbleInteropTests {
  /// Starts peer.py with `arguments` (the controller port is added).
  static func peer(_ arguments: [String], port: UInt16) throws -> ChildProcess {
    let script = TestEnvironment.repository.appendingPathComponent("Tests/Radio/peer.py").path
    return try ChildProcess(
      TestEnvironment.python, [script] + arguments + ["--port", String(port), "--seconds", "20"])
  }

  /// The peer's next output line, read on a thread of its own so that no
  /// concurrency pool thread blocks.
  static func line(_ process: ChildProcess) async -> String? {
    await withCheckedContinuation { continuation in
      let thread = Thread { continuation.resume(returning: process.readLine()) }
      thread.start()
    }
  }

  /// Reads lines until one starts with `prefix`; fails on ERROR or end.
  static func expectLine(_ prefix: String, from process: ChildProcess) async throws -> [String] {
    while let text = await line(process) {
      if text.hasPrefix("ERROR") { throw PeerError.failed(text) }
      if text.hasPrefix(prefix) { return text.split(separator: " ").map(String.init) }
    }
    throw PeerError.failed("peer ended before printing \(prefix)")
  }

  enum PeerError: Error, CustomStringConvertible {
    case failed(String)
    var description: String {
      switch self {
      case .failed(let text): "peer.py: \(text)"
      }
    }
  }

  @Test func bumbleScannerSeesOurAdvertisementWithExactBytes() async throws {
    let radio = try SimulatedRadio(controllers: 2)
    defer { radio.stop() }
    let host = try await BLEHost.open(controller: radio.spec(0))
    let data: [UInt8] = [0x02, 0x01, 0x06, 0x1B, 0xFF] + (0..<26).map { UInt8($0 * 9 & 0xFF) }
    #expect(data.count == 31)
    try await host.startAdvertising(data: data, intervalMilliseconds: 30)
    let scanner = try Self.peer(["scan"], port: radio.ports[1])
    defer { scanner.stop() }
    _ = try await Self.expectLine("READY", from: scanner)
    let hexData = data.map { String(format: "%02x", $0) }.joined()
    var heard = false
    while let words = try? await Self.expectLine("ADV", from: scanner) {
      if words[1].uppercased() == host.address.description && words[2] == hexData {
        heard = true
        break
      }
    }
    #expect(heard)
    await host.close()
  }

  @Test func ourCentralOpensChannelToBumblePeripheral() async throws {
    let radio = try SimulatedRadio(controllers: 2)
    defer { radio.stop() }
    let server = try Self.peer(
      ["l2cap-server", "--psm", "0x0085", "--bytes", "100000"], port: radio.ports[1])
    defer { server.stop() }
    let ready = try await Self.expectLine("READY", from: server)
    let peerAddress = try #require(BluetoothAddress(ready[1]))
    let host = try await BLEHost.open(controller: radio.spec(0))
    let connection = try await host.connect(to: peerAddress, timeout: .seconds(5))
    let channel = try await host.openChannel(connection, psm: 0x0085)
    _ = try await Self.expectLine("CHANNEL", from: server)
    let outgoing = BLEHostTests.pattern(100_000)
    var offset = 0
    while offset < outgoing.count {
      let end = min(outgoing.count, offset + channel.maximumMessageSize, offset + 4000)
      try await channel.send(Array(outgoing[offset..<end]))
      offset = end
    }
    let received = try await Self.expectLine("RECEIVED", from: server)
    #expect(received[1] == "100000")
    #expect(received[2] == ContentHash(of: outgoing).hex)
    var incoming: [UInt8] = []
    while incoming.count < 100_000, let message = try await channel.receive() {
      incoming += message
    }
    #expect(incoming == BLEHostTests.pattern(100_000, seed: 1))
    await channel.close()
    _ = try await Self.expectLine("CLOSED", from: server)
    await host.disconnect(connection)
    #expect(!connection.isConnected)
    await host.close()
  }

  @Test func bumbleCentralOpensChannelToUs() async throws {
    let radio = try SimulatedRadio(controllers: 2)
    defer { radio.stop() }
    let host = try await BLEHost.open(controller: radio.spec(0))
    let channels = host.listen(psm: 0x0091)
    try await host.startAdvertising(data: [0x02, 0x01, 0x06], intervalMilliseconds: 30)
    let client = try Self.peer(
      ["l2cap-client", "--peer", host.address.description, "--psm", "0x0091", "--bytes", "100000"],
      port: radio.ports[1])
    defer { client.stop() }
    var connections = host.incomingConnections.makeAsyncIterator()
    let connection = try #require(await connections.next())
    #expect(connection.role == .peripheral)
    var iterator = channels.makeAsyncIterator()
    let channel = try #require(await iterator.next())
    var incoming: [UInt8] = []
    while incoming.count < 100_000, let message = try await channel.receive() {
      incoming += message
    }
    #expect(incoming == BLEHostTests.pattern(100_000, seed: 2))
    let outgoing = BLEHostTests.pattern(100_000, seed: 5)
    var offset = 0
    while offset < outgoing.count {
      let end = min(outgoing.count, offset + min(channel.maximumMessageSize, 3000))
      try await channel.send(Array(outgoing[offset..<end]))
      offset = end
    }
    let received = try await Self.expectLine("RECEIVED", from: client)
    #expect(received[2] == ContentHash(of: outgoing).hex)
    _ = try await Self.expectLine("DISCONNECTED", from: client)
    #expect(await connection.waitForDisconnection() == .remoteUserTerminated)
    #expect(try await channel.receive() == nil)
    await host.close()
  }
}
