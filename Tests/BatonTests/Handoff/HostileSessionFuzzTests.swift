import BatonTestSupport
import Foundation
import Testing

@testable import BatonFuzz
@testable import BatonHandoff
@testable import BatonNotes
@testable import BatonSystem

/// A key holder that completes the real handshake and then sends random
/// sequences of well-formed and malformed messages (issue 13, "Fuzzing at
/// scale"). It holds the session keys itself so that it can seal any bytes.
struct HostilePeer {
  let channel: InMemoryMessageChannel
  var sendKey: [UInt8] = []
  var receiveKey: [UInt8] = []
  var sendCounter: UInt64 = 0
  var receiveCounter: UInt64 = 0

  /// The initiator's side of the handshake; false if the victim refused it.
  mutating func handshake(keys: HandoffKeys, me: LocalIdentity) async throws -> Bool {
    let mine = EphemeralKey()
    let m1 = SecureChannel.makeHello(ephemeral: mine.publicKey)
    try await channel.send(m1)
    guard let m2 = try await channel.receive(),
      let (opening, shared) = SecureChannel.openChallengeResponse(
        m2, hello: m1, ephemeralSecret: mine.secret, keys: keys),
      let victim = opening.peer
    else { return false }
    let m3 = SecureChannel.makeResponse(
      hello: m1, challengeResponse: m2, nonce: HandoffCrypto.random(24), shared: shared, me: me,
      keys: keys)
    try await channel.send(m3)
    let (toResponder, toInitiator) = SecureChannel.sessionKeys(
      hello: m1, challengeResponse: m2, response: m3, initiator: me.device,
      responder: victim.device, shared: shared, keys: keys)
    sendKey = toResponder
    receiveKey = toInitiator
    return true
  }

  /// Sends `kind, body` in frames of the channel's size (`more` set on all
  /// but the last); `counterSkew` makes a frame out of order.
  mutating func send(kind: UInt8, body: [UInt8], counterSkew: UInt64 = 0) async throws {
    let room = channel.maximumMessageSize - SecureChannel.frameOverhead
    var offset = 0
    repeat {
      let end = min(body.count, offset + room)
      let plain = [kind, end < body.count ? 1 : 0] + Array(body[offset..<end])
      try await channel.send(
        SecureChannel.sealFrame(plain, counter: sendCounter &+ counterSkew, key: sendKey))
      sendCounter &+= 1
      offset = end
    } while offset < body.count
  }

  mutating func send(_ message: HandoffMessage) async throws {
    try await send(kind: message.kind.rawValue, body: message.body)
  }

  /// The victim's next message, nil when the channel closed or a frame did not open.
  mutating func receive() async throws -> HandoffMessage? {
    var body: [UInt8] = []
    while true {
      guard let frame = try await channel.receive(),
        let plain = SecureChannel.openFrame(frame, counter: receiveCounter, key: receiveKey),
        plain.count >= 2
      else { return nil }
      receiveCounter += 1
      body += plain[2...]
      if plain[1] == 0 {
        return try? HandoffMessage.decode(kind: plain[0], body: body, maxNoteSize: 1 << 20)
      }
    }
  }
}

/// Random hostile content: names, versions, entries, messages.
struct HostileGenerator {
  var rng: SplitMix64
  static let type = HandoffTestAgent.notesType

  mutating func int(_ n: Int) -> Int { Int(rng.next() % UInt64(max(n, 1))) }

  mutating func name() -> String {
    let names = [
      "a.md", "dir/b.md", "../escape.md", "../../escape2.md", "/etc/passwd.md", "a/../../c.md",
      ".git/hooks/pre-commit", "run.sh", "x\n<2>agent: FORGED\n.md", "nul\u{0}.md",
      "e\u{202E}dm.sh", "dir//d.md", "./e.md", "dir/.hidden.md", "~backup.md~", ".#lock.md",
      String(repeating: "long", count: 80) + ".md", String(repeating: "d/", count: 200) + "deep.md",
      String(repeating: "é", count: 130) + ".md", "tab\t.md", "back\\slash.md", "",
      "notes/../../../tmp/out.md", "ok-\(int(5)).md",
    ]
    return names[int(names.count)]
  }

