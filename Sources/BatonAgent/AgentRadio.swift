import BatonHandoff
import BatonRadio
import BatonSystem
import FoundationEssentials
import Synchronization

/// The agent's side of the radio: on the controller `ControllerSupervisor`
/// keeps open, advertises the engine's beacon, scans for peers' beacons on
/// the `ScanSchedule`, and makes the links and sessions the `PeerScheduler`
/// decides on (one link, PROTOCOL.md 6.2, with every keyed peer in range up
/// to a limit; per-change sessions, PROTOCOL.md 6, with the others): the
/// driver of those two state machines.
///
/// Everything that happens on one open controller is handled by one loop over
/// one stream of events, so the decisions (connect or not, re-seal the
/// beacon, rotate the address) never race each other; sessions run as child
/// tasks of that loop and end with it.
final class AgentRadio: Sendable {
  /// The longest a session waits for the peer to take or give a message.
  static let sessionDeadline: Duration = .seconds(20)
  /// How long the agent with the higher address gives the other to connect
  /// first when both want a session (both see the indexes differ).
  static let yieldDelay: Duration = .milliseconds(1500)
  /// The longest we wait for a connection to a peer to complete.
  static let connectTimeout: Duration = .seconds(5)
  /// How long a peer that connected to us has to open its channel.
  static let channelWait: Duration = .seconds(10)
  /// Each address rotation comes after `address-rotation` × (1 ± this), so
  /// an observer cannot tie two addresses together by a fixed period.
  static let rotationJitter = 0.2

  /// The period rotations are jittered around: `address-rotation`, or
  /// where the system gives a live advertisement a new address after
  /// `addressLifetime` (BlueZ with privacy: the kernel's RPA timeout), two
  /// thirds of that if shorter. So even the longest jittered period (0.8 of
  /// the lifetime) re-seals, which gives the beacon a new address, before
  /// the system could give the old seal one (PROTOCOL.md 3.3).
  static func rotationBase(_ rotation: Duration, addressLifetime: Duration?) -> Duration {
    guard let lifetime = addressLifetime else { return rotation }
    return min(rotation, lifetime * 2 / 3)
  }

  /// `base` × (1 - rotationJitter + 2 × rotationJitter × `unit`), for a
  /// `unit` in [0, 1) (clamped; not a number counts as the middle).
  static func jittered(_ base: Duration, unit: Double) -> Duration {
    let unit = unit.isNaN ? 0.5 : min(max(unit, 0), 1)
    return base * (1 - rotationJitter + 2 * rotationJitter * unit)
  }

  enum Event: Sendable {
    case report(AdvertisingReport)
    case channel(any PeerChannel)
    case beaconChanged
    case rotate
    case connected(BluetoothAddress)
    /// A peer that connected to us opened no channel in `channelWait`.
    case noChannel(BluetoothAddress, token: UInt64)
    case sessionEnded(address: String)
    /// A link came up (handshake done).
    case linkUp
    /// A link ended, or the adapter came back: a peer may be back (under
    /// a new address) or new; the schedule starts a burst.
    case burst
    /// The scan schedule asked to be looked at again.
    case scanTick
    /// The adapter started or stopped carrying an audio stream.
    case audio(Bool)
    /// The host hears peers by itself (named), or no longer (nil).
    case passive(String?)
    /// Give the controller up and reopen it.
    case reopen(reason: String)
    case closed(reason: String)
  }

