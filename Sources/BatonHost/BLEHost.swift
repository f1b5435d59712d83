import BatonHCI
import BatonL2CAP
import BatonRadio
import BatonSystem
import Synchronization

/// A Bluetooth LE host on one controller: bring-up, advertising, scanning,
/// connections in both roles and L2CAP credit-based channels. The API the
/// handoff layer uses. Packet layouts and the simulator's quirks we allow
/// for: Sources/BatonHCI/HCI.docc/HCI.md.
///
/// We always use a random address (own address type random everywhere):
/// the caller's (the agent uses resolvable private ones) or a random static
/// one. A lost transport ends every stream (scans, incoming
/// connections, listeners), closes every connection and channel, and makes
/// `waitUntilClosed()` return the error; the caller reopens with back-off.
public final class BLEHost: Sendable {
  public let controller: HCIController
  /// The controller spec this host was opened on.
  public let spec: String
  /// Connections made to us while advertising (we are peripheral).
  public let incomingConnections: AsyncStream<LEConnection>
  let incomingContinuation: AsyncStream<LEConnection>.Continuation
  /// How long an identical advertisement (address and data) is suppressed.
  public let duplicateWindow: Duration
  /// The paces of the connections we are central of (`LinkPace`).
  public let paceSchedule: LinkPace.Schedule

  let log = Logger(label: "ble")
  let connectGate = AsyncGate(count: 1)
  let advertisingGate = AsyncGate(count: 1)
  let state: Mutex<State>

  struct PendingConnect {
    var id: UInt64
    var peer: BluetoothAddress
    var continuation: CheckedContinuation<LEConnection, any Error>
  }

  struct State {
    var address: BluetoothAddress
    var advertisingData: [UInt8]?
    var advertisingInterval: UInt16 = 0x00A0
    var advertisingEnabled = false
    var scanning = false
    /// Scanning is wanted off for now (`setScanning(false)`).
    var scanPaused = false
    /// The controller reports each advertiser once per scan (the schedule's
    /// bursts and windows, `setScanning(_:everyReport: false)`).
    var filterDuplicates = false
    var scanSubscribers: [UInt64: ScanSubscriber] = [:]
    var lastDelivered: [[UInt8]: ContinuousClock.Instant] = [:]
    var nextID: UInt64 = 0
    var connections: [UInt16: LEConnection] = [:]
    var pendingConnect: PendingConnect?
    var abandonedConnect: BluetoothAddress?
    var listeners: [UInt16: (id: UInt64, continuation: AsyncStream<L2CAPChannel>.Continuation)] =
      [:]
    var finished = false
    var closeReason: (any Error)?
    var closeWaiters: [CheckedContinuation<(any Error)?, Never>] = []
  }

  /// Opens the controller named by `spec` (`hciN`, `tcp:HOST:PORT`,
  /// `serial:/dev/ttyX[:BAUD]`), optionally logging every HCI packet to
  /// `hciLog` in btsnoop format, and brings it up.
  /// `address` is the random address to use (a random static one when nil).
  /// Opening connects blocking (TCP, a serial line, the kernel's user
  /// channel), so it runs on a thread of its own.
  public static func open(
    controller spec: String, hciLog: String? = nil, address: BluetoothAddress? = nil,
    duplicateWindow: Duration = .seconds(1), pace: LinkPace.Schedule = .standard
  ) async throws -> BLEHost {
    let controller = try HCITransportSpec(spec)
    let transport = try await ThreadExecutor.run(name: "hci-open") { try controller.open() }
    return try await open(
      transport: transport, spec: spec, hciLog: hciLog, address: address,
      duplicateWindow: duplicateWindow, pace: pace)
  }

  /// Brings up a host on an already open transport.
  public static func open(
    transport: any HCITransport, spec: String? = nil, hciLog: String? = nil,
    address: BluetoothAddress? = nil, duplicateWindow: Duration = .seconds(1),
    pace: LinkPace.Schedule = .standard
  ) async throws -> BLEHost {
    let snoop: BTSnoopWriter?
    do {
      snoop = try hciLog.map { try BTSnoopWriter(path: $0) }
    } catch {
      transport.close()
      throw error
    }
    let host = BLEHost(
      controller: HCIController(transport: transport, snoop: snoop),
      spec: spec ?? transport.description, address: address ?? .randomStatic(),
      duplicateWindow: duplicateWindow, pace: pace)
    do {
      try await host.bringUp()
    } catch {
      await host.close()
      throw error
    }
    return host
  }

