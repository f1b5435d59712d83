import BatonDBus
import BatonRadio
import BatonSystem
import FoundationEssentials

/// Finding and following the adapter, registering the advertisement,
/// discovery, and what bluetoothd's signals tell us.
extension BlueZHost {
  // MARK: Bring-up

  /// Finds the adapter; when it is present and powered, (re)registers the
  /// advertisement and, where bluetoothd offers it, our advertisement
  /// monitor, (re)starts discovery (unless the monitor runs) and listens. Otherwise logs what to
  /// do and returns: a signal (adapter added, powered, bluetoothd back) calls
  /// this again. `strict` makes policy refusals throw (at open).
  func bringUp(strict: Bool) async throws {
    try await bringUpGate.acquire()
    defer { bringUpGate.release() }
    let objects: [String: DBusValue]
    do {
      let reply = try await bus.call(
        Self.service, "/", "org.freedesktop.DBus.ObjectManager", "GetManagedObjects")
      objects = reply.first?.stringDictionary ?? [:]
    } catch {
      let mapped = BlueZError.from(error, operation: "listing bluetoothd's objects")
      if strict { throw mapped }
      wait(because: "\(mapped)")
      return
    }
    var adapters: [String: [String: DBusValue]] = [:]
    var devices: [String: [String: DBusValue]] = [:]
    var transports: [String: String] = [:]
    /// Adapters with an AdvertisementMonitorManager1 that takes our type.
    var monitorManagers: Set<String> = []
    for (path, value) in objects {
      let interfaces = value.stringDictionary ?? [:]
      if let transport = interfaces[Self.mediaTransport]?.stringDictionary {
        transports[path] = transport["State"]?.unwrapped.string ?? "idle"
      }
      if let adapter = interfaces["org.bluez.Adapter1"]?.stringDictionary {
        adapters[path] = adapter.mapValues(\.unwrapped)
      }
      if let manager = interfaces[AdvertisementMonitor.managerInterface]?.stringDictionary {
        let types = manager["SupportedMonitorTypes"]?.elements?.compactMap(\.string)
        if types?.contains(AdvertisementMonitor.type) ?? true { monitorManagers.insert(path) }
      }
      if let device = interfaces["org.bluez.Device1"]?.stringDictionary {
        devices[path] = device.mapValues(\.unwrapped)
      }
    }
    let path: String? =
      if let name = requestedAdapter {
        adapters["/org/bluez/\(name)"] != nil ? "/org/bluez/\(name)" : nil
      } else { adapters.keys.sorted().first }
    guard let path, let properties = adapters[path] else {
      let names = adapters.keys.sorted().map { String($0.split(separator: "/").last ?? "") }
      if let name = requestedAdapter {
        wait(
          because: "bluetoothd has no adapter \(name)"
            + (names.isEmpty ? "" : " (it has \(names.joined(separator: ", ")))")
            + "; plug it in, or pick another with controller = bluez:hciN")
      } else {
        wait(because: "bluetoothd has no Bluetooth adapter; plug one in (or check rfkill list)")
      }
      return
    }
    let name = path.split(separator: "/").last.map(String.init) ?? path
    let address = properties["Address"]?.string.flatMap(BluetoothAddress.init)
    let addressType: AddressType = properties["AddressType"]?.string == "random" ? .random : .public
    guard properties["Powered"]?.bool == true, let address else {
      state.withLock { $0.adapterPath = path }
      wait(
        because: "adapter \(name) is powered off; baton resumes when it is on "
          + "(bluetoothctl power on; if rfkill blocks it: rfkill unblock bluetooth)")
      return
    }
    let offersMonitor = monitorManagers.contains(path)
    let (waiters, wasDown, monitorStep) = state.withLock { s in
      // Decided before `.adapterBack` starts the schedule's burst: a
      // monitor about to be registered keeps discovery from starting.
      let monitorStep = Self.monitorStep(&s, offered: offersMonitor)
      defer {
        s.upWaiters.removeAll()
        s.up = true
        s.waitingSaid = nil
        s.adapterPath = path
        s.address = address
        s.addressType = addressType
        for (devicePath, device) in devices where devicePath.hasPrefix(path + "/") {
          s.devices[devicePath] = Self.update(s.devices[devicePath] ?? Device(), with: device)
        }
      }
      return (s.upWaiters, !s.up, monitorStep)
    }
    if wasDown {
      log.info("adapter \(name) (\(address), \(addressType)) is up, managed by bluetoothd")
      // Peers may have come meanwhile: the scan schedule starts a burst.
      _ = state.withLock { $0.changes }?.yield(.adapterBack)
    }
    for waiter in waiters { waiter.resume() }
    setTransports(transports)
    ensureListener()
    do {
      try await registerAdvertisement()
    } catch {
      if strict { throw error }
      log.error("\(error)")
    }
    await registerMonitor(monitorStep, adapter: path)
    do {
      try await startDiscovery()
    } catch {
      if strict { throw error }
      log.error("\(error)")
    }
  }

