import BatonHCI
import BatonHandoff
import BatonHost
import BatonL2CAP
import BatonSystem
import FoundationEssentials
import Synchronization

/// The agent's side of the radio: opens the controller (and reopens it with
/// back-off when it is lost), advertises the engine's beacon, scans for
/// peers' beacons, and keeps one link (PROTOCOL.md 6.2) with every keyed peer
/// in range, up to `maxLinks`: of the two, the one whose device id is lower
/// (the lower address while either is unknown) connects, the other accepts,
/// and connects itself only if no link has come `linkFallback` after it
/// first heard the peer. Peers beyond the limit, or that refuse links, get
/// the per-change sessions of PROTOCOL.md 6 when their beacon differs.
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
  /// How many links are kept at once (baton(1)); most controllers hold 4 to
  /// 8 connections, and one must stay free for per-change sessions.
  static let maxLinks = 4
  /// How long the side that only accepts waits for the peer's link before
  /// connecting itself (the peer may be at its limit, not know us yet, or
  /// not be scanning: a linked agent scans only in windows, so for a
  /// newcomer this wait is part of every new link). A peer that is
  /// scanning hears our beacon well within it (every 200 ms, or 1.28 s
  /// from bluetoothd) and connects first.
  static let linkFallback: Duration = .milliseconds(2500)
  /// How long a peer that connected to us has to open its channel.
  static let channelWait: Duration = .seconds(10)
  /// Link attempts that fail in a row before the peer gets per-change
  /// sessions instead, for `linkRetryPause`.
  static let linkAttempts = 3
  static let linkRetryPause: Duration = .seconds(60)
  /// Connection attempts the controller refuses because it still holds an
  /// abandoned one (it did not carry out the cancel) before it is reopened.
  static let stuckAttemptsBeforeReopen = 3
  /// Back-off between attempts to reopen a lost controller.
  static let reopenDelays: [Duration] = [
    .seconds(1), .seconds(2), .seconds(5), .seconds(10), .seconds(30),
  ]
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

  /// A link, from the moment we decide to make it (or a peer opens one).
  private struct LinkEntry {
    var device: DeviceID?
    var name: String?
    /// nil while connecting and during the handshake.
    var link: HandoffLink?
    /// When the link came up (its handshake done): the scan schedule's turns.
    var since: ContinuousClock.Instant?
    /// The last other address of this peer we probed the link for.
    var probed: String?
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
    /// Addresses with a session or link under way (either direction).
    var busy: Set<String> = []
    /// A `.beaconChanged` is queued and not yet handled: a burst of saves
    /// makes one re-seal, not one per save (issue 14's livelock).
    var beaconPending = false
    /// Links, by the address of their connection.
    var links: [String: LinkEntry] = [:]
    /// Device ids of heard addresses, resolved (PROTOCOL.md 3.1).
    var devices: [String: DeviceID] = [:]
    /// Peers heard with no link, when we accept rather than connect: since when.
    var waiting: [String: ContinuousClock.Instant] = [:]
    /// Failed link attempts in a row, and until when the peer gets sessions.
    var linkFailures: [String: (count: Int, pausedUntil: ContinuousClock.Instant?)] = [:]
    /// Incoming connections still without a channel: their token.
    var awaitingChannel: [String: UInt64] = [:]
    var nextToken: UInt64 = 0
    /// Connection attempts refused in a row for an abandoned one.
    var stuckAttempts = 0
    /// Links this controller holds: `maxLinks`, or fewer once it refused a
    /// connection for lack of room.
    var linkLimit = AgentRadio.maxLinks
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
    /// The beacon goes out closed (not connectable) unless a window is open:
    /// the host's address is not private (PROTOCOL.md 3.3).
    var closedByDefault = false
    /// A window a peer asked for: connectable until then.
    var windowUntil: ContinuousClock.Instant?
    /// Windows opened since the controller was opened, for the log.
    var windows = 0
    /// We heard a closed keyed peer without a link: our beacon asks it to
    /// open, until then.
    var askingUntil: ContinuousClock.Instant?
  }

  /// How long a window stays open: the asker connects within the link
  /// fallback (4 s) once it hears it, and bluetoothd sends our beacon every
  /// 1.28 s.
  static let windowLength: Duration = .seconds(15)
  /// How long we ask after we last heard a closed peer we want a link with.
  static let askLength: Duration = .seconds(20)

  /// Whether our beacon is closed now, and whether it asks.
  private static func beaconFlags(_ s: State, now: ContinuousClock.Instant) -> (
    closed: Bool, asking: Bool
  ) {
    let window = s.windowUntil.map { now < $0 } ?? false
    let asking = s.askingUntil.map { now < $0 } ?? false
    return (s.closedByDefault && !window, asking)
  }

  /// Our beacon sealed now, and whether to advertise it connectable; while
  /// `baton pair` shows a code, the pairing advertisement instead, always
  /// connectable (PROTOCOL.md 14.8).
  private func sealedBeacon() async -> (data: [UInt8], connectable: Bool) {
    if let session = pairing(), session.isOpen() {
      return (PairingAdvertisement.make(slot: session.offer.code.slot), true)
    }
    let (closed, asking) = state.withLock { Self.beaconFlags($0, now: .now) }
    return (await engine.currentBeacon(closed: closed, asking: asking), !closed)
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
  private let state = Mutex(State())
  private let log = Logger(label: "radio")

  /// The machine resumed from suspend (`SleepWatcher`): anyone may be
  /// around now, so the schedule starts a burst.
  func resumed() {
    let passive = state.withLock { $0.passive != nil }
    log.info("resumed from suspend" + (passive ? "" : ": scanning for 10 s"))
    state.withLock { $0.events?.yield(.burst) }
  }

  /// The code `baton pair` shows on this member, if any.
  let pairing: @Sendable () -> MemberPairing?

  init(
    configuration: AgentConfiguration, engine: HandoffEngine,
    pairing: @escaping @Sendable () -> MemberPairing? = { nil }
  ) {
    self.configuration = configuration
    self.engine = engine
    self.pairing = pairing
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
    let cutoff = Date().addingTimeInterval(-Self.inRangeWindow)
    return state.withLock { s in
      func linkState(_ address: String) -> (String, LinkEntry)? {
        let device = s.devices[address]
        let entry =
          s.links[address].map { (address, $0) }
          ?? s.links.first { device != nil && $0.value.device == device }.map { ($0.key, $0.value) }
        return entry.map { ($0.1.link == nil ? "connecting" : "up", $0.1) }
      }
      var shown: Set<String> = []
      var peers: [AgentStatus.Peer] = s.heard.filter { $0.value.lastSeen >= cutoff }
        .map {
          let link = linkState($0.key)
          shown.insert($0.key)
          return AgentStatus.Peer(
            name: s.names[$0.key] ?? link?.1.name ?? "?", address: $0.key,
            lastSeen: $0.value.lastSeen, rssi: $0.value.rssi, link: link?.0)
        }
      // A linked peer whose beacon is not heard (or heard under another
      // address only) is still in range: show its link's address.
      for (address, entry) in s.links where entry.link != nil && !shown.contains(address) {
        let heardElsewhere = peers.contains {
          $0.link == "up" && s.devices[$0.address] != nil && s.devices[$0.address] == entry.device
        }
        if heardElsewhere { continue }
        peers.append(
          AgentStatus.Peer(
            name: entry.name ?? s.names[address] ?? "?", address: address,
            lastSeen: s.heard[address]?.lastSeen ?? Date(), rssi: s.heard[address]?.rssi,
            link: "up"))
      }
      // A closed beacon comes from a fresh address at every seal
      // (PROTOCOL.md 3.3): one row per device, its latest address.
      var seen: Set<DeviceID> = []
      return peers.sorted { $0.lastSeen > $1.lastSeen }.filter { peer in
        guard let device = s.devices[peer.address] else { return true }
        return seen.insert(device).inserted
      }
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
      $0.links = [:]
      $0.waiting = [:]
      $0.awaitingChannel = [:]
      $0.stuckAttempts = 0
      $0.linkLimit = Self.maxLinks
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
      state.withLock {
        $0.closedByDefault = !host.addressIsPrivate
        $0.windowUntil = nil
        $0.askingUntil = nil
        $0.windows = 0
      }
      let beacon = await sealedBeacon()
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
          if state.withLock({ $0.heard[address] != nil }) { await applySchedule() }
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
          state.withLock {
            _ = $0.busy.insert(address)
            $0.awaitingChannel[address] = nil
          }
          group.addTask {
            await self.respond(on: channel, with: address, host: host)
            continuation.yield(.sessionEnded(address: address))
          }
        case .connected(let peer):
          // A peer connected to us: it will open a channel; don't connect
          // back. If it never does (its Connection Complete was lost, or it
          // died), the connection is dropped after `channelWait`.
          let address = peer.description
          let token = state.withLock { s -> UInt64 in
            s.busy.insert(address)
            s.nextToken &+= 1
            s.awaitingChannel[address] = s.nextToken
            return s.nextToken
          }
          group.addTask {
            try? await Timers.shared.sleep(for: Self.channelWait)
            continuation.yield(.noChannel(peer, token: token))
          }
        case .noChannel(let peer, let token):
          let address = peer.description
          let expired = state.withLock { s -> Bool in
            guard s.awaitingChannel[address] == token else { return false }
            s.awaitingChannel[address] = nil
            s.busy.remove(address)
            return true
          }
          if expired {
            log.warning(
              "\(address) connected but opened no channel within \(Self.channelWait);"
                + " disconnecting")
            group.addTask { await host.disconnect(peer: peer) }
          }
        case .sessionEnded(let address):
          state.withLock { _ = $0.busy.remove(address) }
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
            let beacon = await sealedBeacon().data
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
    let linkedDevices = Set(s.links.values.compactMap(\.device))
    let unlinked = s.heard.contains { address, peer in
      guard peer.lastSeen >= cutoff, s.links[address] == nil else { return false }
      guard let device = s.devices[address] else { return true }
      return !linkedDevices.contains(device)
    }
    // The oldest link up: both its ends take turns scanning by it.
    let oldest = s.links.values.filter { $0.link != nil && $0.since != nil }
      .min { $0.since! < $1.since! }
    let anchor = oldest.map { ScanSchedule.Anchor(since: $0.since!, initiator: $0.link!.initiator) }
    return ScanSchedule.Situation(
      linksUp: s.links.values.filter { $0.link != nil }.count, unlinkedPeer: unlinked,
      audio: s.audio, passive: s.passive != nil, closed: s.closedByDefault, anchor: anchor)
  }

  private enum Action {
    case none
    /// Connect and make a link.
    case link
    /// Connect for one per-change session.
    case session
  }

  /// A keyed peer without a link was heard: if its beacon is closed, ask
  /// (our beacon's asking flag, for `askLength`); if it asks and we are
  /// closed, open a window for `windowLength`. Either changes our beacon.
  private func answerFlags(of content: BeaconContent, now: ContinuousClock.Instant) {
    enum Change { case none, ask(ContinuousClock.Instant), window(ContinuousClock.Instant, Int) }
    let change = state.withLock { s -> Change in
      if content.asking, s.closedByDefault, !(s.windowUntil.map { now < $0 } ?? false) {
        let until = now + Self.windowLength
        s.windowUntil = until
        s.windows += 1
        return .window(until, s.windows)
      }
      if content.closed {
        let wasAsking = s.askingUntil.map { now < $0 } ?? false
        // Extended while the peer is heard; the beacon changes only when
        // the asking starts (and when it ends).
        let until = now + Self.askLength
        s.askingUntil = until
        return wasAsking ? .none : .ask(until)
      }
      return .none
    }
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
          + "\(Self.windowLength.components.seconds) s (window \(count))")
      beaconChanged()
      beaconChanged(at: until)
    }
  }

  /// Records a keyed peer's beacon and decides what to do about it.
  private func decide(_ report: AdvertisingReport, on host: any RadioHost) async -> Action {
    guard let content = engine.openBeacon(report.data) else { return .none }
    let address = report.address.description
    let unknown = state.withLock { s -> Bool in
      s.heard[address] = Peer(lastSeen: Date(), rssi: report.rssi, beacon: report.data)
      // Closed beacons come from a fresh address at every seal: forget the
      // addresses not heard for a while.
      if s.heard.count > 256 {
        let cutoff = Date().addingTimeInterval(-Self.inRangeWindow)
        s.heard = s.heard.filter { $0.value.lastSeen >= cutoff }
      }
      return s.names[address] == nil && !s.unresolved.contains(address)
    }
    if unknown {
      // A peer we know under a new address (it rotated, or sent a closed
      // beacon from a fresh one): its name carries over.
      var peer = await engine.peer(resolving: report.address.bytes)
      if peer == nil { peer = await engine.peer(resolvingBeacon: report.data) }
      state.withLock {
        if let peer {
          $0.names[address] = peer.name
          $0.devices[address] = peer.device
        } else {
          _ = $0.unresolved.insert(address)
        }
        if $0.unresolved.count > 1024 { $0.unresolved.removeAll() }
        if $0.devices.count > 1024 { $0.devices.removeAll() }
        if $0.waiting.count > 1024 { $0.waiting.removeAll() }
      }
    }
    let now = ContinuousClock.now
    enum Seen {
      case linked(probe: HandoffLink?)
      case busy
      case free(device: DeviceID?, links: Int, since: ContinuousClock.Instant?, paused: Bool)
    }
    let seen = state.withLock { s -> Seen in
      let device = s.devices[address]
      if let (linkAddress, entry) = s.links.first(where: {
        $0.key == address || (device != nil && $0.value.device == device)
      }) {
        // The peer under another address: it rotated, or it restarted and
        // this link is half-open. A PING tells which.
        guard linkAddress != address, entry.probed != address, let link = entry.link else {
          return .linked(probe: nil)
        }
        s.links[linkAddress]?.probed = address
        return .linked(probe: link)
      }
      if s.busy.contains(address) { return .busy }
      var paused = false
      if let until = s.linkFailures[address]?.pausedUntil {
        if now < until { paused = true } else { s.linkFailures[address] = nil }
      }
      // At the limit, the peer gets per-change sessions (as if links were full).
      let links = s.links.count + Self.maxLinks - s.linkLimit
      return .free(device: device, links: links, since: s.waiting[address], paused: paused)
    }
    switch seen {
    case .linked(let probe):
      probe?.probe()
      return .none
    case .busy:
      return .none
    case .free(let device, let links, let since, let paused):
      // PROTOCOL.md 3.3: a closed peer cannot be connected to; ask it to
      // open. A peer that asks gets a window, if we are closed.
      if links < Self.maxLinks && !paused { answerFlags(of: content, now: now) }
      if content.closed { return .none }
      if links < Self.maxLinks && !paused && !host.connectsFromAnotherAddress {
        let ours =
          device.map { engine.deviceID.rawValue < $0.rawValue }
          ?? (host.address.description < address)
        let fallback = since.map { now - $0 >= Self.linkFallback } ?? false
        guard ours || fallback else {
          if since == nil { state.withLock { $0.waiting[address] = now } }
          return .none
        }
        // A beacon replayed from fresh addresses gets no more connections
        // for links than for sessions (PROTOCOL.md 3, "Replays").
        guard await engine.shouldLink(beacon: report.data, from: address) else { return .none }
        let claimed = state.withLock { s -> Bool in
          guard s.busy.insert(address).inserted else { return false }
          s.waiting[address] = nil
          s.links[address] = LinkEntry(device: device)
          return true
        }
        return claimed ? .link : .none
      }
      // Per-change sessions: beyond the link limit, for a peer that refuses
      // links, and on a backend whose connections peers cannot recognise.
      guard await engine.shouldConnect(beacon: report.data, from: address) else { return .none }
      let claimed = state.withLock { $0.busy.insert(address).inserted }
      return claimed ? .session : .none
    }
  }

  /// Connects to `peer` and runs a link with it until it ends.
  private func link(to peer: BluetoothAddress, type: AddressType, on host: any RadioHost) async {
    let address = peer.description
    // The placeholder made by `decide`, unless a link took its place.
    defer { state.withLock { s in if s.links[address]?.link == nil { s.links[address] = nil } } }
    // Connected already (it connected to us meanwhile): its link will do.
    // Connecting again to a peer we are linked with can wedge a controller.
    if host.isConnected(to: peer) { return }
    let channel: any PeerChannel
    do {
      channel = try await host.openChannel(
        to: peer, addressType: type, psm: HandoffAgent.psm, timeout: Self.connectTimeout)
      state.withLock { $0.stuckAttempts = 0 }
    } catch {
      log.info("cannot link with \(address): \(error)")
      linkFailed(address)
      noteConnectFailure(error, host: host)
      noteNoRoom(error, host: host)
      return
    }
    let guarded = DeadlineChannel(channel, deadline: Self.sessionDeadline)
    do {
      let link = try await engine.openLink(
        over: guarded, peerAddress: address,
        authenticated: { name, device in self.learnt(name, device, at: address) })
      state.withLock { _ = $0.linkFailures.removeValue(forKey: address) }
      await run(link, at: address)
    } catch {
      log.info("cannot link with \(address): \(error)")
      linkFailed(address)
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
      if case .link(let link) = outcome {
        await run(link, at: address)
        // A dead peer's controller may hold the connection: drop it.
        // (Not if another link took its place on the same connection address.)
        let replacedHere = state.withLock { $0.links[address]?.link != nil }
        if link.isDead && !replacedHere { await host.disconnect(peer: channel.peerAddress) }
      }
    } catch {
      log.info("session with \(address) ended early: \(error)")
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

  /// Runs a link, unless one with the same peer is up already: then the
  /// one the rule would have made is kept (initiated by the lower device
  /// id); of two made the same way, the newer (the peer restarted).
  private func run(_ link: HandoffLink, at address: String) async {
    let ruleSaysWeConnect = engine.deviceID.rawValue < link.peerDevice.rawValue
    let (keep, losers) = state.withLock { s -> (Bool, [HandoffLink]) in
      var losers: [HandoffLink] = []
      for (other, entry) in s.links where other == address || entry.device == link.peerDevice {
        guard let old = entry.link, old !== link else { continue }
        if old.initiator == link.initiator || link.initiator == ruleSaysWeConnect {
          losers.append(old)
        } else {
          // The new link is turned away, but it says the peer is there
          // anew: if the old one is half-open (the peer restarted and its
          // controller kept the connection), a PING finds out within the
          // silence limit, and the peer's next attempt is kept.
          return (false, [old])
        }
      }
      var entry = s.links[address] ?? LinkEntry()
      entry.link = link
      entry.since = ContinuousClock.now
      entry.device = link.peerDevice
      entry.name = link.peerName
      s.links[address] = entry
      s.waiting[address] = nil
      // The closed beacons this peer sent before we knew it, each from a
      // fresh address (PROTOCOL.md 3.3), are its: they no longer count as
      // a peer without a link, and nobody needs our window any more.
      for (heardAddress, peer) in s.heard where s.devices[heardAddress] == nil {
        if engine.beacon(peer.beacon, isFrom: link.peerDevice) {
          s.devices[heardAddress] = link.peerDevice
          s.names[heardAddress] = link.peerName
          s.unresolved.remove(heardAddress)
        }
      }
      let windowOpen = s.windowUntil != nil
      s.windowUntil = nil
      if windowOpen { s.events?.yield(.beaconChanged) }
      s.events?.yield(.linkUp)
      return (true, losers)
    }
    guard keep else {
      // (`losers` here: the link kept, to be checked.)
      for old in losers { old.probe() }
      await link.close("a link with \(link.peerName) is up already")
      return
    }
    for old in losers {
      await old.close("a newer link with \(link.peerName) replaced it", peerGone: true)
    }
    await engine.runLink(link)
    state.withLock { s in
      if s.links[address]?.link === link { s.links[address] = nil }
      s.events?.yield(.burst)
    }
  }

  /// The handshake proved who is at `address`.
  private func learnt(_ name: String, _ device: DeviceID, at address: String) {
    state.withLock {
      $0.names[address] = name
      $0.devices[address] = device
      if $0.links[address] != nil {
        $0.links[address]?.name = name
        $0.links[address]?.device = device
      }
      $0.unresolved.removeAll()
    }
  }

  /// A link attempt failed: after `linkAttempts` in a row, the peer gets
  /// per-change sessions for `linkRetryPause`.
  private func linkFailed(_ address: String) {
    state.withLock { s in
      let count = (s.linkFailures[address]?.count ?? 0) + 1
      s.linkFailures[address] = (
        count, count >= Self.linkAttempts ? ContinuousClock.now + Self.linkRetryPause : nil
      )
      if s.linkFailures.count > 1024 { s.linkFailures.removeAll() }
    }
  }

  /// A controller that refuses a connection for lack of room (Memory
  /// Capacity Exceeded, Connection Limit Exceeded) holds no more links than
  /// it has now (at least one); further peers get per-change sessions.
  private func noteNoRoom(_ error: any Error, host: any RadioHost) {
    guard host.failure(of: error) == .noRoom else { return }
    state.withLock { s in
      let up = s.links.values.filter { $0.link != nil }.count
      s.linkLimit = max(1, min(s.linkLimit, up))
      log.notice("the controller has no room for another connection: links kept at \(s.linkLimit)")
    }
  }

  /// A controller that keeps refusing connections because it still holds an
  /// abandoned attempt (it did not carry out the cancel) is reopened.
  private func noteConnectFailure(_ error: any Error, host: any RadioHost) {
    guard host.failure(of: error) == .attemptStuck else { return }
    let reopen = state.withLock { s -> Bool in
      s.stuckAttempts += 1
      return s.stuckAttempts >= Self.stuckAttemptsBeforeReopen
    }
    if reopen {
      state.withLock { s in
        s.stuckAttempts = 0
        s.events?.yield(
          .reopen(
            reason: "it refused \(Self.stuckAttemptsBeforeReopen) connection attempts in a row"
              + " for an abandoned one it did not cancel"))
      }
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
      let beacon = state.withLock { $0.heard[address]?.beacon }
      guard let beacon, await engine.indexDiffers(beacon: beacon) else { return }
    }
    // Connected already (it connected to us meanwhile): its session will do.
    // Connecting again to a peer we are linked with can wedge a controller.
    if host.isConnected(to: peer) { return }
    do {
      let channel = try await host.openChannel(
        to: peer, addressType: type, psm: HandoffAgent.psm, timeout: Self.connectTimeout)
      state.withLock { $0.stuckAttempts = 0 }
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
      let beacon = await sealedBeacon()
      try await host.updateAdvertisingData(beacon.data, connectable: beacon.connectable)
    } catch {
      log.warning("cannot update the advertised beacon: \(error)")
    }
  }
}
