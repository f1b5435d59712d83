import BatonHCI
import BatonHandoff
import BatonHost
import BatonL2CAP
import BatonSystem
import FoundationEssentials
import Synchronization

/// The agent's side of the radio: opens the controller (and reopens it with
/// back-off when it is lost), advertises the engine's beacon, scans for
/// peers' beacons, and runs a handoff session over an L2CAP channel with
/// every keyed peer that has something we lack, or that connects to us.
///
/// Everything that happens on one open controller is handled by one loop over
/// one stream of events, so the decisions (connect or not, re-seal the
/// beacon, rotate the address) never race each other; sessions run as child
/// tasks of that loop and end with it.
final class AgentRadio: Sendable {
  /// How long a peer counts as in range after its last beacon.
  static let inRangeWindow: TimeInterval = 60
  /// The longest a session waits for the peer to take or give a message.
  static let sessionDeadline: Duration = .seconds(20)
  /// How long the agent with the higher address gives the other to connect
  /// first when both want a session (both see the indexes differ).
  static let yieldDelay: Duration = .milliseconds(1500)
  /// The longest we wait for a connection to a peer to complete.
  static let connectTimeout: Duration = .seconds(5)
  /// Back-off between attempts to reopen a lost controller.
  static let reopenDelays: [Duration] = [
    .seconds(1), .seconds(2), .seconds(5), .seconds(10), .seconds(30),
  ]

  enum Event: Sendable {
    case report(AdvertisingReport)
    case channel(any PeerChannel)
    case beaconChanged
    case rotate
    case connected(address: String)
    case sessionEnded(address: String)
    case closed(reason: String)
  }

  private struct Peer {
    var lastSeen: Date
    var rssi: Int
    var beacon: [UInt8]
  }

  private struct State {
    var host: (any RadioHost)?
    var events: AsyncStream<Event>.Continuation?
    /// Keyed peers heard, by address.
    var heard: [String: Peer] = [:]
    /// Peer names learnt in sessions, or by resolving a peer's new address
    /// (PROTOCOL.md, "Addresses"), by address.
    var names: [String: String] = [:]
    /// Addresses heard that resolve to no peer we know (cleared when a session
    /// teaches us a new peer).
    var unresolved: Set<String> = []
    /// Addresses with a session under way (either direction).
    var busy: Set<String> = []
    /// A `.beaconChanged` is queued and not yet handled: a burst of saves
    /// makes one re-seal, not one per save (issue 14's livelock).
    var beaconPending = false
  }

  let configuration: AgentConfiguration
  let engine: HandoffEngine
  private let state = Mutex(State())
  private let log = Logger(label: "radio")

  init(configuration: AgentConfiguration, engine: HandoffEngine) {
    self.configuration = configuration
    self.engine = engine
  }

  /// Our current address, once the controller is open.
  var address: String? { state.withLock { $0.host?.address.description } }

  /// The engine's index or current activity changed: re-seal the beacon.
  func beaconChanged() {
    state.withLock { s in
      guard !s.beaconPending, let events = s.events else { return }
      s.beaconPending = true
      events.yield(.beaconChanged)
    }
  }

  /// Keyed peers heard within the last minute, most recent first.
  func peersInRange() -> [AgentStatus.Peer] {
    let cutoff = Date().addingTimeInterval(-Self.inRangeWindow)
    return state.withLock { s in
      s.heard.filter { $0.value.lastSeen >= cutoff }
        .map {
          AgentStatus.Peer(
            name: s.names[$0.key] ?? "?", address: $0.key, lastSeen: $0.value.lastSeen,
            rssi: $0.value.rssi)
        }
        .sorted { $0.lastSeen > $1.lastSeen }
    }
  }

  // MARK: The controller's life

