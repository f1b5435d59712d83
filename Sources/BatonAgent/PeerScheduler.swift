import BatonHandoff
import BatonRadio
import FoundationEssentials

/// Which keyed peers the agent connects to, and how: a synchronous state
/// machine that `AgentRadio` drives with what it hears (a peer's beacon, who
/// its address resolves to), what becomes of its connections (claimed, up,
/// failed, refused for lack of room, ended) and the time, and that answers
/// what to do about each beacon. It does no I/O and keeps no clock: every
/// instant is passed in. `Link` is the driver's link type (`HandoffLink`),
/// held only to be handed back (to probe or close it).
///
/// The rules (PROTOCOL.md 6.2): one link with every keyed peer in range, up
/// to `maxLinks` (fewer once the controller refused a connection for lack of
/// room). Of the two, the one whose device id is lower (the lower address
/// while either is unknown) connects; the other accepts, and connects itself
/// only if no link has come `linkFallback` after it first heard the peer, or
/// at once while its own beacon is closed (the peer cannot connect to it).
/// Peers beyond the limit, a peer whose link attempts failed `linkAttempts`
/// times in a row (for `linkRetryPause`), and every peer of a host that
/// connects from another address than it advertises, get the per-change
/// sessions of PROTOCOL.md 6 instead. Of two links with one peer, the one the
/// rule would have made is kept; of two made the same way, the newer. A
/// closed beacon (PROTOCOL.md 3.3) is never connected to: we ask its sender
/// to open, and a peer that asks gets a window while we are closed.
///
/// The bounds on connections (an index that differs, a failed attempt
/// retried after 2, 5 and 10 s, and a beacon replayed from fresh addresses
/// getting one connection per `retryInterval`: PROTOCOL.md 3, "Replays") are
/// `ConnectionMemory`'s, which the driver keeps beside this and asks between
/// a `.link` or `.session` decision and `claimLink` or `claimSession`, with
/// `isKnown(_:)` for an address that resolves to a peer.
struct PeerScheduler<Link: AnyObject> {
  /// How long a peer counts as in range after its last beacon.
  static var inRangeWindow: TimeInterval { 60 }
  /// How many links are kept at once (baton(1)); most controllers hold 4 to
  /// 8 connections, and one must stay free for per-change sessions.
  static var maxLinks: Int { 4 }
  /// How long the side that only accepts waits for the peer's link before
  /// connecting itself (the peer may be at its limit, not know us yet, or
  /// not be scanning: a linked agent scans only in windows). A peer that
  /// is scanning hears our beacon well within it (every 200 ms, or 1.28 s
  /// from bluetoothd) and connects first. Not while our beacon is closed:
  /// then nobody can connect to us, and we connect at once.
  static var linkFallback: Duration { .milliseconds(2500) }
  /// Link attempts that fail in a row before the peer gets per-change
  /// sessions instead, for `linkRetryPause`.
  static var linkAttempts: Int { 3 }
  static var linkRetryPause: Duration { .seconds(60) }
  /// Connection attempts the controller refuses because it still holds an
  /// abandoned one (it did not carry out the cancel) before it is reopened.
  static var stuckAttemptsBeforeReopen: Int { 3 }
  /// How long a window stays open: the asker, closed, connects as soon as
  /// it hears it, and bluetoothd sends our beacon every 1.28 s.
  static var windowLength: Duration { .seconds(15) }
  /// How long we ask after we last heard a closed peer we want a link with.
  static var askLength: Duration { .seconds(20) }

  /// What to do about a keyed peer's beacon.
  enum Decision {
    /// Nothing (linked, busy, closed, or nothing to say).
    case ignore
    /// The peer is linked under another address (it rotated, or it
    /// restarted and this link is half-open): PING the link to tell which.
    case probe(Link)
    /// The peer connects to us: nothing until `until` (the link fallback),
    /// when a beacon heard may make us connect.
    case wait(until: ContinuousClock.Instant)
    /// Connect for a link, if the bounds allow (`ConnectionMemory.mayLink`);
    /// then `claimLink(_:device:)`.
    case link(device: DeviceID?)
    /// Connect for one per-change session, if the bounds allow
    /// (`ConnectionMemory.mayConnect`); then `claimSession(_:)`.
    case session
  }

