import BatonHCI
import Dispatch
import Testing

@testable import BatonAgent
@testable import BatonHandoff
@testable import BatonRadio

/// The radio's driver over a `FakeRadioHost` and real engines: which beacons
/// heard make it connect. Connections fail at once (the fake has no peer),
/// so what is observed is the attempts.
///
/// To show an attempt was not made, each test ends with a beacon that is
/// connected to, waits for that attempt, and stops the radio: reports are
/// decided in order, and stopping waits for every attempt under way.
@Suite struct AgentRadioTests {
  static let key = GroupKey(bytes: Array(repeating: 9, count: 32))!
  static let configuration = AgentConfiguration(
    name: "bob", controller: .exclusive(.tcp(host: "127.0.0.1", port: 9)), keyFile: "/k",
    stateDirectory: "/s", folders: [FolderConfiguration(name: "notes", path: "/n")])

  /// The radio of an agent with `engine`, on hosts `hosts` opens.
  final class Running: Sendable {
    /// Every host opened, the current one last.
    let hosts = LockedBox<[FakeRadioHost]>([])
    let task: Task<Void, any Error>

    init(engine: HandoffEngine) {
      let hosts = self.hosts
      let radio = AgentRadio(
        configuration: AgentRadioTests.configuration, engine: engine,
        openHost: {
          let host = FakeRadioHost()
          hosts.mutex.withLock { $0.append(host) }
          return host
        })
      task = Task { try await radio.run() }
    }

    var host: FakeRadioHost? { hosts.mutex.withLock { $0.last } }

    /// The current host, once it scans (reports before are not heard).
    func scanningHost() async -> FakeRadioHost? {
      guard
        await eventually(20, "the radio scans", { self.host?.isScanning ?? false })
      else { return nil }
      return host
    }

    func stop() async {
      task.cancel()
      _ = try? await task.value
    }
  }

  /// A keyed peer's beacon heard from `address`.
  func report(_ beacon: [UInt8], from address: String) -> AdvertisingReport {
    AdvertisingReport(
      address: BluetoothAddress(address)!, addressType: .random, data: beacon, rssi: -50,
      eventType: 0, extended: false)
  }

  /// A peer of the group with a note saved: its beacon.
  func peerBeacon(_ name: String) async throws -> [UInt8] {
    let peer = try HandoffTestAgent(name, key: Self.key)
    await peer.save("\(name).md", name)
    return await peer.engine.currentBeacon()
  }