  /// Marks the adapter unusable and says why, once per reason.
  func wait(because reason: String) {
    let say = state.withLock { s -> Bool in
      s.generation += 1
      s.up = false
      s.discovering = false
      defer { s.waitingSaid = reason }
      return s.waitingSaid != reason
    }
    advertised.value.withLock { $0.registered = false }
    if say { log.warning("waiting: \(reason)") }
  }

  /// Runs `bringUp` from a signal handler (bus thread): off that thread.
  func bringUpLater() {
    Task { [weak self] in try? await self?.bringUp(strict: false) }
  }

  // MARK: Advertising, discovery, listening

  func registerAdvertisement() async throws {
    try await advertisingGate.acquire()
    defer { advertisingGate.release() }
    try await registerAdvertisementNow()
  }

  /// `registerAdvertisement` for a caller holding `advertisingGate`.
  func registerAdvertisementNow() async throws {
    let (wanted, registered) = advertised.value.withLock { ($0.beacon != nil, $0.registered) }
    let (path, generation) = state.withLock { s in (s.up ? s.adapterPath : nil, s.generation) }
    guard wanted, !registered, let path else { return }
    let name = path.split(separator: "/").last.map(String.init) ?? path
    do {
      _ = try await bus.call(
        Self.service, path, "org.bluez.LEAdvertisingManager1", "RegisterAdvertisement",
        [.objectPath(Self.advertisementPath), .stringVariantDictionary([:])])
    } catch let error as DBusError where error.name == "org.bluez.Error.AlreadyExists" {
      // Registered already (a bring-up raced another): fine.
    } catch let error as DBusError where error.isAccessDenied || error.isServiceUnknown {
      throw BlueZError.from(error, operation: "RegisterAdvertisement on \(name)")
    } catch let error as DBusError {
      throw BlueZError.advertisingRefused(adapter: name, error)
    }
    advertised.value.withLock { $0.registered = true }
    // Lost meanwhile (wait() bumps the generation before clearing the flag):
    // the next bring-up registers again.
    if state.withLock({ $0.generation != generation }) {
      advertised.value.withLock { $0.registered = false }
      return
    }
    log.info("advertisement registered with bluetoothd on \(name)")
  }

  func startDiscovery(quietly: Bool = false, attempt: Int = 0) async throws {
    let (path, generation, filtered) = state.withLock { s -> (String?, Int, Bool) in
      let filtered = s.filterGeneration == s.generation
      guard s.up, s.wantScanning, !s.discovering, !s.finished else {
        return (nil, s.generation, filtered)
      }
      // Our monitor hears the peers (or is about to): no discovery.
      if s.monitor == .active || s.monitor == .pending { return (nil, s.generation, filtered) }
      // Paused while we connect: the last connection made starts it.
      if s.connecting > 0 {
        s.discoveryPaused = true
        return (nil, s.generation, filtered)
      }
      return (s.adapterPath, s.generation, filtered)
    }
    guard let path else { return }
    do {
      // Once per generation: a scan window costs one call, not two.
      if !filtered {
        try await setDiscoveryFilter(on: path)
        state.withLock { s in
          if s.generation == generation { s.filterGeneration = generation }
        }
      }
      _ = try await bus.call(Self.service, path, "org.bluez.Adapter1", "StartDiscovery")
    } catch let error as DBusError where error.name == "org.bluez.Error.InProgress" {
      // Either our discovery session is on already (then the adapter
      // discovers), or the kernel refused bluetoothd as busy: a bluetoothd
      // killed while discovering leaves the kernel's scan running for up to
      // 10 s, and the new one neither knows it nor restarts it when it ends
      // (measured in the VM: no report after a restart). Then try again.
      let discovering = try? await bus.property(
        Self.service, path, "org.bluez.Adapter1", "Discovering")
      if discovering?.bool != true {
        retryDiscoveryLater(attempt: attempt)
        return
      }
    } catch {
      throw BlueZError.from(error, operation: "StartDiscovery on \(path)")
    }
    let current = state.withLock { s -> Bool in
      guard s.generation == generation else { return false }
      s.discovering = true
      return true
    }
    guard current else { return }
    if quietly {
      log.debug("discovering again on \(path)")
    } else {
      log.info("discovering (LE, every advertisement) on \(path)")
    }
  }