  /// How our beacon's flags change on a beacon heard (PROTOCOL.md 3.3).
  enum FlagChange: Equatable {
    case none
    /// A closed peer: our beacon asks it to open, until then.
    case ask(until: ContinuousClock.Instant)
    /// A peer asks and we are closed: connectable until then (the `count`th
    /// window since the controller was opened).
    case window(until: ContinuousClock.Instant, count: Int)
  }

  /// What became of a link that came up (its handshake done).
  enum LinkUp {
    /// Kept; `losers`, older links with the same peer, are to be closed.
    /// `windowClosed`: the window we had opened is shut (re-seal the beacon).
    case kept(losers: [Link], windowClosed: Bool)
    /// A link with this peer is up already and the rule keeps it (`kept`,
    /// to be probed: it may be half-open); this one is to be closed.
    case turnedAway(kept: [Link])
  }

  /// A link, from the moment we decide to make it (or a peer opens one).
  struct LinkEntry {
    var device: DeviceID?
    var name: String?
    /// nil while connecting and during the handshake.
    var link: Link?
    /// Whether we made the link (nil while it is not up).
    var initiator = false
    /// When the link came up (its handshake done): the scan schedule's turns.
    var since: ContinuousClock.Instant?
    /// The last other address of this peer we probed the link for.
    var probed: String?
  }

  /// A keyed peer's latest beacon.
  struct Heard {
    var lastSeen: Date
    var rssi: Int
    var beacon: [UInt8]
  }

  /// Our device id: the tie-break's and the link rule's side.
  let device: DeviceID

  /// Keyed peers heard, by address.
  private(set) var heard: [String: Heard] = [:]
  /// Peer names learnt in sessions, or by resolving a peer's new address
  /// (PROTOCOL.md, "Addresses"), by address.
  private(set) var names: [String: String] = [:]
  /// Addresses heard that resolve to no peer we know (cleared when a session
  /// teaches us a new peer).
  private var unresolved: Set<String> = []
  /// Addresses that resolve to a peer we have had a session with (by the
  /// address itself, not its beacon), or where a handshake proved one: a
  /// beacon replayed elsewhere never keeps them waiting.
  private var knownAddresses: Set<String> = []
  /// Addresses with a session or link under way (either direction).
  private(set) var busy: Set<String> = []
  /// Links, by the address of their connection.
  private(set) var links: [String: LinkEntry] = [:]
  /// Device ids of heard addresses, resolved (PROTOCOL.md 3.1).
  private(set) var devices: [String: DeviceID] = [:]
  /// Peers heard with no link, when we accept rather than connect: since when.
  private var waiting: [String: ContinuousClock.Instant] = [:]
  /// Failed link attempts in a row, and until when the peer gets sessions.
  private var linkFailures: [String: (count: Int, pausedUntil: ContinuousClock.Instant?)] = [:]
  /// Incoming connections still without a channel: their token.
  private var awaitingChannel: [String: UInt64] = [:]
  private var nextToken: UInt64 = 0
  /// Connection attempts refused in a row for an abandoned one.
  private var stuckAttempts = 0
  /// Links this controller holds: `maxLinks`, or fewer once it refused a
  /// connection for lack of room.
  private(set) var linkLimit = Self.maxLinks
  /// The beacon goes out closed (not connectable) unless a window is open:
  /// the host's address is not private (PROTOCOL.md 3.3).
  private(set) var closedByDefault = false
  /// A window a peer asked for: connectable until then.
  private var windowUntil: ContinuousClock.Instant?
  /// Windows opened since the controller was opened, for the log.
  private var windows = 0
  /// We heard a closed keyed peer without a link: our beacon asks it to
  /// open, until then.
  private var askingUntil: ContinuousClock.Instant?