  /// Runs until cancelled. The first open failing is fatal (the message says
  /// what to do) unless the controller was reached and only its bring-up
  /// failed (`RadioHostOpener.mayRetry`); that, and a controller lost later,
  /// is retried with back-off.
  func run() async throws {
    let spec = configuration.controller.description
    var failures = 0
    var everOpened = false
    while !Task.isCancelled {
      let host: any RadioHost
      do {
        host = try await RadioHostOpener.open(
          configuration.controller, hciLog: configuration.hciLog,
          address: BluetoothAddress(littleEndian: engine.newAddress()))
      } catch {
        if Task.isCancelled { return }
        if !everOpened && !RadioHostOpener.mayRetry(error) {
          throw AgentError.controller(spec: spec, reason: "\(error)")
        }
        // (failures counts both failed opens and controllers lost soon after.)
        let delay = Self.reopenDelays[min(failures, Self.reopenDelays.count - 1)]
        failures += 1
        log.warning(
          "cannot \(everOpened ? "reopen" : "bring up") the controller \(spec): \(error); trying again in \(delay)"
        )
        try? await Timers.shared.sleep(for: delay)
        continue
      }
      everOpened = true
      let started = ContinuousClock.now
      let reason = await serve(host)
      if Task.isCancelled { return }
      // A controller that fails again right after opening must not make us
      // spin: back off unless it ran for a while.
      if ContinuousClock.now - started > .seconds(60) { failures = 0 }
      let delay = Self.reopenDelays[min(failures, Self.reopenDelays.count - 1)]
      failures += 1
      log.error("lost the controller \(spec): \(reason); reopening it in \(delay)")
      try? await Timers.shared.sleep(for: delay)
    }
  }

  /// Advertises, scans and runs sessions on one open controller until it is
  /// lost or the task is cancelled; then stops advertising and releases it.
  private func serve(_ host: any RadioHost) async -> String {
    let (events, continuation) = AsyncStream.makeStream(of: Event.self)
    state.withLock {
      $0.host = host
      $0.events = continuation
      $0.busy = []
      $0.beaconPending = false
    }
    defer {
      state.withLock {
        $0.host = nil
        $0.events = nil
      }
      continuation.finish()
    }
    let interval = Int(configuration.advertisingInterval.wholeMilliseconds)
    let reports: AsyncStream<AdvertisingReport>
    let channels = host.listenForChannels(psm: HandoffAgent.psm)
    do {
      try await host.startAdvertising(
        data: await engine.currentBeacon(), intervalMilliseconds: interval)
      reports = try await host.startScanning()
    } catch {
      await host.close()
      return "bring-up failed: \(error)"
    }
    log.info("advertising as \(host.address) every \(interval) ms and scanning")

    return await withTaskGroup(of: Void.self, returning: String.self) { group in
      group.addTask { for await report in reports { continuation.yield(.report(report)) } }
      group.addTask { for await channel in channels { continuation.yield(.channel(channel)) } }
      group.addTask {
        for await peer in host.incomingPeers() {
          continuation.yield(.connected(address: peer.description))
        }
      }
      let rotation = configuration.addressRotation
      group.addTask {
        while !Task.isCancelled {
          try? await Timers.shared.sleep(for: rotation)
          if !Task.isCancelled { continuation.yield(.rotate) }
        }
      }
      group.addTask {
        let error = await host.waitUntilClosed()
        continuation.yield(.closed(reason: error.map { "\($0)" } ?? "closed"))
      }

      var reason = "stopped"
      loop: for await event in events {
        // Stopping: events still queued are not worth handling.
        if Task.isCancelled { break loop }
        switch event {
        case .report(let report):
          if let address = await shouldInitiate(report) {
            group.addTask {
              await self.initiate(to: report.address, type: report.addressType, on: host)
              continuation.yield(.sessionEnded(address: address))
            }
          }
        case .channel(let channel):
          let address = channel.peerAddress.description
          state.withLock { _ = $0.busy.insert(address) }
          group.addTask {
            await self.runSession(on: channel, with: address, initiator: false)
            continuation.yield(.sessionEnded(address: address))
          }
        case .connected(let address):
          // A peer connected to us: it will open a channel; don't connect back.
          state.withLock { _ = $0.busy.insert(address) }
        case .sessionEnded(let address):
          state.withLock { _ = $0.busy.remove(address) }
          await refreshBeacon(host)
        case .beaconChanged:
          state.withLock { $0.beaconPending = false }
          await refreshBeacon(host)
        case .rotate:
          do {
            // The beacon is re-sealed and installed before advertising resumes
            // under the new address: no seal is ever heard under both. (BlueZ
            // owns its address: then only the beacon is re-sealed.)
            let beacon = await engine.currentBeacon()
            if let address = try await host.rotateAddressIfOwned(
              to: BluetoothAddress(littleEndian: engine.newAddress())!, advertisingData: beacon)
            {
              log.info("address rotated to \(address)")
            } else {
              await refreshBeacon(host)
            }
          } catch {
            log.warning("cannot rotate the address: \(error)")
          }
        case .closed(let why):
          reason = why
          break loop
        }
      }
      // Stopping (cancelled) or lost: release the controller first, so that
      // sessions blocked on their channels end at once, then the children.
      if !host.isClosed {
        try? await host.stopAdvertising()
        await host.close()
      }
      group.cancelAll()
      return reason
    }
  }