  init(
    controller: HCIController, spec: String, address: BluetoothAddress = .randomStatic(),
    duplicateWindow: Duration, pace: LinkPace.Schedule = .standard
  ) {
    self.controller = controller
    self.spec = spec
    self.duplicateWindow = duplicateWindow
    paceSchedule = pace
    (incomingConnections, incomingContinuation) = AsyncStream.makeStream(of: LEConnection.self)
    state = Mutex(State(address: address))
    controller.onDataLoss { [weak self] handle, reason in
      self?.state.withLock { $0.connections[handle] }?.link.dataLost(reason)
    }
    controller.onSend { [weak self] handle in self?.trafficCrossed(handle: handle) }
    controller.start(
      events: { [weak self] event in self?.handle(event) },
      data: { [weak self] handle, pdu in
        guard let self else { return }
        let connection = self.state.withLock { $0.connections[handle] }
        if let connection {
          connection.link.receive(pdu)
          self.trafficCrossed(on: connection)
        } else {
          self.log.debug("data for unknown connection 0x\(hex(handle)) dropped")
        }
      },
      closed: { [weak self] reason in self?.finish(reason) })
  }

  /// A host dropped without `close()` still releases its transport (and so
  /// its reader thread).
  deinit { controller.close() }

  /// Our current random address.
  public var address: BluetoothAddress { state.withLock { $0.address } }

  /// The connections that are up.
  public var connections: [LEConnection] {
    state.withLock { Array($0.connections.values) }.sorted { $0.handle < $1.handle }
  }

  // MARK: - Bring-up

  func bringUp() async throws {
    try await controller.send(.reset)
    // A reset should stop advertising and scanning, but some controllers
    // (bumble's simulator among them) keep both across it, and then refuse
    // new parameters with Command Disallowed. Turn both off explicitly; an
    // error here only means they were off already.
    _ = try? await controller.send(.leSetScanEnable(false, filterDuplicates: false))
    _ = try? await controller.send(.leSetAdvertisingEnable(false))
    let version = try await controller.send(.readLocalVersion)
    if version.count >= 8 {
      log.info(
        "controller \(spec): HCI version \(version[0]), manufacturer 0x\(hex(UInt16(version[4]) | UInt16(version[5]) << 8))"
      )
    }
    _ = try? await controller.send(.readLocalSupportedFeatures)
    try await controller.send(.setEventMask(0x2000_1FFF_FFFF_FFFF))
    // LE: Connection Complete, Advertising Report, Connection Update Complete,
    // Read Remote Features Complete, LTK Request, Enhanced Connection Complete,
    // Extended Advertising Report.
    try await controller.send(.leSetEventMask(0x0000_0000_0000_121F))
    _ = try? await controller.send(.leReadLocalSupportedFeatures)
    var r = ByteReader(
      try await controller.send(.leReadBufferSize), decoding: "LE Read Buffer Size")
    var length = 0
    var count = 0
    do {
      length = Int(try r.u16())
      count = Int(try r.u8())
      if length == 0 || count == 0 {
        // LE shares the BR/EDR buffers.
        r = ByteReader(try await controller.send(.readBufferSize), decoding: "Read Buffer Size")
        length = Int(try r.u16())
        _ = try r.u8()
        count = Int(try r.u16())
      }
    } catch let error as HCIDecodeError {
      throw HCIError.badReturnParameters(command: "Read Buffer Size", reason: "\(error)")
    }
    guard length > 0, count > 0 else {
      throw HCIError.unsupportedController(reason: "it reports no ACL data buffers")
    }
    controller.setACLBuffers(length: length, count: count)
    let address = self.address
    try await controller.send(.leSetRandomAddress(address))
    log.info(
      "controller \(spec) up: address \(address) (random), ACL buffers \(count) x \(length) bytes"
    )
  }

  // MARK: - Address