  init(device: DeviceID) {
    self.device = device
  }

  // MARK: The controller

  /// A controller was (re)opened: no connection, link or window survives;
  /// what we heard and learnt of peers, and their link failures, do.
  mutating func controllerOpened(addressIsPrivate: Bool) {
    busy = []
    links = [:]
    waiting = [:]
    awaitingChannel = [:]
    stuckAttempts = 0
    linkLimit = Self.maxLinks
    closedByDefault = !addressIsPrivate
    windowUntil = nil
    askingUntil = nil
    windows = 0
  }

  /// Whether our beacon is closed at `now`, and whether it asks.
  func beaconFlags(now: ContinuousClock.Instant) -> (closed: Bool, asking: Bool) {
    let window = windowUntil.map { now < $0 } ?? false
    let asking = askingUntil.map { now < $0 } ?? false
    return (closedByDefault && !window, asking)
  }

  // MARK: Beacons heard

  /// Records a keyed peer's beacon heard from `address` at `date`; true when
  /// the address is new to us (neither named nor known to resolve to
  /// nobody): the driver resolves it and tells `resolved(_:as:)`.
  mutating func hear(_ address: String, rssi: Int, beacon: [UInt8], at date: Date) -> Bool {
    heard[address] = Heard(lastSeen: date, rssi: rssi, beacon: beacon)
    // Closed beacons come from a fresh address at every seal: forget the
    // addresses not heard for a while.
    if heard.count > 256 {
      let cutoff = date.addingTimeInterval(-Self.inRangeWindow)
      heard = heard.filter { $0.value.lastSeen >= cutoff }
    }
    return names[address] == nil && !unresolved.contains(address)
  }

  /// Who `address` resolved to: a peer we know under a new address (it
  /// rotated, or sent a closed beacon from a fresh one), whose name carries
  /// over; or nobody (nil). `byAddress`: the address itself resolves to it
  /// (PROTOCOL.md 3.1), not only the beacon heard from it.
  mutating func resolved(
    _ address: String, as peer: (name: String, device: DeviceID)?, byAddress: Bool
  ) {
    if let peer {
      names[address] = peer.name
      devices[address] = peer.device
      if byAddress { know(address) }
    } else {
      unresolved.insert(address)
    }
    if unresolved.count > 1024 { unresolved.removeAll() }
    if devices.count > 1024 { devices.removeAll() }
    if waiting.count > 1024 { waiting.removeAll() }
  }