  // MARK: Decisions and sessions

  /// Records a keyed peer's beacon; returns its address when we should
  /// connect to it now.
  private func shouldInitiate(_ report: AdvertisingReport) async -> String? {
    guard await engine.isGroupBeacon(report.data) else { return nil }
    let address = report.address.description
    let (busy, unknown) = state.withLock { s -> (Bool, Bool) in
      s.heard[address] = Peer(lastSeen: Date(), rssi: report.rssi, beacon: report.data)
      return (s.busy.contains(address), s.names[address] == nil && !s.unresolved.contains(address))
    }
    if unknown {
      // A peer we know under a new address (it rotated): its name carries over.
      let name = await engine.peerName(resolving: report.address.bytes)
      state.withLock {
        if let name { $0.names[address] = name } else { _ = $0.unresolved.insert(address) }
        if $0.unresolved.count > 1024 { $0.unresolved.removeAll() }
      }
    }
    guard !busy, await engine.shouldConnect(beacon: report.data, from: address) else { return nil }
    let claimed = state.withLock { $0.busy.insert(address).inserted }
    return claimed ? address : nil
  }

  private func initiate(to peer: BluetoothAddress, type: AddressType, on host: any RadioHost)
    async
  {
    let address = peer.description
    // Two agents whose indexes differ both want a session, at about the same
    // moment. Two links between one pair serve nothing (and confuse some
    // controllers), so the one with the lower address connects at once and
    // the other gives it time first, then connects only if it still must.
    // A host that may connect from another address than it advertises
    // (BlueZ without a public address: the kernel's scanning NRPA) cannot be
    // recognised by the peer, so it always leaves the peer time to connect first.
    if host.connectsFromAnotherAddress || host.address.description > address {
      try? await Timers.shared.sleep(
        for: host.connectsFromAnotherAddress ? Self.yieldDelay * 2 : Self.yieldDelay)
      let beacon = state.withLock { $0.heard[address]?.beacon }
      guard let beacon, await engine.indexDiffers(beacon: beacon) else { return }
    }
    // Connected already (it connected to us meanwhile): its session will do.
    // Connecting again to a peer we are linked with can wedge a controller.
    if host.isConnected(to: peer) { return }
    do {
      let channel = try await host.openChannel(
        to: peer, addressType: type, psm: HandoffAgent.psm, timeout: Self.connectTimeout)
      await runSession(on: channel, with: address, initiator: true)
      await channel.close()
    } catch {
      log.info("cannot connect to \(address): \(error)")
    }
  }

  /// Runs one handoff session (every message under `sessionDeadline`) and
  /// remembers the peer's name for `baton status` as soon as the handshake has
  /// proved who it is, whichever side connected and however the session ends.
  private func runSession(on channel: any PeerChannel, with address: String, initiator: Bool)
    async
  {
    do {
      _ = try await engine.runSession(
        over: DeadlineChannel(channel, deadline: Self.sessionDeadline), initiator: initiator,
        peerAddress: address,
        authenticated: { name, _ in
          self.state.withLock {
            $0.names[address] = name
            $0.unresolved.removeAll()
          }
        })
    } catch {
      log.info("session with \(address) ended early: \(error)")
    }
  }

  private func refreshBeacon(_ host: any RadioHost) async {
    guard !host.isClosed else { return }
    do {
      try await host.updateAdvertisingData(await engine.currentBeacon())
    } catch {
      log.warning("cannot update the advertised beacon: \(error)")
    }
  }
}
