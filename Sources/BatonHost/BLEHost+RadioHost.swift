import BatonHCI
import BatonL2CAP
import BatonRadio
import BatonSystem

/// `BLEHost` as the agent's `RadioHost`: the existing calls, plus a channel
/// that disconnects the link it made when it closes.
extension BLEHost: RadioHost {
  package var ownsAddress: Bool { true }
  package var connectsFromAnotherAddress: Bool { false }
  /// Our own resolvable address, rotated by the agent (PROTOCOL.md 3.1).
  package var addressIsPrivate: Bool { true }
  /// We rotate the address ourselves, with a fresh seal (`rotateAddressIfOwned`).
  package var addressLifetime: Duration? { nil }

  /// Always connectable: the address is private (`addressIsPrivate`), so
  /// the agent never asks for a closed beacon here.
  package func startAdvertising(
    data: [UInt8], intervalMilliseconds: Int, connectable: Bool
  ) async throws {
    try await startAdvertising(data: data, intervalMilliseconds: intervalMilliseconds)
  }

  package func updateAdvertisingData(_ data: [UInt8], connectable: Bool) async throws {
    try await updateAdvertisingData(data)
  }

  package func failure(of error: any Error) -> RadioFailure? { Self.failure(of: error) }

  /// The statuses and errors of our own host that the agent acts on.
  package static func failure(of error: any Error) -> RadioFailure? {
    switch error {
    case HCIError.connectionAttemptPending:
      return .attemptStuck
    case HCIError.connectionFailed(_, let status), HCIError.commandFailed(_, let status):
      return status == .memoryCapacityExceeded || status == .connectionLimitExceeded
        ? .noRoom : nil
    default:
      return nil
    }
  }

  /// Our own host on an exclusive controller carries no audio.
  package func changes() -> AsyncStream<RadioHostChange> {
    AsyncStream { continuation in
      continuation.yield(.audio(false))
      continuation.finish()
    }
  }

  package func listenForChannels(psm: UInt16) -> AsyncStream<any PeerChannel> {
    let channels = listen(psm: psm)
    return AsyncStream { continuation in
      let task = Task {
        for await channel in channels { continuation.yield(channel) }
        continuation.finish()
      }
      continuation.onTermination = { _ in task.cancel() }
    }
  }

  package func incomingPeers() -> AsyncStream<BluetoothAddress> {
    AsyncStream { continuation in
      let task = Task {
        for await connection in incomingConnections { continuation.yield(connection.peerAddress) }
        continuation.finish()
      }
      continuation.onTermination = { _ in task.cancel() }
    }
  }

  package func disconnect(peer: BluetoothAddress) async {
    for connection in connections where connection.peerAddress == peer {
      await disconnect(connection)
    }
  }

  package func isConnected(to peer: BluetoothAddress) -> Bool {
    connections.contains { $0.peerAddress == peer }
  }

  package func openChannel(
    to peer: BluetoothAddress, addressType: AddressType, psm: UInt16, timeout: Duration
  ) async throws -> any PeerChannel {
    // Our peers on this backend always use random static addresses; the
    // connection is made as before (address type random).
    let connection = try await connect(to: peer, timeout: timeout)
    do {
      return LinkOwningChannel(
        try await openChannel(connection, psm: psm), host: self, connection: connection)
    } catch {
      await disconnect(connection)
      throw error
    }
  }

  package func rotateAddressIfOwned(
    to address: BluetoothAddress, advertisingData: [UInt8]
  ) async throws -> BluetoothAddress? {
    try await rotateAddress(to: address, advertisingData: advertisingData)
  }
}

/// An L2CAP channel whose `close()` also disconnects the link opened for it.
final class LinkOwningChannel: PeerChannel, ChannelWrapper {
  let channel: L2CAPChannel
  let host: BLEHost
  let connection: LEConnection

  init(_ channel: L2CAPChannel, host: BLEHost, connection: LEConnection) {
    self.channel = channel
    self.host = host
    self.connection = connection
  }

  var inner: any MessageChannel { channel }
  var peerAddress: BluetoothAddress { channel.peerAddress }
  func close() async {
    await channel.close()
    await host.disconnect(connection)
  }
}

extension L2CAPChannel: PeerChannel {}