  /// What to do about the beacon `content` heard from `address` at `now`, and
  /// how our beacon's flags change. `ourAddress`: the address we advertise
  /// (the tie-break while the peer's device is unknown);
  /// `connectsFromAnotherAddress`: the host's (then peers cannot recognise
  /// our connections, and every peer gets sessions).
  mutating func consider(
    _ address: String, content: BeaconContent, ourAddress: String,
    connectsFromAnotherAddress: Bool, now: ContinuousClock.Instant
  ) -> (decision: Decision, flags: FlagChange) {
    let device = devices[address]
    if let (linkAddress, entry) = links.first(where: {
      $0.key == address || (device != nil && $0.value.device == device)
    }) {
      // The peer under another address: it rotated, or it restarted and
      // this link is half-open. A PING tells which. But a closed beacon
      // (PROTOCOL.md 3.3) comes from a fresh address whenever the peer's
      // system sets its advertising up again (on BlueZ, around the scans
      // of its own windows), so its address says nothing of a restart:
      // a peer that restarted and lacks its link with us asks us to open
      // (its beacon's flag) when we are closed, or connects when we are
      // open. Only then is a closed beacon worth a PING.
      guard linkAddress != address, entry.probed != address, let link = entry.link else {
        return (.ignore, .none)
      }
      if content.closed && !content.asking { return (.ignore, .none) }
      links[linkAddress]?.probed = address
      return (.probe(link), .none)
    }
    if busy.contains(address) { return (.ignore, .none) }
    var paused = false
    if let until = linkFailures[address]?.pausedUntil {
      if now < until { paused = true } else { linkFailures[address] = nil }
    }
    // At the limit, the peer gets per-change sessions (as if links were full).
    let linksNow = links.count + Self.maxLinks - linkLimit
    let linkable = linksNow < Self.maxLinks && !paused
    // PROTOCOL.md 3.3: a closed peer cannot be connected to; ask it to
    // open. A peer that asks gets a window, if we are closed.
    let flags = linkable ? answerFlags(of: content, now: now) : .none
    if content.closed { return (.ignore, flags) }
    if linkable && !connectsFromAnotherAddress {
      let ours = device.map { self.device.rawValue < $0.rawValue } ?? (ourAddress < address)
      let since = waiting[address]
      let fallback = since.map { now - $0 >= Self.linkFallback } ?? false
      // While our beacon is closed the peer cannot connect to us: its turn
      // would only cost the fallback, so we take it.
      let closed = beaconFlags(now: now).closed
      guard ours || fallback || closed else {
        if since == nil { waiting[address] = now }
        return (.wait(until: (since ?? now) + Self.linkFallback), flags)
      }
      return (.link(device: device), flags)
    }
    // Per-change sessions: beyond the link limit, for a peer that refuses
    // links, and on a backend whose connections peers cannot recognise.
    return (.session, flags)
  }

  /// A keyed peer without a link was heard: if its beacon is closed, ask
  /// (our beacon's asking flag, for `askLength`); if it asks and we are
  /// closed, open a window for `windowLength`. Either changes our beacon.
  private mutating func answerFlags(of content: BeaconContent, now: ContinuousClock.Instant)
    -> FlagChange
  {
    if content.asking, closedByDefault, !(windowUntil.map { now < $0 } ?? false) {
      let until = now + Self.windowLength
      windowUntil = until
      windows += 1
      return .window(until: until, count: windows)
    }
    if content.closed {
      let wasAsking = askingUntil.map { now < $0 } ?? false
      // Extended while the peer is heard; the beacon changes only when
      // the asking starts (and when it ends).
      let until = now + Self.askLength
      askingUntil = until
      return wasAsking ? .none : .ask(until: until)
    }
    return .none
  }

  /// Whether `address` resolves to a peer we have had a session with, or
  /// a handshake there proved one (`ConnectionMemory`'s replay bound).
  func isKnown(_ address: String) -> Bool { knownAddresses.contains(address) }

  private mutating func know(_ address: String) {
    if knownAddresses.count > 1024 { knownAddresses.removeAll() }
    knownAddresses.insert(address)
  }

  /// After a `.link` decision the bounds allowed: takes `address` for the
  /// link (a placeholder until it is up); false when a session or link with
  /// it got under way meanwhile.
  mutating func claimLink(_ address: String, device: DeviceID?) -> Bool {
    guard busy.insert(address).inserted else { return false }
    waiting[address] = nil
    links[address] = LinkEntry(device: device)
    return true
  }

  /// After a `.session` decision the bounds allowed: takes `address` for
  /// the session; false when one is under way already.
  mutating func claimSession(_ address: String) -> Bool {
    busy.insert(address).inserted
  }

  /// The beacon last heard from `address`.
  func beacon(heardFrom address: String) -> [UInt8]? { heard[address]?.beacon }

  // MARK: Connections

  /// A connection we made is up: the controller is not stuck.
  mutating func connected() {
    stuckAttempts = 0
  }

  /// The controller refused a connection for an abandoned attempt it did
  /// not cancel; true when that happened `stuckAttemptsBeforeReopen` times
  /// in a row: reopen it (the count starts again).
  mutating func attemptStuck() -> Bool {
    stuckAttempts += 1
    guard stuckAttempts >= Self.stuckAttemptsBeforeReopen else { return false }
    stuckAttempts = 0
    return true
  }

