import BatonDBus
import BatonHandoff
import BatonRadio
import BatonSystem
import FoundationEssentials
import Synchronization

/// A `RadioHost` on the system's own Bluetooth stack: bluetoothd over D-Bus
/// for advertising (LEAdvertisingManager1 with our exported
/// LEAdvertisement1) and scanning (where bluetoothd offers it, an
/// AdvertisementMonitor1 of ours that the kernel's passive scan serves;
/// otherwise Adapter1 discovery; Device1 properties either way), and the
/// kernel's L2CAP LE credit-based sockets for channels. Shares the adapter
/// with everything else; needs no capability.
///
/// What bluetoothd does is followed through signals, never polled: the
/// adapter missing or powered off (we wait, and resume when it is back),
/// bluetoothd leaving the bus and coming back (we register and discover
/// again). Only losing the system bus closes the host.
public final class BlueZHost: RadioHost {
  static let service = "org.bluez"
  static let advertisementPath = "/org/baton/advertisement0"
  static let companyID = 0xFFFF

  /// `bluez:hciN`'s adapter name, or nil for bluetoothd's first adapter.
  public let requestedAdapter: String?
  let bus: DBusConnection
  let log = Logger(label: "bluez")
  let bringUpGate = AsyncGate(count: 1)
  /// One advertisement change at a time, each waiting for bluetoothd's reply
  /// (see `updateAdvertisingData`).
  let advertisingGate = AsyncGate(count: 1)

  /// What bluetoothd's Device1 properties said of one device (package: the
  /// fuzzer feeds `update` hostile properties).
  package struct Device {
    package var address: BluetoothAddress?
    package var addressType: AddressType = .random
    package var rssi = -100
    package var beacon: [UInt8]?
    package var connected = false
    /// When the beacon was last reported (a monitor's `DeviceFound` repeats
    /// an unchanged one at most every `monitorRepeat`).
    var reported: ContinuousClock.Instant?

    package init() {}
  }

  /// Our advertisement monitor with bluetoothd (see `AdvertisementMonitor`).
  enum MonitorState: Sendable, Equatable {
    /// Not offered (bluetoothd without experimental features), or refused:
    /// peers are found by discovery.
    case none
    /// Registered, or being registered, and not yet activated: no
    /// discovery starts meanwhile (for `monitorActivation` at most).
    case pending
    /// Activated: the kernel's passive scan hears our beacons; no discovery.
    case active
    /// bluetoothd released it, or never activated it: discovery, until a
    /// bring-up registers it again.
    case released
  }

  struct State {
    var adapterPath: String?
    var address = BluetoothAddress(littleEndian: [0, 0, 0, 0, 0, 0])!
    var addressType: AddressType = .public
    /// bluetoothd is on the bus and the adapter is present and powered.
    var up = false
    /// Counts losses (adapter down, bluetoothd gone): a registration or
    /// discovery answered for an older generation no longer holds.
    var generation = 0
    var waitingSaid: String?
    var upWaiters: [CheckedContinuation<Void, any Error>] = []
    var wantScanning = false
    var discovering = false
    /// The generation our discovery filter was set in: bluetoothd keeps a
    /// client's filter across StopDiscovery (5.66 `discovery_remove`) and
    /// drops it with the adapter's power or with bluetoothd, both of which
    /// start a new generation.
    var filterGeneration: Int?
    var monitor = MonitorState.none
    /// Counts registrations (and losses): a late answer or timer for an
    /// older one no longer holds.
    var monitorAttempt = 0
    /// The agent asked for no scan while the monitor serves (an audio
    /// stream with a link up): the monitor is kept off the bus, except while
    /// a registration needs bluetoothd to read it.
    var monitorPaused = false
    /// Whether the monitor object is on the bus.
    var monitorOffered = true
    /// Our UnregisterMonitor is under way: the Release that bluetoothd
    /// sends before it answers is ours, not a loss.
    var monitorUnregistering = false
    /// What was last said about the monitor, so a bring-up says it once.
    var monitorSaid: String?
    /// Connections being made (`openChannel`); our discovery is paused
    /// while there are any (see `openChannel`).
    var connecting = 0
    var discoveryPaused = false
    /// Channels open with peers, either direction (what `isConnected` means
    /// here: bluetoothd may hold a link of its own with no session on it).
    var openChannels: [WeakChannel] = []
    var devices: [String: Device] = [:]
    /// bluetoothd's audio transports (MediaTransport1), by path: their State.
    var transports: [String: String] = [:]
    var changes: AsyncStream<RadioHostChange>.Continuation?
    var scanSubscribers: [UInt64: ScanSubscriber] = [:]
    var nextID: UInt64 = 0
    var listenPSM: UInt16?
    var listener: L2CAPListener?
    var channels: AsyncStream<any PeerChannel>.Continuation?
    var incoming: [AsyncStream<BluetoothAddress>.Continuation] = []
    var finished = false
    var closeReason: (any Error)?
    var closeWaiters: [CheckedContinuation<(any Error)?, Never>] = []
  }
  let state = Mutex(State())
  let advertised = AdvertisedBeacon()
  let advertisement: DBusObject
  let monitor = AdvertisementMonitor()
  /// One change of the monitor's presence on the bus at a time.
  let monitorGate = AsyncGate(count: 1)
  /// How `baton status` names the passive scan.
  static let passiveScan = "bluetoothd advertisement monitor"
  /// How long bluetoothd has to activate a registered monitor before we
  /// find peers by discovery instead.
  static let monitorActivation: Duration = .seconds(5)
  /// An unchanged beacon that the monitor hears again is reported at most
  /// this often (a changed one at once): enough for the agent to see a peer
  /// still in range and to try a link again, without a wake-up of the
  /// agent for every advertisement.
  static let monitorRepeat: Duration = .seconds(5)
  let monitorRepeat: Duration
  /// How long the bus thread gathers bluetoothd's signals after some came
  /// (`DBusConnection.coalesceSignals`): a scan window in a busy room
  /// brings a device's InterfacesAdded and PropertiesChanged for each
  /// advertiser. Nothing here waits for a signal that soon (the agent
  /// decides in seconds), as with the exclusive host's reports
  /// (`HCIController.reportCoalescing`).
  static let signalCoalescing: Duration = .milliseconds(200)

