import BatonSystem

/// The seam between the agent and a Bluetooth backend: what `AgentRadio`
/// needs to advertise, scan, and run handoff sessions over message channels
/// with peers. `BLEHost` (our own host on an exclusive controller) and
/// `BlueZHost` (the system's bluetoothd and kernel) implement it, so the agent
/// does not know which one runs.
package protocol RadioHost: AnyObject, Sendable {
  /// Our address as peers see it (for BlueZ with privacy: the adapter's
  /// identity address; peers see a resolvable private one).
  var address: BluetoothAddress { get }
  /// Whether the host has closed (or was lost).
  var isClosed: Bool { get }
  /// Whether `rotateAddress()` changes the address (BlueZ owns its own).
  var ownsAddress: Bool { get }
  /// Whether our connections may come from another address than `address`
  /// (then peers cannot tell that we connected to them).
  var connectsFromAnotherAddress: Bool { get }

  /// Whether the address we advertise on is private (resolvable or random,
  /// and rotated): then the beacon is always connectable. Otherwise (the
  /// adapter's public or static address, bluetoothd without `Privacy`) the
  /// beacon goes out non-connectable, from an address the kernel draws
  /// afresh, and connectable only in short windows a peer asks for
  /// (PROTOCOL.md 3.3).
  var addressIsPrivate: Bool { get }
  /// How long the system keeps the address it gave one advertisement before
  /// it may give the same advertisement another (BlueZ with privacy: the
  /// kernel's RPA timeout); nil when the address is ours or never changes
  /// under a live advertisement. The agent re-seals well within it, so no
  /// seal is heard under two addresses (PROTOCOL.md 3.3).
  var addressLifetime: Duration? { get }

  /// Advertises `data`, connectable or not (see `addressIsPrivate`).
  func startAdvertising(data: [UInt8], intervalMilliseconds: Int, connectable: Bool) async throws
  /// Replaces the advertised beacon (and whether it is connectable).
  func updateAdvertisingData(_ data: [UInt8], connectable: Bool) async throws
  func stopAdvertising() async throws
  /// Advertisements heard whose data `accepts` takes (asked on the thread
  /// that received them, so the rest cost no wake-up of another), as a
  /// stream that ends when the host closes.
  func startScanning(accepting accepts: @escaping @Sendable ([UInt8]) -> Bool) async throws
    -> AsyncStream<AdvertisingReport>
  /// Turns scanning off or on again without ending the stream
  /// `startScanning` returned (the scan schedule, baton(1), Scanning).
  /// `everyReport`: every advertisement heard is reported (a keyed peer's
  /// beacon tells of its changes); otherwise each advertiser may be
  /// reported once per scan (a search for new peers), so that a busy room
  /// costs the host little. A host that hears peers by itself
  /// (`.passiveScan`) starts no scan of its own meanwhile: this turns that
  /// passive scan off and on instead (BlueZ: withdraws its advertisement
  /// monitor and offers it again).
  func setScanning(_ on: Bool, everyReport: Bool) async throws
  /// What the scan schedule needs to know of the adapter, as it changes:
  /// whether it carries an audio stream (said at once, then at every
  /// change), that it came back after it was lost or powered off, and
  /// whether the host hears peers' beacons by itself (`.passiveScan`). An
  /// exclusive controller carries no audio, is reopened, not brought back,
  /// and scans only when told: its stream only says `.audio(false)`.
  func changes() -> AsyncStream<RadioHostChange>
  /// Channels peers open to `psm`.
  func listenForChannels(psm: UInt16) -> AsyncStream<any PeerChannel>
  /// Peers that connected to us (they are about to open a channel).
  func incomingPeers() -> AsyncStream<BluetoothAddress>
  /// Ends the connection with `peer`, if any (a peer that connected and
  /// opened no channel, or a link found dead); where the backend owns its
  /// connections (BlueZ: the kernel), closing the channel is all there is.
  func disconnect(peer: BluetoothAddress) async
  /// Whether a link to `peer` is up already.
  func isConnected(to peer: BluetoothAddress) -> Bool
  /// Connects to `peer` and opens a channel to `psm`; closing the channel
  /// also ends the link if this call made it.
  func openChannel(
    to peer: BluetoothAddress, addressType: AddressType, psm: UInt16, timeout: Duration
  ) async throws -> any PeerChannel
  /// A new address where the backend owns it; nil where it does not.
  /// Switches to `address` where the backend owns its address, with
  /// `advertisingData` installed before advertising resumes; nil (and nothing
  /// done) where it does not.
  func rotateAddressIfOwned(to address: BluetoothAddress, advertisingData: [UInt8]) async throws
    -> BluetoothAddress?
  func close() async
  /// nil after `close()`, the error when the host was lost.
  func waitUntilClosed() async -> (any Error)?
  /// What `error`, thrown by this host, means to the agent; nil when it is
  /// nothing the agent acts on (the error is only logged).
  func failure(of error: any Error) -> RadioFailure?
}

/// A backend's failure in the kinds the agent acts on, whichever backend
/// raised it: the agent never matches a backend's own error type.
package enum RadioFailure: Sendable, Equatable {
  /// The controller holds no more connections (HCI Memory Capacity
  /// Exceeded or Connection Limit Exceeded; through the kernel, ENOMEM or
  /// EMLINK): links are kept at the number up.
  case noRoom
  /// The controller still holds an abandoned connection attempt it did not
  /// cancel (an exclusive controller; the kernel cleans up its own): after
  /// a few in a row, the controller is reopened.
  case attemptStuck
}

/// A change of the adapter that the scan schedule depends on.
package enum RadioHostChange: Sendable, Equatable {
  /// The adapter carries an audio stream (true) or no longer does.
  case audio(Bool)
  /// The adapter is usable again (powered on, plugged in, bluetoothd back).
  case adapterBack
  /// The host hears peers' beacons by itself, through a passive scan of the
  /// system's (BlueZ: bluetoothd's advertisement monitor), named for
  /// `baton status`; nil: no longer, it scans when told (`setScanning`).
  case passiveScan(String?)
}

/// A message channel to a known peer.
package protocol PeerChannel: MessageChannel {
  var peerAddress: BluetoothAddress { get }
}