  /// The controller refused a connection for lack of room (Memory Capacity
  /// Exceeded, Connection Limit Exceeded): it holds no more links than it
  /// has up now (at least one); further peers get per-change sessions.
  /// Returns the new limit.
  mutating func noRoom() -> Int {
    linkLimit = max(1, min(linkLimit, linksUp))
    return linkLimit
  }

  /// A link attempt with `address` failed (to connect, or its handshake):
  /// after `linkAttempts` in a row, the peer gets per-change sessions for
  /// `linkRetryPause`.
  mutating func linkFailed(_ address: String, now: ContinuousClock.Instant) {
    let count = (linkFailures[address]?.count ?? 0) + 1
    linkFailures[address] = (count, count >= Self.linkAttempts ? now + Self.linkRetryPause : nil)
    if linkFailures.count > 1024 { linkFailures.removeAll() }
  }

  /// A link's handshake with `address` succeeded: its failures are forgotten.
  mutating func linkOpened(_ address: String) {
    linkFailures[address] = nil
  }

  /// Our link attempt with `address` ended: its placeholder goes, unless a
  /// link took its place.
  mutating func linkAttemptEnded(_ address: String) {
    if links[address]?.link == nil { links[address] = nil }
  }

  /// A peer connected to us at `address`: it will open a channel; we don't
  /// connect back. The token identifies this wait (`channelWaitEnded`).
  mutating func peerConnected(_ address: String) -> UInt64 {
    busy.insert(address)
    nextToken &+= 1
    awaitingChannel[address] = nextToken
    return nextToken
  }

  /// A peer at `address` opened a channel: a session or link with it is
  /// under way.
  mutating func channelOpened(_ address: String) {
    busy.insert(address)
    awaitingChannel[address] = nil
  }

  /// The wait `token` for a channel from `address` ended: true when none
  /// came (the connection is to be dropped; the address is free again).
  mutating func channelWaitEnded(_ address: String, token: UInt64) -> Bool {
    guard awaitingChannel[address] == token else { return false }
    awaitingChannel[address] = nil
    busy.remove(address)
    return true
  }

  /// A session or link with `address` ended (either direction).
  mutating func sessionEnded(_ address: String) {
    busy.remove(address)
  }

  // MARK: Links

  /// A handshake proved who is at `address`: `name`, and `device` when it
  /// was a link's or the responder's (nil: a session we started).
  mutating func learnt(_ name: String, device: DeviceID?, at address: String) {
    names[address] = name
    know(address)
    if let device {
      devices[address] = device
      if links[address] != nil {
        links[address]?.name = name
        links[address]?.device = device
      }
    }
    unresolved.removeAll()
  }

  /// A link with `peer` came up at `address` at `now`, made by us or not
  /// (`initiator`). If one with the same peer is up already, the one the
  /// rule would have made is kept (initiated by the lower device id); of
  /// two made the same way, the newer (the peer restarted). `isFrom` tells
  /// whether a beacon was sealed by the peer: the closed beacons heard
  /// before we knew it become its.
  mutating func linkUp(
    _ link: Link, at address: String, peer: DeviceID, name: String, initiator: Bool,
    now: ContinuousClock.Instant, isFrom: ([UInt8]) -> Bool
  ) -> LinkUp {
    let ruleSaysWeConnect = device.rawValue < peer.rawValue
    var losers: [Link] = []
    for (other, entry) in links where other == address || entry.device == peer {
      guard let old = entry.link, old !== link else { continue }
      if entry.initiator == initiator || initiator == ruleSaysWeConnect {
        losers.append(old)
      } else {
        // The new link is turned away, but it says the peer is there
        // anew: if the old one is half-open (the peer restarted and its
        // controller kept the connection), a PING finds out within the
        // silence limit, and the peer's next attempt is kept.
        return .turnedAway(kept: [old])
      }
    }
    var entry = links[address] ?? LinkEntry()
    entry.link = link
    entry.initiator = initiator
    entry.since = now
    entry.device = peer
    entry.name = name
    links[address] = entry
    waiting[address] = nil
    // The closed beacons this peer sent before we knew it, each from a
    // fresh address (PROTOCOL.md 3.3), are its: they no longer count as
    // a peer without a link, and nobody needs our window any more.
    for (heardAddress, heardPeer) in heard where devices[heardAddress] == nil {
      if isFrom(heardPeer.beacon) {
        devices[heardAddress] = peer
        names[heardAddress] = name
        unresolved.remove(heardAddress)
      }
    }
    let windowOpen = windowUntil != nil
    windowUntil = nil
    return .kept(losers: losers, windowClosed: windowOpen)
  }