  private struct State {
    var host: (any RadioHost)?
    var events: AsyncStream<Event>.Continuation?
    /// Who we connect to, and how: peers heard, links, connections.
    var peers: PeerScheduler<HandoffLink>
    /// The bounds on connections (PROTOCOL.md 3, "Replays"): settled digest
    /// pairs, the attempt per address, addresses held back after a failed
    /// handshake.
    var connections: ConnectionMemory
    /// A `.beaconChanged` is queued and not yet handled: a burst of saves
    /// makes one re-seal, not one per save (issue 14's livelock).
    var beaconPending = false
    /// When to scan (baton(1), Scanning), and what the host was last told
    /// (it scans unless `.off`).
    var schedule = ScanSchedule(mode: .windows, seed: 0)
    var scanActivity: ScanSchedule.Activity = .burst
    /// Whether the host was told to report every advertisement (nil: not
    /// told yet; it starts scanning with every report).
    var everyReport: Bool?
    /// The adapter carries an audio stream (BlueZ's MediaTransport1).
    var audio = false
    /// How the host hears peers by itself (`RadioHostChange.passiveScan`),
    /// if it does: then its scan stays on but for an audio stream.
    var passive: String?
    /// The host changed how it scans: tell it the schedule's step, even if
    /// the step did not change.
    var scanToldStale = false
    /// Addresses whose beacon is decided again when the link fallback ends.
    var waiting: Set<String> = []
  }

  /// Our beacon sealed now, and whether to advertise it connectable; while
  /// `baton pair` shows a code, the pairing advertisement instead, always
  /// connectable (PROTOCOL.md 14.7). The engine's content as it last
  /// published it: sealing never waits for the engine's thread.
  private func sealedBeacon() -> (data: [UInt8], connectable: Bool) {
    if let session = pairing(), session.isOpen() {
      return (PairingAdvertisement.make(slot: session.offer.code.slot), true)
    }
    let (closed, asking) = state.withLock { $0.peers.beaconFlags(now: .now) }
    return (engine.publishedBeacon(closed: closed, asking: asking), !closed)
  }

  /// Re-seals the beacon at `instant` (a window or an ask ends).
  private func beaconChanged(at instant: ContinuousClock.Instant) {
    Task { [weak self] in
      try? await Timers.shared.sleep(until: instant)
      self?.beaconChanged()
    }
  }

  let configuration: AgentConfiguration
  let engine: HandoffEngine
  private let state: Mutex<State>
  private let log = Logger(label: "radio")

  /// The machine resumed from suspend (`SleepWatcher`): anyone may be
  /// around now, so the schedule starts a burst.
  func resumed() {
    let passive = state.withLock { $0.passive != nil }
    log.info("resumed from suspend" + (passive ? "" : ": scanning for 10 s"))
    state.withLock { _ = $0.events?.yield(.burst) }
  }

  /// The code `baton pair` shows on this member, if any.
  let pairing: @Sendable () -> MemberPairing?

  /// Opens the controller: the one `configuration` names, or a test's host.
  private let openHost: @Sendable () async throws -> any RadioHost

  init(
    configuration: AgentConfiguration, engine: HandoffEngine,
    pairing: @escaping @Sendable () -> MemberPairing? = { nil },
    openHost: (@Sendable () async throws -> any RadioHost)? = nil
  ) {
    self.configuration = configuration
    self.engine = engine
    self.pairing = pairing
    self.openHost =
      openHost ?? {
        try await RadioHostOpener.open(
          configuration.controller, hciLog: configuration.hciLog,
          address: BluetoothAddress(littleEndian: engine.newAddress()))
      }
    state = Mutex(
      State(
        peers: PeerScheduler(device: engine.deviceID),
        connections: ConnectionMemory(policy: engine.policy)))
  }

  /// Our current address, once the controller is open.
  var address: String? { state.withLock { $0.host?.address.description } }

  /// How a keyed peer heard without a link keeps the schedule scanning: for
  /// this long after its last beacon.
  static let unlinkedPeerWindow: TimeInterval = 15

  /// What the scan schedule does now, for `baton status`: "windows: off",
  /// "windows: burst", "continuous", "passive (bluetoothd advertisement
  /// monitor)", ...; nil while no controller is open.
  var scanning: String? {
    state.withLock { s in
      guard s.host != nil else { return nil }
      if let how = s.passive {
        if s.scanActivity == .passive { return "passive (\(how))" }
        // An audio stream: the windows' rules turn the passive scan off and on.
        return "passive (\(how)): \(s.scanActivity.rawValue)"
          + (s.schedule.current.audio ? " (audio stream)" : "")
      }
      let mode = s.schedule.mode
      if mode == .continuous { return mode.rawValue }
      return "\(mode.rawValue): \(s.scanActivity.rawValue)"
        + (s.schedule.current.audio ? " (audio stream)" : "")
    }
  }