  /// Switches to `newAddress` (a new random static address when nil).
  /// Advertising and scanning are stopped for the change (the controller
  /// refuses it otherwise) and restarted with the new address. When
  /// `advertisingData` is given it is installed before advertising resumes,
  /// so nothing advertised under the old address is ever heard under the new
  /// one. Existing connections are unaffected.
  @discardableResult
  public func rotateAddress(
    to newAddress: BluetoothAddress? = nil, advertisingData: [UInt8]? = nil
  ) async throws -> BluetoothAddress {
    if let data = advertisingData, data.count > 31 {
      throw HCIError.invalidArgument(
        "advertising data of \(data.count) bytes (legacy advertising takes 31)")
    }
    try await connectGate.acquire()
    defer { connectGate.release() }
    try await advertisingGate.acquire()
    defer { advertisingGate.release() }
    let (advertising, scanning) = state.withLock { ($0.advertisingEnabled, $0.scanning) }
    if advertising { try await setAdvertisingEnabled(false) }
    if scanning { try await controller.send(.leSetScanEnable(false, filterDuplicates: false)) }
    let address = newAddress ?? .randomStatic()
    try await controller.send(.leSetRandomAddress(address))
    state.withLock { $0.address = address }
    log.info("address rotated to \(address)")
    if let data = advertisingData {
      try await controller.send(.leSetAdvertisingData(data))
      state.withLock { if $0.advertisingData != nil { $0.advertisingData = data } }
    }
    if scanning {
      let filter = state.withLock { $0.filterDuplicates }
      try await controller.send(.leSetScanEnable(true, filterDuplicates: filter))
    }
    if advertising { try await setAdvertisingEnabled(true) }
    return address
  }

  // MARK: - Lifetime

  /// Waits until the host has closed: nil after `close()`, the error when
  /// the transport was lost.
  public func waitUntilClosed() async -> (any Error)? {
    await withCheckedContinuation { continuation in
      let done = state.withLock { s -> Bool in
        if s.finished { return true }
        s.closeWaiters.append(continuation)
        return false
      }
      if done { continuation.resume(returning: state.withLock { $0.closeReason }) }
    }
  }

  /// Whether the host has closed (or lost its transport).
  public var isClosed: Bool { state.withLock { $0.finished } }

  /// Disconnects every connection, stops advertising and scanning (best
  /// effort, briefly), then closes the transport. Idempotent.
  public func close() async {
    if !isClosed {
      // Advertising and scanning off first, so that no peer starts a
      // connection while ours are taken down (one the controller would
      // hold pending after we are gone: bumble's never ends).
      if state.withLock({ $0.advertisingEnabled }) {
        _ = try? await controller.send(.leSetAdvertisingEnable(false), timeout: .milliseconds(500))
      }
      if state.withLock({ $0.scanning }) {
        _ = try? await controller.send(
          .leSetScanEnable(false, filterDuplicates: false), timeout: .milliseconds(500))
      }
      for connection in connections {
        _ = try? await controller.send(
          .disconnect(handle: connection.handle, reason: .remoteUserTerminated),
          timeout: .milliseconds(500))
      }
    }
    controller.close()
    _ = await waitUntilClosed()
  }

  /// The transport ended: everything pending ends with it.
  private func finish(_ reason: (any Error)?) {
    let taken = state.withLock { s in
      s.finished = true
      s.closeReason = reason
      defer {
        s.connections.removeAll()
        s.scanSubscribers.removeAll()
        s.listeners.removeAll()
        s.pendingConnect = nil
        s.closeWaiters.removeAll()
        s.advertisingEnabled = false
        s.scanning = false
      }
      return (
        Array(s.connections.values), Array(s.scanSubscribers.values),
        s.listeners.values.map(\.continuation),
        s.pendingConnect, s.closeWaiters
      )
    }
    let (connections, scans, listeners, pending, waiters) = taken
    let error = reason ?? HCIError.closed
    for connection in connections { connection.markDisconnected(.localHostTerminated) }
    for scan in scans { scan.finish() }
    for listener in listeners { listener.finish() }
    incomingContinuation.finish()
    pending?.continuation.resume(throwing: error)
    connectGate.fail(error)
    advertisingGate.fail(error)
    for waiter in waiters { waiter.resume(returning: reason) }
  }

  // MARK: - Events (reader thread)

  private func handle(_ event: HCIEvent) {
    switch event {
    case .leAdvertisingReports(let reports):
      for report in reports { deliver(report) }
    case .leConnectionComplete(let complete):
      connectionComplete(complete)
    case .leConnectionUpdateComplete(let update):
      connectionUpdated(update)
    case .disconnectionComplete(let status, let handle, let reason):
      guard status == .success else { return }
      disconnectionComplete(handle: handle, reason: reason)
    default:
      break
    }
  }
}