  /// Our discovery filter: LE only, every advertisement reported; set once
  /// per generation (`State.filterGeneration`). The
  /// DuplicateData also makes it a filtered discovery for bluetoothd, which
  /// then reports advertisers without the discoverable flag too: closed
  /// beacons (PROTOCOL.md 3.3), which bluetoothd sends without flags.
  func setDiscoveryFilter(on path: String) async throws {
    _ = try await bus.call(
      Self.service, path, "org.bluez.Adapter1", "SetDiscoveryFilter",
      [
        .stringVariantDictionary([
          // No RSSI threshold: with one the kernel drops every report whose
          // RSSI the controller leaves unknown (127); our peers advertise
          // as discoverable, which unfiltered discovery reports.
          "Transport": .string("le"), "DuplicateData": .boolean(true),
        ])
      ])
  }

  /// Starts or stops our discovery session for the agent's scan schedule
  /// (baton(1), Scanning), or while our advertisement monitor serves, puts
  /// it on the bus or takes it off (`setMonitorPaused`); the scan stream
  /// stays open either way. `everyReport` is not ours to choose here: our
  /// filter keeps DuplicateData on (`setDiscoveryFilter`), and the kernel's
  /// discovery has the controller's duplicate filter on anyway.
  package func setScanning(_ on: Bool, everyReport: Bool) async throws {
    if state.withLock({ $0.monitor == .active || $0.monitor == .pending }) {
      state.withLock { $0.wantScanning = on }
      try await setMonitorPaused(!on)
      return
    }
    if on {
      state.withLock { $0.wantScanning = true }
      try await startDiscovery(quietly: true)
      return
    }
    let path = state.withLock { s -> String? in
      s.wantScanning = false
      guard s.discovering, s.up else { return nil }
      s.discovering = false
      return s.adapterPath
    }
    guard let path else { return }
    do {
      _ = try await bus.call(
        Self.service, path, "org.bluez.Adapter1", "StopDiscovery", timeout: .seconds(2))
      log.debug("discovery stopped until the next scan window")
    } catch let error as DBusError where error.name == "org.bluez.Error.Failed" {
      // "No discovery started": bluetoothd ended it already.
    } catch {
      throw BlueZError.from(error, operation: "StopDiscovery on \(path)")
    }
  }

  /// Starts discovery again after bluetoothd said it is busy: every 2 s,
  /// at most 10 times (the kernel's leftover scan ends within 10.24 s).
  func retryDiscoveryLater(attempt: Int) {
    guard attempt < 10 else {
      log.error("bluetoothd stays busy and does not discover; restart it (systemctl restart bluetooth)")
      return
    }
    if attempt == 0 {
      log.info("bluetoothd cannot discover yet (the kernel still scans for an earlier one); retrying")
    }
    Task { [weak self] in
      try? await Timers.shared.sleep(for: .seconds(2))
      do {
        try await self?.startDiscovery(attempt: attempt + 1)
      } catch {
        self?.log.error("\(error)")
      }
    }
  }