  // MARK: Opening

  /// Connects to bluetoothd on the system bus and waits (logging what to do,
  /// without polling) until the adapter is there and powered.
  public static func open(adapter: String?) async throws -> BlueZHost {
    let bus: DBusConnection
    do {
      bus = try DBusConnection.system()
    } catch {
      throw BlueZError.systemBus(error)
    }
    return try await open(adapter: adapter, bus: bus)
  }

  /// Opens on an existing connection (tests: a private bus with a stand-in
  /// bluetoothd); the host closes it when it closes.
  /// `privateAddress`: whether the adapter's address is private (nil: as
  /// this machine's main.conf says).
  static func open(
    adapter: String?, bus: DBusConnection, privateAddress: Bool? = nil,
    monitorRepeat: Duration = BlueZHost.monitorRepeat
  ) async throws -> BlueZHost {
    let host = BlueZHost(
      bus: bus, adapter: adapter,
      privateAddress: privateAddress
        ?? BluetoothdPrivacy.current().map(BluetoothdPrivacy.isPrivate) ?? false,
      monitorRepeat: monitorRepeat)
    do {
      try await host.start()
    } catch {
      await host.close()
      throw error
    }
    return host
  }

  init(
    bus: DBusConnection, adapter: String?, privateAddress: Bool,
    monitorRepeat: Duration = BlueZHost.monitorRepeat
  ) {
    self.bus = bus
    self.monitorRepeat = monitorRepeat
    addressIsPrivate = privateAddress
    requestedAdapter = adapter
    let advertised = self.advertised
    advertisement = DBusObject(
      path: Self.advertisementPath, interface: "org.bluez.LEAdvertisement1",
      properties: [
        .init("Type", "s", emitsChange: false), .init("ManufacturerData", "a{qv}"),
        .init("Discoverable", "b", emitsChange: false),
        .init("MinInterval", "u", emitsChange: false),
        .init("MaxInterval", "u", emitsChange: false),
      ],
      methods: [.init("Release")],
      property: { name in
        let (beacon, interval) = advertised.value.withLock {
          ($0.beacon ?? Beacon.header, $0.intervalMilliseconds)
        }
        switch name {
        case "Type":
          return .string(advertised.value.withLock { $0.connectable } ? "peripheral" : "broadcast")
        // Flags 0x06 (bluetoothd appends them): a discovery that is not
        // filtered (a client's filter with DuplicateData is) drops
        // advertisers without the discoverable flag. A broadcast may carry
        // no such flag (bluetoothd refuses it: "Broadcast cannot set flags"),
        // so a closed beacon is heard only by filtered discoveries, as ours.
        case "Discoverable": return .boolean(advertised.value.withLock { $0.connectable })
        case "ManufacturerData": return BlueZHost.manufacturerData(beacon: beacon)
        case "MinInterval", "MaxInterval": return .uint32(UInt32(interval))
        default: return nil
        }
      },
      method: { member, _ in
        // bluetoothd dropped the advertisement (adapter gone, or shutting down).
        if member == "Release" { advertised.value.withLock { $0.registered = false } }
        return .success([])
      })
    monitor.onEvent { [weak self] event in self?.monitorEvent(event) }
  }