  mutating func version() -> VersionVector {
    var counters: [DeviceID: UInt64] = [:]
    let devices = int(6) == 0 ? int(400) : int(4)
    let extremes: [UInt64] = [0, 1, 2, .max, .max - 1, 1 << 63, UInt64(UInt32.max)]
    for _ in 0..<devices {
      let device = int(3) == 0 ? UInt64.max : rng.next() % 8 + (int(4) == 0 ? 0 : 1)
      counters[DeviceID(rawValue: device)] =
        int(2) == 0 ? extremes[int(extremes.count)] : rng.next() % 100
    }
    return VersionVector(counters)
  }

  mutating func bytes(_ max: Int) -> [UInt8] {
    (0..<int(max)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
  }

  mutating func content() -> [UInt8] {
    int(3) == 0 ? bytes(700) : Array("# hostile \(int(1000))\ntext\n".utf8)
  }

  mutating func entry() -> HandoffIndexEntry {
    let c = content()
    let sizes = [0, Int.max, Int.max - 1, 1 << 20, (1 << 20) + 1, Int(Int32.max)]
    return HandoffIndexEntry(
      activityType: int(5) == 0 ? "org.evil\(int(3))" : Self.type, path: name(),
      hash: ContentHash(of: int(4) == 0 ? bytes(10) : c), size: int(6) == 0 ? sizes[int(sizes.count)] : c.count,
      version: version(), origin: DeviceID(rawValue: int(3) == 0 ? UInt64.max : rng.next() % 8))
  }

  mutating func payload(path: String? = nil) -> ActivityPayload {
    let c = content()
    return ActivityPayload(
      activityType: int(6) == 0 ? "org.evil" : Self.type, title: String(repeating: "t", count: int(40)),
      path: path ?? name(), version: version(), origin: DeviceID(rawValue: rng.next() % 8),
      originName: int(4) == 0 ? "evil\u{1B}[31m\n" : "mallory",
      hash: ContentHash(of: int(5) == 0 ? bytes(5) : c), content: c)
  }

  mutating func message() -> HandoffMessage {
    switch int(10) {
    case 0: return .getActivity
    case 1: return .getIndex
    case 2: return .getNote(activityType: Self.type, path: name())
    case 3: return .index((0..<int(12)).map { _ in entry() })
    case 4: return .turn(indexDigest: UInt32(truncatingIfNeeded: rng.next()), (0..<int(12)).map { _ in entry() })
    case 5:
      if int(2) == 0 {
        return .getNodes((0..<int(4)).map { _ in .init(depth: int(9), prefix: UInt32(truncatingIfNeeded: rng.next()) & 0xF, wantsEntries: int(2) == 0) })
      }
      return .nodes((0..<int(3)).map { _ in int(2) == 0 ? .entries((0..<int(5)).map { _ in entry() }) : .children((0..<16).map { _ in .init(count: UInt32(int(40)), fingerprint: rng.next()) }) })
    case 6: return .note(payload())
    case 7: return .activity(entry(), title: "t", indexDigest: bytes(33).count >= 0 ? [UInt8](repeating: 1, count: 32) : [])
    case 8: return .done(activityHash: UInt32(truncatingIfNeeded: rng.next()), indexDigest: UInt32(truncatingIfNeeded: rng.next()))
    default: return .error(code: UInt8(truncatingIfNeeded: rng.next()), text: "\u{1B}]0;x\u{7}")
    }
  }
}

@Suite struct HostileSessionFuzzTests {
  static let environment = ProcessInfo.processInfo.environment
  static let sessions = Int(environment["BATON_HOSTILE_SESSIONS"] ?? "") ?? 60
  static let seed = UInt64(environment["BATON_HOSTILE_SEED"] ?? "") ?? 13