  /// Counts a connection being made and stops our discovery meanwhile (see
  /// `openChannel`), unless the kernel has a link with `peer` already. Every
  /// call is paired with `resumeDiscoveryLater()`.
  func pauseDiscovery(unlessLinkedTo peer: BluetoothAddress) async {
    let linked = isLinked(to: peer)
    let path = state.withLock { s -> String? in
      s.connecting += 1
      guard !linked, s.discovering, s.up else { return nil }
      s.discovering = false
      s.discoveryPaused = true
      return s.adapterPath
    }
    if let path {
      do {
        _ = try await bus.call(
          Self.service, path, "org.bluez.Adapter1", "StopDiscovery", timeout: .seconds(2))
        log.debug("discovery paused while connecting")
      } catch {
        log.debug("cannot pause discovery while connecting: \(error)")
      }
    }
  }

  /// Ends a `pauseDiscovery`; the last connection made restarts discovery.
  func resumeDiscoveryLater() {
    let resume = state.withLock { s -> Bool in
      s.connecting = max(0, s.connecting - 1)
      guard s.connecting == 0, s.discoveryPaused else { return false }
      s.discoveryPaused = false
      return true
    }
    guard resume else { return }
    Task { [weak self] in
      do {
        try await self?.startDiscovery(quietly: true)
      } catch {
        self?.log.error("cannot resume discovery after connecting: \(error)")
      }
    }
  }

  /// Listens on the wanted PSM once the adapter's address is known.
  func ensureListener() {
    let wanted = state.withLock { s -> (BluetoothAddress, AddressType, UInt16)? in
      guard s.up, s.listener == nil, !s.finished, let psm = s.listenPSM else { return nil }
      return (s.address, s.addressType, psm)
    }
    guard let (address, type, psm) = wanted else { return }
    do {
      let listener = try L2CAPListener(local: address, type: type, psm: psm)
      let kept = state.withLock { s -> Bool in
        guard s.listener == nil, !s.finished else { return false }
        s.listener = listener
        return true
      }
      guard kept else {
        listener.close()
        return
      }
      Task { [weak self] in
        for await channel in listener.channels {
          guard let self else { break }
          if let channel = channel as? L2CAPSocketChannel { track(channel) }
          state.withLock { _ = $0.channels?.yield(channel) }
        }
      }
    } catch {
      log.error("cannot listen for peers' channels: \(error)")
    }
  }

  // MARK: Audio

  static let mediaTransport = "org.bluez.MediaTransport1"

  /// Whether the adapter carries an audio stream: a MediaTransport1 of its
  /// devices whose State is "active" or "pending" (bluetoothd's words for a
  /// stream playing, or about to).
  static func carriesAudio(_ s: State) -> Bool {
    guard let adapter = s.adapterPath else { return false }
    return s.transports.contains {
      $0.key.hasPrefix(adapter + "/") && ($0.value == "active" || $0.value == "pending")
    }
  }

  /// Records a transport's state (nil: it went away).
  func updateTransport(_ path: String, state value: String?) {
    changeTransports { $0[path] = value }
  }

  /// Replaces the transports known (bring-up: bluetoothd's objects).
  func setTransports(_ transports: [String: String]) {
    changeTransports { $0 = transports }
  }

  /// Applies `change` to the transports and says so on the changes stream
  /// when that changes whether the adapter carries audio.
  private func changeTransports(_ change: (inout [String: String]) -> Void) {
    let (changed, now, stream) = state.withLock {
      s -> (Bool, Bool, AsyncStream<RadioHostChange>.Continuation?) in
      let before = Self.carriesAudio(s)
      change(&s.transports)
      let after = Self.carriesAudio(s)
      return (before != after, after, s.changes)
    }
    if changed { stream?.yield(.audio(now)) }
  }

  // MARK: Signals (bus thread)

  func nameOwnerChanged(_ signal: DBusSignal) {
    let strings = signal.arguments.compactMap(\.string)
    guard strings.count == 3, strings[0] == Self.service else { return }
    if strings[2].isEmpty {
      // Its Device1 objects died with it; the new one announces its own.
      state.withLock { $0.devices.removeAll() }
      setTransports([:])
      forgetMonitor()
      wait(because: "bluetoothd left the system bus; baton carries on when it is back")
    } else {
      log.info("bluetoothd is on the system bus (\(strings[2])); registering again")
      bringUpLater()
    }
  }