  /// The beacon's 24 bytes after the company id, as LEAdvertisement1's
  /// ManufacturerData `{0xFFFF: <ay>}`; bluetoothd adds the Flags AD itself.
  static func manufacturerData(beacon: [UInt8]) -> DBusValue {
    let body = Array(beacon.dropFirst(Beacon.header.count))
    return .array(
      elementSignature: "{qv}", [.dictEntry(.uint16(UInt16(companyID)), .variant(.bytes(body)))])
  }

  /// A report's advertising data from a Device1's manufacturer bytes for our
  /// company id: the same 31 bytes a controller would report.
  package static func advertisingData(manufacturerBytes bytes: [UInt8]) -> [UInt8] {
    if bytes.count == 24 { return Beacon.header + bytes }
    return [UInt8(min(255, bytes.count + 3)), 0xFF, 0xFF, 0xFF] + bytes
  }

  /// Subscribes to what bluetoothd tells, and to nothing more: every
  /// signal the bus daemon passes wakes the agent. On a system bus,
  /// NameOwnerChanged comes for every client that connects (one per
  /// `systemctl` run), so only org.bluez's is asked for; with a named
  /// adapter (`bluez:hciN`), only that adapter's objects' signals, so that
  /// another adapter's discovery (a second dongle, another program's
  /// scan) costs this agent nothing.
  private func start() async throws {
    bus.coalesceSignals(for: Self.signalCoalescing)
    _ = try await bus.subscribe(
      sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus",
      member: "NameOwnerChanged", arg0: Self.service
    ) { [weak self] signal in self?.nameOwnerChanged(signal) }
    let objectManager = "org.freedesktop.DBus.ObjectManager"
    let named = requestedAdapter.map { "/org/bluez/\($0)" }
    if let adapter = named {
      // InterfacesAdded and -Removed come from "/" and name the object
      // first, as an object path (which arg0path matches, arg0 does not):
      // the adapter itself, and (with the slash) every object below it.
      for rule in [adapter, adapter + "/"] {
        _ = try await bus.subscribe(
          sender: Self.service, interface: objectManager, member: nil, arg0Path: rule
        ) { [weak self] signal in self?.objectsChanged(signal) }
      }
    } else {
      _ = try await bus.subscribe(sender: Self.service, interface: objectManager, member: nil) {
        [weak self] signal in self?.objectsChanged(signal)
      }
    }
    _ = try await bus.subscribe(
      sender: Self.service, pathNamespace: named,
      interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged"
    ) { [weak self] signal in self?.propertiesChanged(signal) }
    let owner: String?
    do {
      owner = try await bus.nameOwner(Self.service)
    } catch {
      throw BlueZError.from(error, operation: "asking who owns org.bluez")
    }
    guard owner != nil else { throw BlueZError.notRunning }
    try await bus.export(advertisement)
    try await monitor.export(on: bus)
    Task { [weak self, bus] in
      let why = await bus.waitUntilClosed()
      self?.finish(why == .closed(reason: "closed") ? nil : why)
    }
    try await bringUp(strict: true)
    try await waitUntilUp()
  }