  /// Hostile sessions against an agent on a real folder, then an honest peer.
  @Test func hostilePeerCannotTrapEscapeOrStopTheAgent() async throws {
    let key = GroupKey.generate()
    let keys = HandoffKeys(groupKey: key)
    let victim = try DiskAgent(
      "victim", key: key, policy: HandoffPolicy(receiveTimeout: .milliseconds(150)))
    var gen = HostileGenerator(rng: SplitMix64(seed: Self.seed))
    let me = LocalIdentity(key: DeviceKey.generate(), name: "mallory")
    var handshakes = 0
    for session in 0..<Self.sessions {
      let (mine, theirs) = InMemoryMessageChannel.pair(
        maximumMessageSize: [272, 300, 512][gen.int(3)])
      let served = Task {
        try? await victim.engine.runSession(over: theirs, initiator: false, peerAddress: "m\(session)")
      }
      var peer = HostilePeer(channel: mine)
      if try await peer.handshake(keys: keys, me: me) {
        handshakes += 1
        do {
          for _ in 0..<(1 + gen.int(10)) {
            switch gen.int(8) {
            case 0:  // malformed body under a random or real kind
              let kind = gen.int(2) == 0 ? UInt8(gen.int(256)) : UInt8(1 + gen.int(10))
              try await peer.send(kind: kind, body: gen.bytes(600))
            case 1:  // out-of-order frame
              try await peer.send(.getIndex)
              try await peer.send(kind: 1, body: [], counterSkew: 1 + UInt64(gen.int(3)))
            case 2, 3:  // answer what the victim asks for with a hostile note
              switch try await peer.receive() {
              case .getNote(_, let path)?:
                try await peer.send(.note(gen.payload(path: gen.int(3) == 0 ? nil : path)))
              case nil: break
              default: try await peer.send(gen.message())
              }
            default:
              try await peer.send(gen.message())
            }
          }
          // Serve a pull for a few rounds, then go.
          for _ in 0..<gen.int(6) {
            guard case .getNote(_, let path)? = try await peer.receive() else { break }
            try await peer.send(.note(gen.payload(path: path)))
          }
        } catch {}  // the victim closed the channel: fine
      }
      await mine.close()
      _ = await served.value
    }
    #expect(handshakes == Self.sessions)
    // Nothing outside the folder; nothing hidden or unlike a note inside it.
    for item in victim.tree() where item != "notes" {
      #expect(item.hasPrefix("notes/"), "written outside the folder: \(item)")
      let components = item.split(separator: "/").dropFirst()
      #expect(!components.contains { $0.hasPrefix(".") }, "hidden: \(item)")
    }
    let outside = victim.base.deletingLastPathComponent()
    for escaped in ["escape.md", "escape2.md", "c.md", "tmp/out.md"] {
      #expect(!FileManager.default.fileExists(atPath: outside.appendingPathComponent(escaped).path))
    }
    // An honest peer is still served: its note arrives on disk. The victim
    // waits only 150 ms for each message (so that hostile sessions end
    // fast); on 2 loaded cores an honest session can miss that, and is
    // retried, as the radio would retry it.
    let honest = try HandoffTestAgent("honest", key: key)
    await honest.save("honest.md", "# honest\n")
    var sessions: [(Result<SessionSummary, any Error>, Result<SessionSummary, any Error>)] = []
    for _ in 0..<3 {
      sessions.append(await runEngines(victim.engine, honest.engine))
      if sessions.last!.0.succeeded && sessions.last!.1.succeeded { break }
    }
    #expect(sessions.last!.0.succeeded && sessions.last!.1.succeeded, "\(sessions)")

    let text = try String(contentsOf: victim.base.appendingPathComponent("notes/honest.md"), encoding: .utf8)
    #expect(text == "# honest\n")
  }
}

/// The fuzz targets (`make fuzz` runs them under libFuzzer): each has a seed
/// corpus in the tree, and every file in it (seeds, and inputs that once
/// crashed, kept there once fixed) decodes without a trap.
@Suite struct DecoderFuzzTests {
  @Test(arguments: DecoderFuzzer.targets.map(\.name))
  func decoderSurvivesItsCorpus(_ name: String) throws {
    let target = try #require(DecoderFuzzer.target(named: name))
    let folder = TestEnvironment.repository.appendingPathComponent("Tests/Fuzz/corpus/\(name)")
    let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
    #expect(files.count >= target.seeds.count, "run baton-fuzz seeds Tests/Fuzz/corpus")
    for file in files {
      target.decode([UInt8](try Data(contentsOf: folder.appendingPathComponent(file))))
    }
  }

  @Test func everyDecoderHasATarget() {
    #expect(
      Set(DecoderFuzzer.targets.map(\.name)) == [
        "h4", "hci-event", "acl", "l2cap-signal", "advertising-report", "beacon", "handshake",
        "frame", "frame-recovery", "handoff-message", "link-message", "version-vector", "membership", "key-file",
        "config", "note-names", "dbus-properties", "pairing",
      ])
  }
}