  func objectsChanged(_ signal: DBusSignal) {
    guard let path = signal.arguments.first?.string else { return }
    let adapterPath = state.withLock { $0.adapterPath }
    switch signal.member {
    case "InterfacesAdded":
      let interfaces = signal.arguments.dropFirst().first?.stringDictionary ?? [:]
      if interfaces["org.bluez.Adapter1"] != nil {
        bringUpLater()
      } else if let device = interfaces["org.bluez.Device1"]?.stringDictionary,
        let adapterPath, path.hasPrefix(adapterPath + "/")
      {
        updateDevice(path, with: device.mapValues(\.unwrapped))
      } else if let transport = interfaces[Self.mediaTransport]?.stringDictionary {
        updateTransport(path, state: transport["State"]?.unwrapped.string ?? "idle")
      }
    case "InterfacesRemoved":
      let interfaces = signal.arguments.dropFirst().first?.elements?.compactMap(\.string) ?? []
      if path == adapterPath && interfaces.contains("org.bluez.Adapter1") {
        forgetMonitor()
        wait(because: "adapter \(path) was removed; baton resumes when it is back")
      } else if interfaces.contains("org.bluez.Device1") {
        _ = state.withLock { $0.devices.removeValue(forKey: path) }
      } else if interfaces.contains(Self.mediaTransport) {
        updateTransport(path, state: nil)
      }
    default:
      break
    }
  }

  func propertiesChanged(_ signal: DBusSignal) {
    guard signal.arguments.count >= 2, let interface = signal.arguments[0].string,
      let changed = signal.arguments[1].stringDictionary?.mapValues(\.unwrapped)
    else { return }
    let adapterPath = state.withLock { $0.adapterPath }
    if interface == "org.bluez.Adapter1", signal.path == adapterPath || adapterPath == nil {
      if let powered = changed["Powered"]?.bool {
        if powered {
          bringUpLater()
        } else {
          wait(
            because: "adapter \(signal.path) was powered off; baton resumes when it is on "
              + "(bluetoothctl power on; rfkill unblock bluetooth)")
        }
      }
    } else if interface == "org.bluez.Device1", let adapterPath,
      signal.path.hasPrefix(adapterPath + "/")
    {
      updateDevice(signal.path, with: changed)
    } else if interface == Self.mediaTransport, let value = changed["State"]?.string {
      updateTransport(signal.path, state: value)
    }
  }

  /// Updates the device cache; reports the device's beacon when its
  /// manufacturer data or RSSI changed.
  private func updateDevice(_ path: String, with properties: [String: DBusValue]) {
    let (report, subscribers) = state.withLock { s in
      var device = Self.update(s.devices[path] ?? Device(), with: properties)
      let fresh = properties["ManufacturerData"] != nil || properties["RSSI"] != nil
      let report = fresh ? Self.report(device) : nil
      if report != nil { device.reported = .now }
      s.devices[path] = device
      return (report, Array(s.scanSubscribers.values))
    }
    guard let report else { return }
    for subscriber in subscribers { subscriber.offer(report) }
  }

  package static func update(_ device: Device, with properties: [String: DBusValue]) -> Device {
    var device = device
    if let text = properties["Address"]?.string, let address = BluetoothAddress(text) {
      device.address = address
    }
    if let type = properties["AddressType"]?.string {
      device.addressType = type == "public" ? .public : .random
    }
    if let rssi = properties["RSSI"]?.integer { device.rssi = rssi }
    if let connected = properties["Connected"]?.bool { device.connected = connected }
    if let data = properties["ManufacturerData"]?.integerDictionary?[companyID]?.byteArray {
      device.beacon = data
    }
    return device
  }

  /// What a controller would have reported for this device's advertisement.
  package static func report(_ device: Device) -> AdvertisingReport? {
    guard let address = device.address, let beacon = device.beacon else { return nil }
    return AdvertisingReport(
      address: address, addressType: device.addressType,
      data: advertisingData(manufacturerBytes: beacon), rssi: device.rssi)
  }
}
