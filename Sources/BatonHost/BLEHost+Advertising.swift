import BatonHCI
import BatonRadio

/// Advertising and scanning.
extension BLEHost {
  /// Starts legacy connectable advertising (ADV_IND) with `data` (at most 31
  /// bytes) every `intervalMilliseconds` (20 to 10240 ms). Advertising is
  /// re-enabled automatically after a connection made to us ends.
  /// (bumble's simulator takes the interval value as milliseconds, so there
  /// advertisements come 1.6 times as often as asked.)
  public func startAdvertising(data: [UInt8], intervalMilliseconds: Int = 100) async throws {
    guard data.count <= 31 else {
      throw HCIError.invalidArgument(
        "advertising data of \(data.count) bytes (legacy advertising takes 31)")
    }
    guard (20...10240).contains(intervalMilliseconds) else {
      throw HCIError.invalidArgument(
        "advertising interval \(intervalMilliseconds) ms (20 to 10240)")
    }
    let units = UInt16(min(0x4000, max(0x0020, intervalMilliseconds * 8 / 5)))
    try await advertisingGate.acquire()
    defer { advertisingGate.release() }
    if state.withLock({ $0.advertisingEnabled }) { try await setAdvertisingEnabled(false) }
    try await controller.send(
      .leSetAdvertisingParameters(.init(intervalMin: units, intervalMax: units)))
    try await controller.send(.leSetAdvertisingData(data))
    state.withLock {
      $0.advertisingData = data
      $0.advertisingInterval = units
    }
    try await setAdvertisingEnabled(true)
    log.info("advertising \(data.count) bytes every \(intervalMilliseconds) ms as \(address)")
  }

  /// Replaces the advertising data; takes effect at the next advertisement
  /// (advertising is re-enabled so that every controller reports the change).
  public func updateAdvertisingData(_ data: [UInt8]) async throws {
    guard data.count <= 31 else {
      throw HCIError.invalidArgument(
        "advertising data of \(data.count) bytes (legacy advertising takes 31)")
    }
    try await advertisingGate.acquire()
    defer { advertisingGate.release() }
    try await controller.send(.leSetAdvertisingData(data))
    state.withLock { $0.advertisingData = data }
    // Re-enabling makes controllers that report an advertiser only when it
    // starts (BlueZ's btvirt) report the new data; the disable may fail when
    // the controller stopped advertising by itself (btvirt, after we
    // connected as central), which is fine.
    if state.withLock({ $0.advertisingEnabled }) {
      try? await setAdvertisingEnabled(false)
      try await setAdvertisingEnabled(true)
    }
    log.debug("advertising data replaced (\(data.count) bytes)")
  }

  /// Stops advertising (and its automatic re-enabling).
  public func stopAdvertising() async throws {
    try await advertisingGate.acquire()
    defer { advertisingGate.release() }
    state.withLock { $0.advertisingData = nil }
    try await setAdvertisingEnabled(false)
  }

  /// Whether we want to advertise (advertising may be paused by a connection).
  public var isAdvertising: Bool { state.withLock { $0.advertisingData != nil } }

  func setAdvertisingEnabled(_ on: Bool) async throws {
    try await controller.send(.leSetAdvertisingEnable(on))
    state.withLock { $0.advertisingEnabled = on }
  }

  /// After a connection made to us starts or ends: advertise again if wanted.
  func resumeAdvertising(after why: String) {
    Task { [weak self] in
      guard let self else { return }
      do {
        try await advertisingGate.acquire()
      } catch {
        return
      }
      defer { advertisingGate.release() }
      let wanted = state.withLock {
        $0.advertisingData != nil && !$0.advertisingEnabled && !$0.finished
      }
      guard wanted else { return }
      do {
        try await setAdvertisingEnabled(true)
        log.info("advertising resumed (\(why))")
      } catch {
        log.debug("cannot resume advertising (\(why)): \(error)")
      }
    }
  }

  // MARK: - Scanning

