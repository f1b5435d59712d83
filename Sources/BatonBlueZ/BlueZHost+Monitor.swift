import BatonDBus
import BatonRadio
import BatonSystem

/// Passive scanning through bluetoothd's advertisement monitor
/// (`AdvertisementMonitor`), where bluetoothd offers one: the kernel adds our
/// pattern to its own passive background scan, and the host then starts no
/// discovery (`startDiscovery` declines while the monitor is pending or
/// active) and tells the agent so (`.passiveScan`). Where it is not offered
/// (bluetoothd 5.66 offers it only with experimental features), refused,
/// never activated or released, peers are found by discovery, as the agent's
/// scan schedule asks.
extension BlueZHost {
  /// What a bring-up does about the monitor.
  enum MonitorStep: Sendable, Equatable {
    /// Registered already with this bluetoothd (or pending): nothing.
    case keep
    /// bluetoothd offers no monitor on the adapter.
    case notOffered
    /// Register the monitor; `again`: bluetoothd released it, so our
    /// registration goes first.
    case register(again: Bool)
  }

  /// Decides what a bring-up does about the monitor, and marks it pending
  /// before anything can start discovery.
  static func monitorStep(_ s: inout State, offered: Bool) -> MonitorStep {
    guard offered else {
      s.monitor = .none
      return .notOffered
    }
    switch s.monitor {
    case .pending, .active: return .keep
    case .none, .released:
      let again = s.monitor == .released
      s.monitor = .pending
      s.monitorAttempt += 1
      return .register(again: again)
    }
  }

  /// Carries out `step` for the adapter at `path` (from `bringUp`).
  func registerMonitor(_ step: MonitorStep, adapter path: String) async {
    let name = path.split(separator: "/").last.map(String.init) ?? path
    switch step {
    case .keep:
      return
    case .notOffered:
      say(
        monitor: "bluetoothd offers no advertisement monitor on \(name) (its experimental"
          + " features are off): peers are found by discovery; baton check says how to scan"
          + " passively instead")
      return
    case .register(let again):
      let attempt = state.withLock { $0.monitorAttempt }
      let root = DBusValue.objectPath(AdvertisementMonitor.rootPath)
      // bluetoothd reads the monitor at registration; if it is paused, it
      // is taken off again once activated.
      await offerMonitor()
      if again {
        state.withLock { $0.monitorUnregistering = true }
        _ = try? await bus.call(
          Self.service, path, AdvertisementMonitor.managerInterface, "UnregisterMonitor", [root],
          timeout: .seconds(5))
        state.withLock { $0.monitorUnregistering = false }
      }
      do {
        _ = try await bus.call(
          Self.service, path, AdvertisementMonitor.managerInterface, "RegisterMonitor", [root],
          timeout: .seconds(10))
      } catch let error as DBusError where error.name == "org.bluez.Error.AlreadyExists" {
        // Ours already (bluetoothd keeps it while the adapter is off).
      } catch {
        let current = state.withLock { s -> Bool in
          guard s.monitorAttempt == attempt, s.monitor == .pending else { return false }
          s.monitor = .none
          return true
        }
        guard current else { return }
        say(
          monitor: "bluetoothd refused the advertisement monitor on \(name) (\(error)):"
            + " peers are found by discovery", warning: true)
        await startDiscoveryLogging()
        return
      }
      log.debug("advertisement monitor registered on \(name); bluetoothd activates it next")
      Task { [weak self] in
        try? await Timers.shared.sleep(for: Self.monitorActivation)
        guard let self else { return }
        let late = state.withLock { s -> Bool in
          guard s.monitorAttempt == attempt, s.monitor == .pending else { return false }
          s.monitor = .released
          return true
        }
        guard late else { return }
        say(
          monitor: "bluetoothd did not activate the advertisement monitor on \(name) within"
            + " \(Self.monitorActivation): peers are found by discovery", warning: true)
        await startDiscoveryLogging()
      }
    }
  }