  /// The engine's index or current activity changed: re-seal the beacon.
  func beaconChanged() {
    state.withLock { s in
      guard !s.beaconPending, let events = s.events else { return }
      s.beaconPending = true
      events.yield(.beaconChanged)
    }
  }

  /// Keyed peers heard within the last minute, and linked peers, most
  /// recent first, each with its link state.
  func peersInRange() -> [AgentStatus.Peer] {
    let now = Date()
    let cutoff = now.addingTimeInterval(-PeerScheduler<HandoffLink>.inRangeWindow)
    return state.withLock { $0.peers.peers(heardSince: cutoff, now: now) }
  }

  // MARK: The controller's life

  /// Runs until cancelled, on the controller `ControllerSupervisor` opens
  /// and reopens; throws when the first open fails for good.
  func run() async throws {
    // The engine tells each change of the beacon's content (a save, a
    // deletion, a note that came over a link or in a session): re-seal.
    let changes = Task { [engine] in
      for await _ in engine.beaconChanges { self.beaconChanged() }
    }
    defer { changes.cancel() }
    let supervisor = ControllerSupervisor(
      spec: configuration.controller.description, open: openHost,
      mayRetry: RadioHostOpener.mayRetry)
    try await supervisor.run { await self.serve($0) }
  }

  /// Advertises, scans and runs sessions on one open controller until it is
  /// lost or the task is cancelled; then stops advertising and releases it.
  private func serve(_ host: any RadioHost) async -> String {
    let (events, continuation) = AsyncStream.makeStream(of: Event.self)
    state.withLock {
      $0.host = host
      $0.events = continuation
      $0.beaconPending = false
      // A controller (re)opened: anyone may be around.
      $0.schedule = ScanSchedule(
        mode: configuration.scanning, seed: UInt64.random(in: 0...UInt64.max))
      $0.schedule.startBurst(now: .now)
      $0.scanActivity = .burst
      $0.everyReport = nil
      $0.audio = false
      $0.passive = nil
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
      state.withLock { $0.peers.controllerOpened(addressIsPrivate: host.addressIsPrivate) }
      let beacon = sealedBeacon()
      try await host.startAdvertising(
        data: beacon.data, intervalMilliseconds: interval, connectable: beacon.connectable)
      // Strangers' advertisements (most of what a busy room sends) end
      // in the host, on the thread that received them.
      reports = try await host.startScanning(accepting: { [engine] in engine.isGroupBeacon($0) })
    } catch {
      await host.close()
      return "bring-up failed: \(error)"
    }
    log.info(
      "advertising as \(host.address) every \(interval) ms and scanning"
        + (configuration.scanning == .windows ? " (on a schedule, baton(1), Scanning)" : ""))

    return await withTaskGroup(of: Void.self, returning: String.self) { group in
      group.addTask { for await report in reports { continuation.yield(.report(report)) } }
      group.addTask { for await channel in channels { continuation.yield(.channel(channel)) } }
      group.addTask {
        for await peer in host.incomingPeers() { continuation.yield(.connected(peer)) }
      }
      group.addTask {
        for await change in host.changes() {
          switch change {
          case .audio(let on): continuation.yield(.audio(on))
          case .adapterBack: continuation.yield(.burst)
          case .passiveScan(let how): continuation.yield(.passive(how))
          }
        }
      }
      let rotation = Self.rotationBase(
        configuration.addressRotation, addressLifetime: host.addressLifetime)
      if let lifetime = host.addressLifetime, rotation < configuration.addressRotation {
        log.info(
          "the system keeps an advertising address \(lifetime.components.seconds) s"
            + " (the kernel's RPA timeout): re-sealing the beacon every"
            + " \(rotation.components.seconds) s ± 20 %, so no seal outlives its address")
      }
      group.addTask {
        var random = SystemRandomNumberGenerator()
        while !Task.isCancelled {
          let unit = Double(random.next() >> 11) / Double(1 << 53)
          try? await Timers.shared.sleep(for: Self.jittered(rotation, unit: unit))
          if !Task.isCancelled { continuation.yield(.rotate) }
        }
      }
      group.addTask {
        let error = await host.waitUntilClosed()
        continuation.yield(.closed(reason: error.map { "\($0)" } ?? "closed"))
      }

      var reason = "stopped"
      var scanTimer: (wake: ContinuousClock.Instant, task: Task<Void, Never>)?
      /// Brings the host's scanning in line with the schedule, and arms the
      /// schedule's next look.
      func applySchedule() async {
        let now = ContinuousClock.now
        let (step, change) = state.withLock { s -> (ScanSchedule.Step, Bool) in
          s.schedule.update(Self.situation(s))
          let step = s.schedule.step(now: now)
          defer { s.scanActivity = step.activity }
          if step.activity != s.scanActivity && step.activity != .peers {
            log.debug("scan schedule: \(step.activity.rawValue)")
          }
          let every = step.activity.needsEveryReport
          let filterChanged = step.scanning && s.everyReport != every
          if step.scanning { s.everyReport = every }
          defer { s.scanToldStale = false }
          return (
            step, step.scanning != (s.scanActivity != .off) || filterChanged || s.scanToldStale
          )
        }
        if change {
          do {
            try await host.setScanning(step.scanning, everyReport: step.activity.needsEveryReport)
          } catch {
            log.warning("cannot turn scanning \(step.scanning ? "on" : "off"): \(error)")
          }
        }
        guard step.wake != scanTimer?.wake else { return }
        scanTimer?.task.cancel()
        scanTimer = step.wake.map { wake in
          (
            wake,
            Task {
              try? await Timers.shared.sleep(until: wake)
              if !Task.isCancelled { continuation.yield(.scanTick) }
            }
          )
        }
      }
      defer { scanTimer?.task.cancel() }
      await applySchedule()

      loop: for await event in events {
        // Stopping: events still queued are not worth handling.
        if Task.isCancelled { break loop }
        switch event {
        case .linkUp, .scanTick:
          await applySchedule()
        case .audio(let on):
          let changed = state.withLock { s -> Bool in
            defer { s.audio = on }
            return s.audio != on
          }
          if changed {
            log.info(
              on
                ? "the adapter carries an audio stream: no scan windows while a link is up"
                : "the adapter's audio stream ended: scan windows resume")
          }
          await applySchedule()
        case .burst:
          state.withLock { $0.schedule.startBurst(now: .now) }
          await applySchedule()
        case .passive(let how):
          state.withLock {
            $0.passive = how
            $0.scanToldStale = true
          }
          await applySchedule()
        case .report(let report):
          let address = report.address.description
          let action = await decide(report, on: host)
          // Only a keyed peer's beacon can change the schedule.
          if state.withLock({ $0.peers.heard[address] != nil }) { await applySchedule() }
          switch action {
          case .none:
            break
          case .link:
            group.addTask {
              await self.link(to: report.address, type: report.addressType, on: host)
              continuation.yield(.sessionEnded(address: address))
            }
          case .session:
            group.addTask {
              await self.initiate(to: report.address, type: report.addressType, on: host)
              continuation.yield(.sessionEnded(address: address))
            }
          }
        case .channel(let channel):
          let address = channel.peerAddress.description
          state.withLock { $0.peers.channelOpened(address) }
          group.addTask {
            await self.respond(on: channel, with: address, host: host)
            continuation.yield(.sessionEnded(address: address))
          }
        case .connected(let peer):
          // A peer connected to us: it will open a channel; don't connect
          // back. If it never does (its Connection Complete was lost, or it
          // died), the connection is dropped after `channelWait`.
          let address = peer.description
          let token = state.withLock { $0.peers.peerConnected(address) }
          group.addTask {
            try? await Timers.shared.sleep(for: Self.channelWait)
            continuation.yield(.noChannel(peer, token: token))
          }
        case .noChannel(let peer, let token):
          let address = peer.description
          let expired = state.withLock { $0.peers.channelWaitEnded(address, token: token) }
          if expired {
            log.warning(
              "\(address) connected but opened no channel within \(Self.channelWait);"
                + " disconnecting")
            group.addTask { await host.disconnect(peer: peer) }
          }
        case .sessionEnded(let address):
          state.withLock { $0.peers.sessionEnded(address) }
          await applySchedule()
          await refreshBeacon(host)
        case .reopen(let why):
          reason = why
          break loop
        case .beaconChanged:
          state.withLock { $0.beaconPending = false }
          await refreshBeacon(host)
        case .rotate:
          do {
            // The beacon is re-sealed and installed before advertising resumes
            // under the new address: no seal is ever heard under both. (BlueZ
            // owns its address: then only the beacon is re-sealed, which
            // registers a new advertisement, and with privacy the kernel
            // gives that a new address; `rotationBase`.)
            let beacon = sealedBeacon().data
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
        // Beside bluetoothd, closing our bus connection withdraws the
        // advertisement: asking first could cost the stop its deadline
        // (bluetoothd busy with our last re-registration, under a slow VM).
        if host.ownsAddress { try? await host.stopAdvertising() }
        await host.close()
      }
      group.cancelAll()
      return reason
    }
  }

  // MARK: Decisions and sessions

  /// What the scan schedule depends on, from the radio's state.
  private static func situation(_ s: State) -> ScanSchedule.Situation {
    let cutoff = Date().addingTimeInterval(-unlinkedPeerWindow)
    return ScanSchedule.Situation(
      linksUp: s.peers.linksUp, unlinkedPeer: s.peers.unlinkedPeer(heardSince: cutoff),
      audio: s.audio, passive: s.passive != nil, closed: s.peers.closedByDefault,
      anchor: s.peers.anchor)
  }

  private enum Action {
    case none
    /// Connect and make a link.
    case link
    /// Connect for one per-change session.
    case session
  }

  /// Our beacon's flags changed for a beacon heard (PROTOCOL.md 3.3): re-seal
  /// it now and when the change ends.
  private func flagsChanged(_ change: PeerScheduler<HandoffLink>.FlagChange) {
    switch change {
    case .none:
      return
    case .ask(let until):
      log.info("a peer's beacon is not connectable: asking it to open (PROTOCOL.md 3.3)")
      beaconChanged()
      beaconChanged(at: until)
    case .window(let until, let count):
      log.info(
        "a peer asks for a link: advertising connectably for "
          + "\(PeerScheduler<HandoffLink>.windowLength.components.seconds) s (window \(count))")
      beaconChanged()
      beaconChanged(at: until)
    }
  }

  /// Records a keyed peer's beacon and decides what to do about it: the
  /// scheduler decides, the bounds on connections (`ConnectionMemory`,
  /// PROTOCOL.md 3, "Replays") have the last word, and the scheduler claims
  /// the address. Only an address heard for the first time waits for the
  /// engine (who it resolves to); the rest is decided here, with the digest
  /// the engine published.
  private func decide(_ report: AdvertisingReport, on host: any RadioHost) async -> Action {
    let address = report.address.description
    guard let content = engine.openBeacon(report.data, from: address) else { return .none }
    let unknown = state.withLock {
      $0.peers.hear(address, rssi: report.rssi, beacon: report.data, at: Date())
    }
    if unknown {
      // A peer we know under a new address (it rotated, or sent a closed
      // beacon from a fresh one): its name carries over.
      let byAddress = await engine.peer(resolving: report.address.bytes)
      let peer = byAddress != nil ? byAddress : await engine.peer(resolvingBeacon: report.data)
      state.withLock { $0.peers.resolved(address, as: peer, byAddress: byAddress != nil) }
    }
    let (decision, flags) = state.withLock {
      $0.peers.consider(
        address, content: content, ourAddress: host.address.description,
        connectsFromAnotherAddress: host.connectsFromAnotherAddress, now: .now)
    }
    flagsChanged(flags)
    switch decision {
    case .ignore:
      return .none
    case .wait(let until):
      decideAgain(report, at: until)
      return .none
    case .probe(let link):
      link.probe()
      return .none
    case .link(let device):
      // A beacon replayed from fresh addresses gets no more connections
      // for links than for sessions (PROTOCOL.md 3, "Replays").
      let mine = engine.currentIndexDigest
      return state.withLock { s in
        s.connections.mayLink(
          for: content, from: address, mine: mine, addressIsKnown: s.peers.isKnown(address),
          now: .now) && s.peers.claimLink(address, device: device)
      } ? .link : .none
    case .session:
      let mine = engine.currentIndexDigest
      return state.withLock { s in
        s.connections.mayConnect(
          for: content, from: address, mine: mine, addressIsKnown: s.peers.isKnown(address),
          now: .now) && s.peers.claimSession(address)
      } ? .session : .none
    }
  }

  /// Decides on `report` again at `instant` (the link fallback's end), once
  /// per address: a host reports an unchanged advertisement once a scan
  /// unless told to report every one, which in a burst or a window it is
  /// not, so waiting for the next report could outlast the peer's window.
  private func decideAgain(_ report: AdvertisingReport, at instant: ContinuousClock.Instant) {
    let address = report.address.description
    guard state.withLock({ $0.waiting.insert(address).inserted }) else { return }
    Task { [weak self] in
      try? await Timers.shared.sleep(until: instant)
      self?.state.withLock { s in
        s.waiting.remove(address)
        _ = s.events?.yield(.report(report))
      }
    }
  }

  /// What became of a session or link at `address` this agent started or
  /// served, for the bounds on connections (`ConnectionMemory.ended`).
  private func ended(at address: String, _ outcome: Result<SessionSummary?, any Error>) {
    state.withLock { $0.connections.ended(at: address, outcome, now: .now) }
  }

  /// Connects to `peer` and runs a link with it until it ends.
  private func link(to peer: BluetoothAddress, type: AddressType, on host: any RadioHost) async {
    let address = peer.description
    // The placeholder made by `decide`, unless a link took its place.
    defer { state.withLock { $0.peers.linkAttemptEnded(address) } }
    // Connected already (it connected to us meanwhile): its link will do.
    // Connecting again to a peer we are linked with can wedge a controller.
    if host.isConnected(to: peer) { return }
    let channel: any PeerChannel
    do {
      channel = try await host.openChannel(
        to: peer, addressType: type, psm: HandoffAgent.psm, timeout: Self.connectTimeout)
      state.withLock { $0.peers.connected() }
    } catch {
      log.info("cannot link with \(address): \(error)")
      state.withLock { $0.peers.linkFailed(address, now: .now) }
      noteConnectFailure(error, host: host)
      noteNoRoom(error, host: host)
      return
    }
    let guarded = DeadlineChannel(channel, deadline: Self.sessionDeadline)
    do {
      let link = try await engine.openLink(
        over: guarded, peerAddress: address,
        authenticated: { name, device in self.learnt(name, device, at: address) })
      ended(at: address, .success(nil))
      state.withLock { $0.peers.linkOpened(address) }
      await run(link, at: address)
    } catch {
      log.info("cannot link with \(address): \(error)")
      ended(at: address, .failure(error))
      state.withLock { $0.peers.linkFailed(address, now: .now) }
    }
    await channel.close()
  }

  /// Serves a channel a peer opened: a link, or a one-shot session.
  private func respond(on channel: any PeerChannel, with address: String, host: any RadioHost)
    async
  {
    var served: any MessageChannel = channel
    // While a code is shown, a newcomer's P1 comes on the same PSM as a
    // member's M1: the first message tells which.
    if let session = pairing(), session.isOpen() {
      guard let first = await Self.firstMessage(of: channel) else {
        await channel.close()
        return
      }
      if PairingMessage.isHello(first) {
        await pair(session, over: ReplayChannel(channel, first: first), with: address)
        await channel.close()
        return
      }
      served = ReplayChannel(channel, first: first)
    }
    let guarded = DeadlineChannel(served, deadline: Self.sessionDeadline)
    do {
      let outcome = try await engine.respond(
        over: guarded, peerAddress: address,
        authenticated: { name, device in self.learnt(name, device, at: address) })
      if case .session(let summary) = outcome { ended(at: address, .success(summary)) }
      if case .link(let link) = outcome {
        await run(link, at: address)
        // A dead peer's controller may hold the connection: drop it.
        // (Not if another link took its place on the same connection address.)
        let replacedHere = state.withLock { $0.peers.hasLink(at: address) }
        if link.isDead && !replacedHere { await host.disconnect(peer: channel.peerAddress) }
      }
    } catch {
      log.info("session with \(address) ended early: \(error)")
      ended(at: address, .failure(error))
    }
    await channel.close()
  }

  /// The first message on a channel a peer opened, within the pairing's
  /// wait for a message; nil (the channel closed) when none came.
  private static func firstMessage(of channel: any MessageChannel) async -> [UInt8]? {
    await Timers.shared.withDeadline(Pairing.defaultTimeout, onExpiry: { await channel.close() }) {
      (try? await channel.receive()) ?? nil
    }
  }

  /// The member's side of a pairing over a channel a newcomer opened:
  /// builds its enrolment once P3 proved the code, records the admission
  /// when the exchange ends (acknowledged by P5 or not: PROTOCOL.md 14.5),
  /// and tells the waiting `baton pair`.
  private func pair(_ session: MemberPairing, over channel: any MessageChannel, with address: String)
    async
  {
    let engine = self.engine
    let prepared = Mutex<(records: [MembershipRecord], newcomer: PairingIdentity)?>(nil)
    log.notice("\(address) asks to pair with the code shown")
    let result: Result<PairingOutcome, any Error>
    do {
      result = .success(
        try await Pairing.run(over: channel, member: session.offer, me: engine.pairingIdentity) {
          newcomer in
          let made = try await engine.prepareAdmission(of: newcomer)
          prepared.withLock { $0 = (made.records, newcomer) }
          return made.enrolment
        })
    } catch {
      result = .failure(error)
    }
    // Recorded after the exchange, not before P4 (the epoch it moves to
    // restarts the radio, which would end the exchange), whether P5 came
    // or not: the newcomer proved the code, and may hold the enrolment.
    if let (records, newcomer) = prepared.withLock({ $0 }) {
      await engine.admit(records, name: newcomer.name)
    }
    switch result {
    case .success(let outcome):
      let peer = outcome.peer
      session.finish(
        .success(
          "paired with \(peer.name) (fingerprint \(peer.fingerprint)): it is a member now and"
            + " gets every note"))
    case .failure(let error):
      log.warning("pairing with \(address) failed: \(error)")
      let listed = prepared.withLock { $0?.newcomer }.map {
        "; \($0.name) (fingerprint \($0.fingerprint)) proved the code and is listed as a member:"
          + " if its 'baton pair' said it paired, nothing more is needed, else run 'baton pair'"
          + " here again for a new code"
      }
      // A P1 for another slot leaves the code to its own newcomer.
      if session.offer.current == .spent {
        session.finish(.failure(ControlFailure("\(error)" + (listed ?? ""))))
      }
    }
    beaconChanged()
  }

  /// Runs a link, unless one with the same peer is up already and the
  /// scheduler keeps that one (`PeerScheduler.linkUp`).
  private func run(_ link: HandoffLink, at address: String) async {
    let engine = self.engine
    let outcome = state.withLock { s -> PeerScheduler<HandoffLink>.LinkUp in
      let outcome = s.peers.linkUp(
        link, at: address, peer: link.peerDevice, name: link.peerName,
        initiator: link.initiator, now: .now,
        isFrom: { engine.beacon($0, isFrom: link.peerDevice) })
      if case .kept(_, let windowClosed) = outcome {
        if windowClosed { s.events?.yield(.beaconChanged) }
        s.events?.yield(.linkUp)
      }
      return outcome
    }
    switch outcome {
    case .turnedAway(let kept):
      for old in kept { old.probe() }
      await link.close("a link with \(link.peerName) is up already")
      return
    case .kept(let losers, _):
      for old in losers {
        await old.close("a newer link with \(link.peerName) replaced it", peerGone: true)
      }
    }
    await engine.runLink(link)
    state.withLock { s in
      s.peers.linkEnded(link, at: address)
      s.events?.yield(.burst)
    }
  }

  /// The handshake proved who is at `address`.
  private func learnt(_ name: String, _ device: DeviceID, at address: String) {
    state.withLock { $0.peers.learnt(name, device: device, at: address) }
  }

  /// A controller that refuses a connection for lack of room holds no more
  /// links than it has now (`PeerScheduler.noRoom`).
  private func noteNoRoom(_ error: any Error, host: any RadioHost) {
    guard host.failure(of: error) == .noRoom else { return }
    let limit = state.withLock { $0.peers.noRoom() }
    log.notice("the controller has no room for another connection: links kept at \(limit)")
  }

  /// A controller that keeps refusing connections because it still holds an
  /// abandoned attempt (it did not carry out the cancel) is reopened.
  private func noteConnectFailure(_ error: any Error, host: any RadioHost) {
    guard host.failure(of: error) == .attemptStuck else { return }
    state.withLock { s in
      guard s.peers.attemptStuck() else { return }
      s.events?.yield(
        .reopen(
          reason:
            "it refused \(PeerScheduler<HandoffLink>.stuckAttemptsBeforeReopen) connection"
            + " attempts in a row for an abandoned one it did not cancel"))
    }
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
      let beacon = state.withLock { $0.peers.beacon(heardFrom: address) }
      guard let beacon, engine.indexDiffers(beacon: beacon) else { return }
    }
    // Connected already (it connected to us meanwhile): its session will do.
    // Connecting again to a peer we are linked with can wedge a controller.
    if host.isConnected(to: peer) { return }
    do {
      let channel = try await host.openChannel(
        to: peer, addressType: type, psm: HandoffAgent.psm, timeout: Self.connectTimeout)
      state.withLock { $0.peers.connected() }
      await runSession(on: channel, with: address, initiator: true)
      await channel.close()
    } catch {
      log.info("cannot connect to \(address): \(error)")
      noteConnectFailure(error, host: host)
    }
  }

  /// Runs one handoff session (every message under `sessionDeadline`) and
  /// remembers the peer's name for `baton status` as soon as the handshake has
  /// proved who it is, whichever side connected and however the session ends.
  private func runSession(on channel: any PeerChannel, with address: String, initiator: Bool)
    async
  {
    do {
      let summary = try await engine.runSession(
        over: DeadlineChannel(channel, deadline: Self.sessionDeadline), initiator: initiator,
        peerAddress: address,
        authenticated: { name, _ in
          self.state.withLock { $0.peers.learnt(name, device: nil, at: address) }
        })
      ended(at: address, .success(summary))
    } catch {
      log.info("session with \(address) ended early: \(error)")
      ended(at: address, .failure(error))
    }
  }

  private func refreshBeacon(_ host: any RadioHost) async {
    guard !host.isClosed else { return }
    do {
      let beacon = sealedBeacon()
      try await host.updateAdvertisingData(beacon.data, connectable: beacon.connectable)
    } catch {
      log.warning("cannot update the advertised beacon: \(error)")
    }
  }
}