  /// A link at `address` ended.
  mutating func linkEnded(_ link: Link, at address: String) {
    if links[address]?.link === link { links[address] = nil }
  }

  /// Whether a link is up at `address`.
  func hasLink(at address: String) -> Bool { links[address]?.link != nil }

  // MARK: What the scan schedule and `baton status` see

  /// Links up (handshake done).
  var linksUp: Int { links.values.filter { $0.link != nil }.count }

  /// Whether a keyed peer heard since `cutoff` has no link.
  func unlinkedPeer(heardSince cutoff: Date) -> Bool {
    let linkedDevices = Set(links.values.compactMap(\.device))
    return heard.contains { address, peer in
      guard peer.lastSeen >= cutoff, links[address] == nil else { return false }
      guard let device = devices[address] else { return true }
      return !linkedDevices.contains(device)
    }
  }

  /// The oldest link up: both its ends take turns scanning by it.
  var anchor: ScanSchedule.Anchor? {
    links.values.compactMap { entry in
      entry.link == nil ? nil : entry.since.map { ($0, entry.initiator) }
    }
    .min { $0.0 < $1.0 }
    .map { ScanSchedule.Anchor(since: $0.0, initiator: $0.1) }
  }

  /// Keyed peers heard since `cutoff`, and linked peers, most recent first,
  /// each with its link state (`now`: a linked peer's last seen when its
  /// beacon is not heard).
  func peers(heardSince cutoff: Date, now: Date) -> [AgentStatus.Peer] {
    func linkState(_ address: String) -> (String, LinkEntry)? {
      let device = devices[address]
      let entry =
        links[address].map { (address, $0) }
        ?? links.first { device != nil && $0.value.device == device }.map { ($0.key, $0.value) }
      return entry.map { ($0.1.link == nil ? "connecting" : "up", $0.1) }
    }
    var shown: Set<String> = []
    var peers: [AgentStatus.Peer] = heard.filter { $0.value.lastSeen >= cutoff }
      .map {
        let link = linkState($0.key)
        shown.insert($0.key)
        return AgentStatus.Peer(
          name: names[$0.key] ?? link?.1.name ?? "?", address: $0.key,
          lastSeen: $0.value.lastSeen, rssi: $0.value.rssi, link: link?.0)
      }
    // A linked peer whose beacon is not heard (or heard under another
    // address only) is still in range: show its link's address.
    for (address, entry) in links where entry.link != nil && !shown.contains(address) {
      let heardElsewhere = peers.contains {
        $0.link == "up" && devices[$0.address] != nil && devices[$0.address] == entry.device
      }
      if heardElsewhere { continue }
      peers.append(
        AgentStatus.Peer(
          name: entry.name ?? names[address] ?? "?", address: address,
          lastSeen: heard[address]?.lastSeen ?? now, rssi: heard[address]?.rssi,
          link: "up"))
    }
    // A closed beacon comes from a fresh address at every seal
    // (PROTOCOL.md 3.3): one row per device, its latest address.
    var seen: Set<DeviceID> = []
    return peers.sorted { $0.lastSeen > $1.lastSeen }.filter { peer in
      guard let device = devices[peer.address] else { return true }
      return seen.insert(device).inserted
    }
  }
}
