import BatonHCI
import BatonHandoff
import BatonL2CAP
import Synchronization

@testable import BatonAgent
@testable import BatonRadio

/// A `RadioHost` with no radio: it records what the agent asks of it
/// (advertising, scanning, connection attempts) and lets a test play what a
/// controller would report (advertisements heard, its loss). Connection
/// attempts fail with `connectFailure`, so no session or link runs.
final class FakeRadioHost: RadioHost {
  /// What a fake controller refuses a connection with.
  enum Failure: Error, Equatable {
    case noRoom, attemptStuck, unreachable
  }

  private struct State {
    var closed = false
    var lostWith: (any Error)?
    var reports: AsyncStream<AdvertisingReport>.Continuation?
    var accepts: (@Sendable ([UInt8]) -> Bool)?
    var closeWaiters: [CheckedContinuation<(any Error)?, Never>] = []
    var advertised: [(data: [UInt8], connectable: Bool)] = []
    var scanning: [Bool] = []
    var attempts: [BluetoothAddress] = []
    var connectFailure: Failure = .unreachable
  }

  let address: BluetoothAddress
  var ownsAddress: Bool { true }
  var connectsFromAnotherAddress: Bool { false }
  var addressIsPrivate: Bool { true }
  var addressLifetime: Duration? { nil }
  private let state = Mutex(State())
  private let channels = AsyncStream.makeStream(of: (any PeerChannel).self)
  private let incoming = AsyncStream.makeStream(of: BluetoothAddress.self)
  private let changeStream = AsyncStream.makeStream(of: RadioHostChange.self)

  init(address: BluetoothAddress = BluetoothAddress(littleEndian: [1, 0, 0, 0, 0, 0x50])!) {
    self.address = address
  }

  var isClosed: Bool { state.withLock { $0.closed } }
  /// The beacons advertised, in order (the first by `startAdvertising`).
  var advertised: [(data: [UInt8], connectable: Bool)] { state.withLock { $0.advertised } }
  /// Every connection attempt, in order.
  var attempts: [BluetoothAddress] { state.withLock { $0.attempts } }
  /// What the next connection attempts fail with.
  var connectFailure: Failure {
    get { state.withLock { $0.connectFailure } }
    set { state.withLock { $0.connectFailure = newValue } }
  }

  /// Whether the agent started scanning (`startScanning`).
  var isScanning: Bool { state.withLock { $0.reports != nil } }

  /// The controller heard `report`: the agent gets it if it takes it
  /// (`startScanning`'s filter); dropped before scanning started.
  func hear(_ report: AdvertisingReport) {
    state.withLock { s in
      guard let accepts = s.accepts, accepts(report.data) else { return }
      s.reports?.yield(report)
    }
  }

  /// The controller is lost, with `error`.
  func lose(_ error: any Error) {
    finish(error)
  }

  func startAdvertising(data: [UInt8], intervalMilliseconds: Int, connectable: Bool) async throws {
    state.withLock { $0.advertised.append((data, connectable)) }
  }

  func updateAdvertisingData(_ data: [UInt8], connectable: Bool) async throws {
    state.withLock { $0.advertised.append((data, connectable)) }
  }

  func stopAdvertising() async throws {}

  func startScanning(accepting accepts: @escaping @Sendable ([UInt8]) -> Bool) async throws
    -> AsyncStream<AdvertisingReport>
  {
    let (stream, continuation) = AsyncStream.makeStream(of: AdvertisingReport.self)
    let closed = state.withLock { s -> Bool in
      if !s.closed {
        s.reports = continuation
        s.accepts = accepts
      }
      return s.closed
    }
    if closed { continuation.finish() }
    return stream
  }

  func setScanning(_ on: Bool, everyReport: Bool) async throws {
    state.withLock { $0.scanning.append(on) }
  }

  func changes() -> AsyncStream<RadioHostChange> {
    changeStream.continuation.yield(.audio(false))
    return changeStream.stream
  }

  func listenForChannels(psm: UInt16) -> AsyncStream<any PeerChannel> { channels.stream }

  func incomingPeers() -> AsyncStream<BluetoothAddress> { incoming.stream }

  func disconnect(peer: BluetoothAddress) async {}

  func isConnected(to peer: BluetoothAddress) -> Bool { false }

  func openChannel(
    to peer: BluetoothAddress, addressType: AddressType, psm: UInt16, timeout: Duration
  ) async throws -> any PeerChannel {
    let failure = state.withLock { s -> Failure in
      s.attempts.append(peer)
      return s.connectFailure
    }
    throw failure
  }

  func rotateAddressIfOwned(to address: BluetoothAddress, advertisingData: [UInt8]) async throws
    -> BluetoothAddress?
  { nil }

  func close() async { finish(nil) }

  func waitUntilClosed() async -> (any Error)? {
    await withCheckedContinuation { continuation in
      let closed = state.withLock { s -> Bool in
        if !s.closed { s.closeWaiters.append(continuation) }
        return s.closed
      }
      if closed { continuation.resume(returning: state.withLock { $0.lostWith }) }
    }
  }

  func failure(of error: any Error) -> RadioFailure? {
    switch error as? Failure {
    case .noRoom: .noRoom
    case .attemptStuck: .attemptStuck
    default: nil
    }
  }

  private func finish(_ error: (any Error)?) {
    let (reports, waiters) = state.withLock {
      s -> (AsyncStream<AdvertisingReport>.Continuation?, [CheckedContinuation<(any Error)?, Never>])
      in
      guard !s.closed else { return (nil, []) }
      s.closed = true
      s.lostWith = error
      defer {
        s.reports = nil
        s.closeWaiters = []
      }
      return (s.reports, s.closeWaiters)
    }
    reports?.finish()
    channels.continuation.finish()
    incoming.continuation.finish()
    changeStream.continuation.finish()
    for waiter in waiters { waiter.resume(returning: error) }
  }
}