  /// Waits until the adapter is usable; a cancelled task (the agent
  /// stopping while it waits) ends the wait at once.
  private func waitUntilUp() async throws {
    try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation {
        (continuation: CheckedContinuation<Void, any Error>) in
        let now = state.withLock { s -> Result<Void, any Error>? in
          if s.finished { return .failure(s.closeReason ?? BlueZError.closed) }
          if s.up { return .success(()) }
          if Task.isCancelled { return .failure(CancellationError()) }
          s.upWaiters.append(continuation)
          return nil
        }
        if let now { continuation.resume(with: now) }
      }
    } onCancel: {
      let waiters = state.withLock { s in
        defer { s.upWaiters.removeAll() }
        return s.upWaiters
      }
      for waiter in waiters { waiter.resume(throwing: CancellationError()) }
    }
  }

  // MARK: RadioHost

  public var address: BluetoothAddress { state.withLock { $0.address } }
  public var isClosed: Bool { state.withLock { $0.finished } }
  package var ownsAddress: Bool { false }
  /// bluetoothd's `Privacy` is device or network (the kernel advertises from
  /// resolvable private addresses), read from main.conf when the host was
  /// opened.
  package let addressIsPrivate: Bool
  /// With privacy, the kernel gives each registration of our advertisement
  /// (a new advertising set) a fresh resolvable address and keeps it for
  /// the set's life, but only until its RPA timeout: a live set the kernel
  /// sets up again after that (the set a connection ended on, when any
  /// client then sets the adapter connectable, measured in the VM) gets a
  /// new address for the same seal. Read from debugfs where this process
  /// may (root), else the kernel's default. Without privacy the closed
  /// beacon goes out from a non-resolvable address the kernel draws at
  /// every set-up whatever the set's age, which no lifetime bounds: nil.
  package var addressLifetime: Duration? {
    guard addressIsPrivate else { return nil }
    let adapter = adapterPath.flatMap { $0.split(separator: "/").last.map(String.init) }
    return BluetoothdPrivacy.rpaTimeout(adapter: adapter ?? requestedAdapter ?? "hci0")
  }
  /// Without a public address the kernel connects from whatever random
  /// address the controller holds, after active discovery a non-resolvable
  /// one (measured in the VM).
  package var connectsFromAnotherAddress: Bool { state.withLock { $0.addressType != .public } }

  /// The adapter's object path (`/org/bluez/hci0`) once known.
  public var adapterPath: String? { state.withLock { $0.adapterPath } }

  public func startAdvertising(data: [UInt8], intervalMilliseconds: Int, connectable: Bool)
    async throws
  {
    advertised.value.withLock {
      $0.beacon = data
      $0.connectable = connectable
      $0.intervalMilliseconds = min(10240, max(20, intervalMilliseconds))
    }
    try await registerAdvertisement()
  }

  /// Replaces the beacon by registering the advertisement again, which
  /// restarts advertising with the new data: some controllers (BlueZ's
  /// btvirt) report an advertiser to scanners only when its advertising
  /// starts, as the exclusive backend allows for by re-enabling. Not also
  /// in place (PropertiesChanged on ManufacturerData): bluetoothd 5.66
  /// refreshes the data asynchronously and its callback outlived an
  /// UnregisterAdvertisement right after it (bluetoothd left the bus in the
  /// VM, twice). Changes are serialized, each after bluetoothd's reply.
  public func updateAdvertisingData(_ data: [UInt8], connectable: Bool) async throws {
    try await advertisingGate.acquire()
    defer { advertisingGate.release() }
    let registered = advertised.value.withLock { s -> Bool in
      s.beacon = data
      s.connectable = connectable
      return s.registered
    }
    guard registered, let path = adapterPath else { return }
    _ = try? await bus.call(
      Self.service, path, "org.bluez.LEAdvertisingManager1", "UnregisterAdvertisement",
      [.objectPath(Self.advertisementPath)], timeout: .seconds(5))
    advertised.value.withLock { $0.registered = false }
    try await registerAdvertisementNow()
  }

  /// Unregisters the advertisement, unless a change is in flight (then
  /// bluetoothd drops it when we close or when the next change finds no
  /// beacon): stopping must not wait behind it.
  public func stopAdvertising() async throws {
    guard advertisingGate.available > 0 else {
      advertised.value.withLock { $0.beacon = nil }
      return
    }
    try await advertisingGate.acquire()
    defer { advertisingGate.release() }
    let path = state.withLock { $0.adapterPath }
    let registered = advertised.value.withLock { s in
      defer {
        s.beacon = nil
        s.registered = false
      }
      return s.registered
    }
    guard registered, let path else { return }
    _ = try? await bus.call(
      Self.service, path, "org.bluez.LEAdvertisingManager1", "UnregisterAdvertisement",
      [.objectPath(Self.advertisementPath)], timeout: .seconds(1))
  }

  /// Whether the adapter carries an audio stream (a MediaTransport1 of
  /// bluetoothd's "active" or "pending"): now, then at every change; every
  /// bring-up after the adapter was lost; and whether our advertisement
  /// monitor runs (`.passiveScan`: now if it does, then at every change).
  /// One subscriber; a later call replaces it.
  package func changes() -> AsyncStream<RadioHostChange> {
    let (stream, continuation) = AsyncStream.makeStream(of: RadioHostChange.self)
    let (previous, now, passive, finished) = state.withLock { s in
      defer { s.changes = continuation }
      return (s.changes, Self.carriesAudio(s), s.monitor == .active, s.finished)
    }
    previous?.finish()
    continuation.yield(.audio(now))
    if passive { continuation.yield(.passiveScan(Self.passiveScan)) }
    if finished { continuation.finish() }
    return stream
  }

  /// `accepts` chooses the advertisements the stream gets, by their data
  /// (on sd-bus's thread; the rest are dropped there).
  public func startScanning(
    accepting accepts: @escaping @Sendable ([UInt8]) -> Bool = { _ in true }
  ) async throws -> AsyncStream<AdvertisingReport> {
    let (stream, continuation) = AsyncStream.makeStream(
      of: AdvertisingReport.self, bufferingPolicy: .bufferingNewest(256))
    let (id, known) = state.withLock { s -> (UInt64, [AdvertisingReport]) in
      s.nextID += 1
      s.scanSubscribers[s.nextID] = ScanSubscriber(accepts: accepts, continuation: continuation)
      s.wantScanning = true
      return (s.nextID, s.devices.values.compactMap(Self.report))
    }
    continuation.onTermination = { [weak self] _ in
      _ = self?.state.withLock { $0.scanSubscribers.removeValue(forKey: id) }
    }
    if isClosed { continuation.finish() }
    try await startDiscovery()
    // Devices bluetoothd already knows report only changes from now on.
    for report in known where accepts(report.data) { continuation.yield(report) }
    return stream
  }

  package func listenForChannels(psm: UInt16) -> AsyncStream<any PeerChannel> {
    let (stream, continuation) = AsyncStream.makeStream(of: (any PeerChannel).self)
    let previous = state.withLock { s -> AsyncStream<any PeerChannel>.Continuation? in
      defer {
        s.channels = continuation
        s.listenPSM = psm
      }
      return s.channels
    }
    previous?.finish()
    if isClosed { continuation.finish() }
    ensureListener()
    return stream
  }

  package func incomingPeers() -> AsyncStream<BluetoothAddress> {
    // The kernel makes the link and the channel in one step (a peer's
    // channel arrives through `listenForChannels`), so there is no separate
    // "connected to us" moment to report; the stream ends with the host.
    let (stream, continuation) = AsyncStream.makeStream(of: BluetoothAddress.self)
    let closed = state.withLock { s -> Bool in
      if !s.finished { s.incoming.append(continuation) }
      return s.finished
    }
    if closed { continuation.finish() }
    return stream
  }

  package func disconnect(peer: BluetoothAddress) async {
    // The kernel owns the LE connection: it ends when the last channel on it
    // closes (and the supervision timeout ends a dead one).
  }

  /// Whether a channel with `peer` is open (a session is under way). The
  /// link alone does not count: bluetoothd opens an ATT channel on every
  /// connection and may keep the link up long after our channel closed
  /// (30 s when the peer's GATT server does not answer, or for good), and
  /// the kernel opens another channel over an existing link without trouble.
  package func isConnected(to peer: BluetoothAddress) -> Bool {
    state.withLock { s in
      s.openChannels.removeAll { $0.channel?.isClosed ?? true }
      return s.openChannels.contains { $0.channel?.peerAddress == peer }
    }
  }

  /// Remembers an open channel for `isConnected`.
  func track(_ channel: L2CAPSocketChannel) {
    state.withLock { s in
      s.openChannels.removeAll { $0.channel?.isClosed ?? true }
      s.openChannels.append(WeakChannel(channel: channel))
    }
  }

  /// Whether the kernel has a link with `peer` (bluetoothd's Device1.Connected).
  func isLinked(to peer: BluetoothAddress) -> Bool {
    state.withLock { $0.devices.values.contains { $0.address == peer && $0.connected } }
  }

  /// The kernel passes a controller's HCI status on as an errno
  /// (`bt_to_errno`, net/bluetooth/lib.c): Memory Capacity Exceeded is
  /// ENOMEM, Connection Limit Exceeded EMLINK. An abandoned attempt is the
  /// kernel's to cancel, so none is ever stuck here.
  static func failure(of error: any Error) -> RadioFailure? {
    guard case BlueZError.connect(_, let errno) = error else { return nil }
    return errno == .noMemory || errno == .linkLimit ? .noRoom : nil
  }

  package func failure(of error: any Error) -> RadioFailure? { Self.failure(of: error) }

  package func openChannel(
    to peer: BluetoothAddress, addressType: AddressType, psm: UInt16, timeout: Duration
  ) async throws -> any PeerChannel {
    let (local, localType) = state.withLock { ($0.address, $0.addressType) }
    log.info("connecting to \(peer) (\(addressType)) PSM 0x\(hex(psm))")
    // Without a link, the kernel connects only once it hears the peer
    // advertise. During our discovery the controller's duplicate filter
    // (which the kernel enables for discovery) reports each advertiser once
    // per scan, and the peer was reported already: the connection would wait
    // for the next scan (about 10 s later, or never before our timeout). So
    // discovery pauses while we connect; the kernel's own scan for the
    // connection then reports the peer at once.
    await pauseDiscovery(unlessLinkedTo: peer)
    defer { resumeDiscoveryLater() }
    // connect(2) blocks (poll with the timeout): on a thread of its own. A
    // cancelled caller (the agent stopping) cuts it short.
    let attempt = L2CAPSocket.Attempt()
    let socket = try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation {
        (continuation: CheckedContinuation<FileDescriptor, any Error>) in
        OwnedThread.start(name: "baton-connect") {
          continuation.resume(
            with: Result { () throws(BlueZError) -> FileDescriptor in
              try L2CAPSocket.connect(
                from: local, localType: localType, to: peer, type: addressType, psm: psm,
                timeout: timeout, attempt: attempt)
            })
        }
      }
    } onCancel: {
      attempt.cancel()
    }
    if attempt.isCancelled {
      socket.closeIgnoringErrors()
      throw CancellationError()
    }
    let channel = try L2CAPSocket.channel(socket, peer: peer)
    track(channel)
    log.info("channel to \(peer) open (peer MTU \(channel.maximumMessageSize))")
    return channel
  }

  package func rotateAddressIfOwned(
    to address: BluetoothAddress, advertisingData: [UInt8]
  ) async throws -> BluetoothAddress?
  { nil }

  /// Stops discovery and advertising (briefly, best effort), stops listening
  /// and closes the bus connection. Idempotent.
  /// Nothing is asked of bluetoothd first: when our connection leaves the
  /// bus it drops our advertisement and ends our discovery session itself,
  /// and a stopping agent must not wait on it (under load that took longer
  /// than the agent's stop timeout in the VM).
  public func close() async {
    finish(nil)
    bus.close()
    _ = await waitUntilClosed()
  }

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

  private func finish(_ reason: (any Error)?) {
    let taken = state.withLock {
      s -> (
        [ScanSubscriber], AsyncStream<any PeerChannel>.Continuation?,
        [AsyncStream<BluetoothAddress>.Continuation], L2CAPListener?,
        [CheckedContinuation<Void, any Error>], [CheckedContinuation<(any Error)?, Never>]
      )? in
      guard !s.finished else { return nil }
      s.finished = true
      s.closeReason = reason
      s.changes?.finish()
      s.changes = nil
      defer {
        s.scanSubscribers.removeAll()
        s.channels = nil
        s.incoming.removeAll()
        s.listener = nil
        s.upWaiters.removeAll()
        s.closeWaiters.removeAll()
      }
      return (
        Array(s.scanSubscribers.values), s.channels, s.incoming, s.listener, s.upWaiters,
        s.closeWaiters
      )
    }
    guard let (scans, channels, incoming, listener, upWaiters, waiters) = taken else { return }
    if let reason { log.error("lost the system bus: \(reason)") }
    for scan in scans { scan.finish() }
    channels?.finish()
    for stream in incoming { stream.finish() }
    listener?.close()
    for waiter in upWaiters { waiter.resume(throwing: reason ?? BlueZError.closed) }
    for waiter in waiters { waiter.resume(returning: reason) }
    bus.close()
  }
}

/// A channel `BlueZHost` remembers without keeping it alive.
struct WeakChannel: Sendable {
  weak var channel: L2CAPSocketChannel?
}

/// What we advertise, shared with the exported LEAdvertisement1's getters
/// (which run on the bus thread).
final class AdvertisedBeacon: Sendable {
  struct Value {
    var beacon: [UInt8]?
    var intervalMilliseconds = 100
    /// Type "peripheral" (connectable) or "broadcast" (not: the kernel
    /// sends it from a fresh non-resolvable address when privacy is off).
    var connectable = true
    /// Whether bluetoothd holds our registration.
    var registered = false
  }
  let value = Mutex(Value())
}