  /// bluetoothd's calls on our monitor (bus thread).
  func monitorEvent(_ event: AdvertisementMonitor.Event) {
    switch event {
    case .activated:
      let (changed, stream, path, paused) = state.withLock { s in
        let changed = s.monitor != .active && s.up
        if changed { s.monitor = .active }
        return (changed, s.changes, s.adapterPath ?? "", s.monitorPaused)
      }
      if paused { Task { [weak self] in try? await self?.setMonitorPaused(true) } }
      guard changed else { return }
      let name = path.split(separator: "/").last.map(String.init) ?? path
      say(
        monitor: "scanning passively: bluetoothd's advertisement monitor is active on \(name)"
          + " (the kernel's background scan hears our beacons; no discovery)")
      stream?.yield(.passiveScan(Self.passiveScan))
      // A discovery started before (a burst at bring-up) is not needed.
      Task { [weak self] in try? await self?.stopDiscoveryForMonitor() }
    case .released:
      let (was, stream, path) = state.withLock { s in
        let was = s.monitorUnregistering ? MonitorState.none : s.monitor
        if was == .active || was == .pending { s.monitor = .released }
        return (was, s.changes, s.adapterPath ?? "")
      }
      guard was == .active || was == .pending else { return }
      let name = path.split(separator: "/").last.map(String.init) ?? path
      say(
        monitor: "bluetoothd released the advertisement monitor on \(name): peers are found by"
          + " discovery until bluetoothd or the adapter is back", warning: true)
      if was == .active { stream?.yield(.passiveScan(nil)) }
      Task { [weak self] in await self?.startDiscoveryLogging() }
    case .found(let path):
      monitorFound(path)
    }
  }

  /// The monitor heard the device at `path` again: bluetoothd has updated
  /// its Device1 already (a changed beacon reached us as PropertiesChanged),
  /// so this reports an unchanged beacon, at most every `monitorRepeat`.
  func monitorFound(_ path: String) {
    let now = ContinuousClock.now
    let (report, subscribers) = state.withLock { s -> (AdvertisingReport?, [ScanSubscriber]) in
      guard var device = s.devices[path], let report = Self.report(device) else { return (nil, []) }
      if let last = device.reported, now - last < monitorRepeat { return (nil, []) }
      device.reported = now
      s.devices[path] = device
      return (report, Array(s.scanSubscribers.values))
    }
    guard let report else { return }
    for subscriber in subscribers { subscriber.offer(report) }
  }

  /// bluetoothd left (or the adapter went): its registration died with it.
  func forgetMonitor() {
    let (was, stream) = state.withLock { s in
      defer {
        s.monitor = .none
        s.monitorAttempt += 1
      }
      return (s.monitor, s.changes)
    }
    if was == .active { stream?.yield(.passiveScan(nil)) }
  }

  /// Takes the monitor off the bus (`paused`) or puts it back, for the
  /// agent's scan schedule: while an audio stream plays with a link up, not
  /// even the kernel's passive scan runs for us (baton(1), Scanning).
  func setMonitorPaused(_ paused: Bool) async throws {
    try await monitorGate.acquire()
    defer { monitorGate.release() }
    let change = state.withLock { s -> Bool in
      s.monitorPaused = paused
      guard s.monitorOffered == paused, !s.finished else { return false }
      s.monitorOffered = !paused
      return true
    }
    guard change else { return }
    if paused {
      try await monitor.withdraw(on: bus)
      log.debug("advertisement monitor withdrawn (no scanning while an audio stream plays)")
    } else {
      try await monitor.offer(on: bus)
      log.debug("advertisement monitor offered again")
    }
  }

  /// Puts the monitor on the bus if it is not (for a registration).
  private func offerMonitor() async {
    do {
      try await monitorGate.acquire()
      defer { monitorGate.release() }
      let offer = state.withLock { s -> Bool in
        defer { s.monitorOffered = true }
        return !s.monitorOffered
      }
      if offer { try await monitor.offer(on: bus) }
    } catch {
      log.error("cannot offer the advertisement monitor: \(error)")
    }
  }

  /// Logs `text` unless it was the last thing said about the monitor.
  private func say(monitor text: String, warning: Bool = false) {
    let fresh = state.withLock { s -> Bool in
      defer { s.monitorSaid = text }
      return s.monitorSaid != text
    }
    guard fresh else { return }
    if warning { log.warning("\(text)") } else { log.info("\(text)") }
  }

  private func startDiscoveryLogging() async {
    do {
      try await startDiscovery()
    } catch {
      log.error("\(error)")
    }
  }

  /// Ends our discovery session once the monitor runs.
  private func stopDiscoveryForMonitor() async throws {
    let path = state.withLock { s -> String? in
      guard s.discovering, s.up, s.monitor == .active else { return nil }
      s.discovering = false
      return s.adapterPath
    }
    guard let path else { return }
    _ = try await bus.call(
      Self.service, path, "org.bluez.Adapter1", "StopDiscovery", timeout: .seconds(2))
  }
}