  /// Starts passive scanning (if not already on) and returns a stream of
  /// advertisements, both legacy and extended reports, with repeats of the
  /// same address and data within `duplicateWindow` removed. The stream ends
  /// with `stopScanning()` or when the host closes.
  /// `accepts` chooses the advertisements the stream gets, by their data
  /// (on the reader's thread; the rest are dropped there).
  public func startScanning(
    accepting accepts: @escaping @Sendable ([UInt8]) -> Bool = { _ in true }
  ) async throws -> AsyncStream<AdvertisingReport> {
    let (stream, continuation) = AsyncStream.makeStream(
      of: AdvertisingReport.self, bufferingPolicy: .bufferingNewest(256))
    let id = state.withLock { s -> UInt64 in
      s.nextID += 1
      s.scanSubscribers[s.nextID] = ScanSubscriber(accepts: accepts, continuation: continuation)
      return s.nextID
    }
    continuation.onTermination = { [weak self] _ in
      _ = self?.state.withLock { $0.scanSubscribers.removeValue(forKey: id) }
    }
    if !state.withLock({ $0.scanning || $0.scanPaused }) {
      // Forgotten before scanning starts, not after: a report can arrive
      // as soon as the controller has the command, and forgetting it then
      // would let its repeat through.
      state.withLock { $0.lastDelivered.removeAll() }
      do {
        try await controller.send(.leSetScanParameters(.init()))
        let filter = state.withLock { $0.filterDuplicates }
        try await controller.send(.leSetScanEnable(true, filterDuplicates: filter))
      } catch {
        continuation.finish()
        throw error
      }
      state.withLock { $0.scanning = true }
      log.info("scanning")
    }
    return stream
  }

  /// Turns the controller's scan off (`on` false) or on again without
  /// ending the scan streams: the agent's schedule (baton(1), Scanning).
  /// `everyReport` false lets the controller report each advertiser once
  /// per scan (its Filter_Duplicates), which is all a search for new peers
  /// needs, and spares the host a report per advertisement of every device
  /// in range. Nothing is sent when the controller is already as asked
  /// (LE Set Scan Enable again while scanning changes only the filter).
  public func setScanning(_ on: Bool, everyReport: Bool) async throws {
    // Not while an address rotation has the scan off and turns it back on.
    try await advertisingGate.acquire()
    defer { advertisingGate.release() }
    let (send, filter) = state.withLock { s -> (Bool, Bool) in
      s.scanPaused = !on
      let newFilter = on && s.scanning && s.filterDuplicates == everyReport
      if on { s.filterDuplicates = !everyReport }
      return ((s.scanning != on || newFilter) && (!on || !s.scanSubscribers.isEmpty), !everyReport)
    }
    guard send else { return }
    if on { state.withLock { $0.lastDelivered.removeAll() } }
    try await controller.send(.leSetScanEnable(on, filterDuplicates: on && filter))
    state.withLock { $0.scanning = on }
    log.debug(on ? "scanning again" : "scanning paused")
  }

  /// Stops scanning; every scan stream ends.
  public func stopScanning() async throws {
    let subscribers = state.withLock { s in
      defer { s.scanSubscribers.removeAll() }
      return Array(s.scanSubscribers.values)
    }
    for subscriber in subscribers { subscriber.finish() }
    guard state.withLock({ $0.scanning }) else { return }
    try await controller.send(.leSetScanEnable(false, filterDuplicates: false))
    state.withLock { $0.scanning = false }
  }

  /// One report from the controller: de-duplicated, then to every subscriber.
  func deliver(_ report: AdvertisingReport) {
    let now = ContinuousClock.now
    let key = report.address.bytes + [report.addressType.rawValue] + report.data
    let subscribers = state.withLock { s -> [ScanSubscriber] in
      if let last = s.lastDelivered[key], now - last < duplicateWindow { return [] }
      if s.lastDelivered.count > 512 {
        s.lastDelivered = s.lastDelivered.filter { now - $0.value < duplicateWindow }
      }
      s.lastDelivered[key] = now
      return Array(s.scanSubscribers.values)
    }
    for subscriber in subscribers { subscriber.offer(report) }
  }
}