  @Test func aBeaconReplayedFromAFreshAddressGetsNoSecondLinkAttempt() async throws {
    let bob = try HandoffTestAgent("bob", key: Self.key)
    let alice = try await peerBeacon("alice")
    let carol = try await peerBeacon("carol")
    let radio = Running(engine: bob.engine)
    let host = try #require(await radio.scanningHost())
    // Our address (50:…) is the lower, and the peers are unknown: we connect.
    host.hear(report(alice, from: "60:00:00:00:00:01"))
    host.hear(report(alice, from: "60:00:00:00:00:02"))
    host.hear(report(carol, from: "60:00:00:00:00:03"))
    #expect(
      await eventually(20, "carol's beacon is connected to") {
        host.attempts.map(\.description).contains("60:00:00:00:00:03")
      })
    await radio.stop()
    #expect(
      Set(host.attempts.map(\.description)) == ["60:00:00:00:00:01", "60:00:00:00:00:03"])
  }

  /// (Alice's fallback ends 2.5 s after she is heard; the radio stops well
  /// before, right after carol's attempt.)
  @Test func theSideWithTheHigherAddressWaitsForThePeer() async throws {
    let bob = try HandoffTestAgent("bob", key: Self.key)
    let alice = try await peerBeacon("alice")
    let carol = try await peerBeacon("carol")
    let radio = Running(engine: bob.engine)
    let host = try #require(await radio.scanningHost())
    host.hear(report(alice, from: "40:00:00:00:00:01"))
    host.hear(report(carol, from: "60:00:00:00:00:03"))
    #expect(
      await eventually(20, "carol's beacon is connected to") {
        host.attempts.map(\.description).contains("60:00:00:00:00:03")
      })
    await radio.stop()
    #expect(host.attempts.map(\.description) == ["60:00:00:00:00:03"])
  }

  /// A beacon heard once (a host reports an unchanged one once a scan) is
  /// still connected to when the link fallback ends: the radio decides on
  /// it again then, without a second report.
  @Test func aPeerHeardOnceIsConnectedToWhenTheFallbackEnds() async throws {
    let bob = try HandoffTestAgent("bob", key: Self.key)
    let alice = try await peerBeacon("alice")
    let radio = Running(engine: bob.engine)
    let host = try #require(await radio.scanningHost())
    // Alice's address (40:…) is the lower: her turn, for the fallback.
    host.hear(report(alice, from: "40:00:00:00:00:01"))
    #expect(
      await eventually(20, "alice's beacon is connected to") {
        host.attempts.map(\.description) == ["40:00:00:00:00:01"]
      })
    await radio.stop()
  }

  /// Issue 27: a beacon from an address heard before is decided without
  /// the engine's thread (the bounds live on the radio's side and the
  /// engine publishes its digest), so a long fsync there delays no decision.
  @Test func aBeaconIsDecidedWhileTheEnginesThreadIsBusy() async throws {
    var policy = HandoffPolicy()
    policy.firstRetryDelays = [.zero, .zero]
    let bob = try HandoffTestAgent("bob", key: Self.key, policy: policy)
    let alice = try await peerBeacon("alice")
    let radio = Running(engine: bob.engine)
    let host = try #require(await radio.scanningHost())
    let address = "60:00:00:00:00:01"
    // Heard first while the engine is free: it resolves the new address.
    // The failed attempt ends with a re-seal (which asks the engine) that
    // must be done before the engine's thread is blocked.
    let sealed = host.advertised.count
    host.hear(report(alice, from: address))
    #expect(
      await eventually(20, "a first link attempt, and the re-seal after it") {
        host.attempts.count == 1 && host.advertised.count > sealed
      })
    // The engine's thread blocks (as in a long fsync) until released.
    let release = DispatchSemaphore(value: 0)
    let blocked = LockedBox(false)
    let busy = Task {
      await bob.engine.executor.run {
        blocked.mutex.withLock { $0 = true }
        release.wait()
      }
    }
    #expect(await eventually(20, "the engine's thread is busy") { blocked.mutex.withLock { $0 } })
    host.hear(report(alice, from: address))
    let decided = await eventually(20, "a second attempt while the engine is busy") {
      host.attempts.count == 2
    }
    release.signal()
    await busy.value
    #expect(decided)
    await radio.stop()
  }

  /// Issue 27: the engine publishes each change of the beacon's content,
  /// and the radio re-seals on it, whatever made the change: here a note
  /// that came in a session, with nobody telling the radio.
  @Test func theBeaconFollowsTheEngineWithNobodyPokingTheRadio() async throws {
    let bob = try HandoffTestAgent("bob", key: Self.key)
    let alice = try HandoffTestAgent("alice", key: Self.key)
    await alice.save("a.md", "from alice")
    let radio = Running(engine: bob.engine)
    let host = try #require(await radio.scanningHost())
    let before = host.advertised.count
    #expect(await runSession(alice, bob).0.succeeded)
    let digest = bob.engine.currentIndexDigest
    #expect(digest == alice.engine.currentIndexDigest)
    #expect(
      await eventually(20, "the beacon shows the index with alice's note") {
        host.advertised.count > before
          && bob.engine.openBeacon(host.advertised.last!.data)?.indexDigest == digest
      })
    await radio.stop()
  }

  @Test func aControllerThatKeepsAnAbandonedAttemptIsReopened() async throws {
    let bob = try HandoffTestAgent("bob", key: Self.key)
    let radio = Running(engine: bob.engine)
    let host = try #require(await radio.scanningHost())
    host.connectFailure = .attemptStuck
    for n in 1...PeerScheduler<HandoffLink>.stuckAttemptsBeforeReopen {
      host.hear(report(try await peerBeacon("peer\(n)"), from: "60:00:00:00:00:0\(n)"))
    }
    #expect(
      await eventually(20, "the controller is reopened") {
        radio.hosts.mutex.withLock { $0.count } == 2
      })
    #expect(host.isClosed)
    #expect(host.attempts.count == PeerScheduler<HandoffLink>.stuckAttemptsBeforeReopen)
    await radio.stop()
  }
}
