import BatonTestSupport
import Foundation
import Testing

@testable import BatonFuzz
@testable import BatonHandoff
@testable import BatonNotes
@testable import BatonHCI
@testable import BatonRadio
@testable import BatonStore
@testable import BatonSystem

/// A session between two engines over an in-memory channel pair.
func runEngines(
  _ initiator: HandoffEngine, _ responder: HandoffEngine, responderAddress: String = "addr-r"
) async -> (Result<SessionSummary, any Error>, Result<SessionSummary, any Error>) {
  let (a, b) = InMemoryMessageChannel.pair(maximumMessageSize: 512)
  async let first: Result<SessionSummary, any Error> = {
    do {
      return .success(
        try await initiator.runSession(over: a, initiator: true, peerAddress: responderAddress))
    } catch { return .failure(error) }
  }()
  async let second: Result<SessionSummary, any Error> = {
    do {
      return .success(try await responder.runSession(over: b, initiator: false, peerAddress: "addr-i"))
    } catch { return .failure(error) }
  }()
  return await (first, second)
}

/// An engine over a real notes folder in a fresh temporary directory.
struct DiskAgent {
  let base: URL
  let folder: NotesFolder
  let engine: HandoffEngine

  init(_ name: String, key: GroupKey, policy: HandoffPolicy = HandoffPolicy()) throws {
    base = try TestEnvironment.temporaryDirectory("disk-\(name)")
    let notes = base.appendingPathComponent("notes")
    try FileManager.default.createDirectory(at: notes, withIntermediateDirectories: true)
    folder = try NotesFolder(root: notes.path)
    _ = try folder.buildIndex()
    let store = try HandoffStore(
      directory: try TestEnvironment.temporaryDirectory("state-\(name)").path)
    engine = HandoffEngine(
      key: key, deviceName: name, store: store,
      folders: [HandoffFolder(activityType: HandoffTestAgent.notesType, folder: folder)],
      policy: policy)
  }

  func counter(_ name: String) async -> Int { await engine.status().counters[name] ?? 0 }

  /// Every file and folder below `base`, relative to it.
  func tree() -> [String] {
    let items = FileManager.default.enumerator(atPath: base.path)?.allObjects as? [String] ?? []
    return items.sorted()
  }
}

@Suite struct RefusedNamesAndReplayTests {
  let key = GroupKey.generate()

  /// Issue 13 bug 5: names the folder refuses are declined before the
  /// transfer, not fetched and refused afterwards as a disk error, and are
  /// not fetched again by a later session.
  @Test func namesTheFolderRefusesAreDeclinedBeforeFetching() async throws {
    let alice = try HandoffTestAgent("alice", key: key)
    let bob = try DiskAgent("bob", key: key)
    let refused = ["run.sh", ".git/hooks/pre-commit", "bad\u{1}name.md", "e\u{202E}dm.sh"]
    for name in refused { await alice.save(name, "#!/bin/sh\necho hi\n") }
    await alice.save("ok.md", "fine")
    let (first, _) = await runEngines(bob.engine, alice.engine)
    let summary = try #require(first.value)
    #expect(summary.received == ["\(HandoffTestAgent.notesType):ok.md"])
    #expect(summary.declined == refused.count)
    #expect(summary.failed == 0)
    #expect(await bob.counter(HandoffCounter.declined) == refused.count)
    #expect(await bob.counter(HandoffCounter.failed) == 0)
    #expect(await alice.counter(HandoffCounter.sent) == 1)
    #expect(bob.tree() == ["notes", "notes/ok.md"])
    // A second session fetches none of them again and counts nothing twice.
    let (second, _) = await runEngines(bob.engine, alice.engine)
    #expect(second.value?.received == [])
    #expect(await alice.counter(HandoffCounter.sent) == 1)
    #expect(await bob.counter(HandoffCounter.declined) == refused.count)
    #expect(await bob.counter(HandoffCounter.failed) == 0)
  }

  /// Issue 13 bug 6: one recorded beacon replayed from many fresh addresses
  /// costs one connection, not one per address; a known peer's own address
  /// is not held back by it.
  @Test func replayedBeaconFromManyAddressesCostsOneConnection() async throws {
    let a = try HandoffTestAgent("alice", key: key)
    let b = try HandoffTestAgent("bob", key: key)
    let mallory = try HandoffTestAgent("mallory", key: GroupKey.generate())
    await a.save("s.md", "s")
    #expect(await runSession(b, a).0.succeeded)  // bob now knows alice
    await a.save("t.md", "t")
    let captured = await a.engine.currentBeacon()
    #expect(await b.bounds.shouldConnect(beacon: captured, from: "M1"))
    #expect(await !runSession(b, mallory, responderAddress: "M1").0.succeeded)
    for address in ["M2", "M3", "M4", "12:34:56:78:9A:BC"] {
      #expect(await !b.bounds.shouldConnect(beacon: captured, from: address), "\(address)")
    }
    #expect(await !b.bounds.shouldConnect(beacon: captured, from: "M1"))
    // Alice herself, from a fresh resolvable address, still gets her connection.
    let real = BluetoothAddress(littleEndian: a.engine.newAddress())!.description
    #expect(await b.bounds.shouldConnect(beacon: captured, from: real))
  }

  /// The same bound on the link path (issue 25): a replayed beacon from
  /// fresh addresses gets one link attempt per content per `retryInterval`,
  /// the replayer's own address is held back after its handshake failed,
  /// and the real peer's resolvable address is not.
  @Test func replayedBeaconGetsOneLinkAttemptAcrossAddresses() async throws {
    let a = try HandoffTestAgent("alice", key: key)
    let b = try HandoffTestAgent("bob", key: key)
    let mallory = try HandoffTestAgent("mallory", key: GroupKey.generate())
    await a.save("s.md", "s")
    #expect(await runSession(b, a).0.succeeded)  // bob now knows alice
    let captured = await a.engine.currentBeacon()
    #expect(await b.bounds.shouldLink(beacon: captured, from: "M1"))
    // Mallory cannot answer the handshake of the link bob opens.
    let (bobEnd, malloryEnd) = InMemoryMessageChannel.pair()
    async let refused = try? mallory.engine.respond(over: malloryEnd, peerAddress: "B")
    let link = await Result(catching: {
      try await b.engine.openLink(over: bobEnd, peerAddress: "M1")
    })
    _ = await refused
    b.bounds.ended(at: "M1", link.map { _ in nil })
    #expect(!link.succeeded)
    for address in ["M1", "M2", "M3", "12:34:56:78:9A:BC"] {
      #expect(await !b.bounds.shouldLink(beacon: captured, from: address), "\(address)")
    }
    let real = BluetoothAddress(littleEndian: a.engine.newAddress())!.description
    #expect(await b.bounds.shouldLink(beacon: captured, from: real))
    #expect(await !b.bounds.shouldLink(beacon: [0x02, 0x01, 0x06], from: "M5"))
  }

  /// While a connection for some content is pending, the same content from
  /// another unknown address waits too; after `retryInterval` one more try.
  @Test func contentBoundExpiresAfterRetryInterval() async throws {
    let a = try HandoffTestAgent("alice", key: key)
    let b = try HandoffTestAgent("bob", key: key, policy: HandoffPolicy(retryInterval: .zero))
    await a.save("s.md", "s")
    let captured = await a.engine.currentBeacon()
    #expect(await b.bounds.shouldConnect(beacon: captured, from: "M1"))
    #expect(await b.bounds.shouldConnect(beacon: captured, from: "M2"))
  }
}
