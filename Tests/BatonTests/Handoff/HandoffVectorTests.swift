import Foundation
import Testing

@testable import BatonHandoff
@testable import BatonSystem

/// The test vectors of PROTOCOL.md, frozen here and checked against the code.
/// Tests/Scripts/verify-handoff-vectors.py checks the same values independently.
@Suite struct HandoffVectorTests {
  static let expected: [String: String] = [
    "k_beacon_enc": "7ab6a0453b365a960249ef80fb6c5e826a728f759136cba238b3b32bbaf55e06",
    "k_beacon_mac": "16f0e0cfbc2901a852c7dae96c3adce6d3623e58aba5ef89423230b101a37671",
    "k_auth": "3319e319e1c5fbcaa9d1accbb3a7e3b946a69470ce5ce92f588220c689857f32",
    "k_payload": "704d11d17cbbbb54b72f72d73e6af1939e58868cc6b5a12ff4ca9d41558fff17",
    "k_summary": "db662321202ea168b3b39f498107454c00fef614eab4f2ff09792b4ccd7052ad",
    "beacon_plaintext": "01563412efcdab89",
    "beacon": "0201061bffffffa0a1a2a3a4a5a6a79fc2226fd7e177e7ae3b6e22f63b7dec",
    "device_key_alice": "bc7cbcb5636375fa1d82434d466724d92377f53b980695dd49d26d0ce12205a5",
    "device_key_bob": "705fbac01f5519899f437bc42e40255ae9ab54bff00de3433af7d687d9e71ad5",
    "device_id_alice": "5f73d65dbe2e3019",
    "device_id_bob": "78177288f3c4a7f4",
    "hs_ephemeral_i": "38ab664bd86f77d7e66bdd9ae0792913a94fd8b33a1260027e4b46c1f4884c67",
    "hs_ephemeral_r": "219e4d800da968d2a5fcb009c784f4746c7138edb9ee4844b739e830b05cf424",
    "hs_shared": "559ed2171b98fa0c0f417b78b5c5a43e971990d7605860038d940284d3245142",
    "hs_m1": "01071111111111111111111111111111111111111111111111111111111111111111",
    "hs_m2":
      "02072222222222222222222222222222222222222222222222222222222222222222219e4d800da968d2a5fcb009c784f4746c7138edb9ee4844b739e830b05cf42433333333333333333333333333333333333333333333333369509b937eb50ecb2a18832ee8c1d712b506f4ecf49c33f85deb03723792d0d5fd46f3746d259384ebada47ec582b9a1cdba13213029b9e978c51fda14c201ea01b77d99ab9e8ae4fc746a690d043c54c64c666bee2c9a3fc4b3ee8eb35f9c3453585881ab25597c7675c328db8f6c397b09d7350c",
    "hs_m3":
      "0338ab664bd86f77d7e66bdd9ae0792913a94fd8b33a1260027e4b46c1f4884c67444444444444444444444444444444444444444444444444f492cd46d5e0aa3ba2727ef0c8b0155e37cbd384e64e1d4ea5aea5a96934510a6c0c46d4a009156eafc53a7ec361f4af696d89a93ec06a9e7c5946f54078a686f28a0f4cff192bb6a3e7b8a05d74988c54db1e2512c58ffd5d09c0ad74b11c0212ebcd41037180e3f11daa76e63034c2f909fff87a77f1",
    "k_initiator_to_responder": "7a8828cc75ac9bad483a37cd2eb2012de1ecd308f341a41ef06e0704417b04f7",
    "k_responder_to_initiator": "a8aba42247c7afa762f64e36ec253a82ff3780354a8c03c74297e63e7e28e610",
    "content_hash": "d6db14addfa6dbf2aff4cbd2e69a374fa9bf90b1d65f00c4617101f3a2f087e8",
    "version_vector": "02005f73d65dbe2e3019020000000000000078177288f3c4a7f40100000000000000",
    "frame_plaintext":
      "060011006f72672e6578616d706c652e6e6f746573020048690400612e6d6402005f73d65dbe2e3019020000000000000078177288f3c4a7f401000000000000005f73d65dbe2e30190500616c696365d6db14addfa6dbf2aff4cbd2e69a374fa9bf90b1d65f00c4617101f3a2f087e805000000232048690a",
    "frame":
      "1105000000000000000000000000000000000000000000000000f88e218606790020ccc0a4695d79d8b0775d144e31e3763c6948fb0c4430782adbb56a7b08a3d65e8b6857a1bf62eeb872655b11c0f7efc14b1f7639e6d30cf39741c3326ad16a1742cf19959f6277bf06c017fc6f0712c78f65345bbfa3e5e7162e051c30c4f1075448bf5846ffb3d30bd182ab1b69cf3a10af53786831a4b24eea9519fae49159bb",
    "link_plaintext": "0d0000001000",
    "link_frame":
      "11000000000000000000000000000000000000000000000000001403aaa1449f34b51c43d8d9c8df789f6791eff1f812",
    "ping_frame":
      "11000000000000000000000000000000000000000000000000008d5103b04806a7094b29c0aa999e928c34d5",
    "pong_frame":
      "11010000000000000000000000000000000000000000000000004c7245eb384c02b6105706e5896250f0aaa7",
    "have_plaintext":
      "10000100000011006f72672e6578616d706c652e6e6f7465730400612e6d64d6db14addfa6dbf2aff4cbd2e69a374fa9bf90b1d65f00c4617101f3a2f087e8050000000000000002005f73d65dbe2e3019020000000000000078177288f3c4a7f401000000000000005f73d65dbe2e301900",
    "have_frame":
      "1102000000000000000000000000000000000000000000000000dbe71c7bc8cc738d98273f7dd9dd06484deffcd67dfa4a9afedddff223e995c50a72d729f8e80d43578b80bb48adc8e96fad610dc411b4ba9eb49470f5f2b3b4490f8dfe5e4ecbcf80332f85ef394feb924fa7ec39f068bd369d8a97855d8e989d38c7709068ad1f96c0aa949c6f9f232d7eec68e447ee0a1959de21deaa5a0fa39c",
    "control_frame":
      "1200000000000000000300000000000000070000004600000001e09885010ddd696ea287608bc500d4d0a8",
    "activity_hash": "a2155a",
    "index_digest": "52514333",
    "index_position": "bc279351",
    "index_fingerprint": "23b1275c6817eb1e1e5bce0b84b03ad2",
    "index_digest_full": "525143330ed9cf0908f598bf24a97e2131cd74b5a3092861a8053ee27aa4ba42",
    "get_nodes": "0b02000000000000810b000000",
    "nodes":
      "0c0200010100000011006f72672e6578616d706c652e6e6f7465730400612e6d64d6db14addfa6dbf2aff4cbd2e69a374fa9bf90b1d65f00c4617101f3a2f087e8050000000000000002005f73d65dbe2e3019020000000000000078177288f3c4a7f401000000000000005f73d65dbe2e301900000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000100000023b1275c6817eb1e000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
    "turn":
      "08525143330100000011006f72672e6578616d706c652e6e6f7465730400612e6d64d6db14addfa6dbf2aff4cbd2e69a374fa9bf90b1d65f00c4617101f3a2f087e8050000000000000002005f73d65dbe2e3019020000000000000078177288f3c4a7f401000000000000005f73d65dbe2e301900",
    "tombstone_fingerprint": "1fc65e369c416bdb1ad3600396167873",
    "index_fingerprint_b": "f8a774f950070b0889f6101a1baccbbe",
    "index_pair_fingerprint": "1b599c55b91ef626a751df259f5c0691",
    "index_pair_digest_full": "717b3e0ee78fecc874d21045c44a5f30881305a942dcb98349120920fd5b8fac",
    "gone":
      "110100000011006f72672e6578616d706c652e6e6f7465730400612e6d64d6db14addfa6dbf2aff4cbd2e69a374fa9bf90b1d65f00c4617101f3a2f087e8050000000000000002005f73d65dbe2e3019030000000000000078177288f3c4a7f401000000000000005f73d65dbe2e301901",
    "moved":
      "1211006f72672e6578616d706c652e6e6f7465730400612e6d64d6db14addfa6dbf2aff4cbd2e69a374fa9bf90b1d65f00c4617101f3a2f087e8050000000000000002005f73d65dbe2e3019030000000000000078177288f3c4a7f401000000000000005f73d65dbe2e30190111006f72672e6578616d706c652e6e6f7465730400622e6d64d6db14addfa6dbf2aff4cbd2e69a374fa9bf90b1d65f00c4617101f3a2f087e8050000000000000001005f73d65dbe2e301901000000000000005f73d65dbe2e301900",
    "k_address": "8e2794e1d8d203e165def941bc2951c00477eb1d3fdaf86a771f3abac77ea59e",
    "address_prand": "a1b243",
    "address": "bb1c90a1b243",
    "beacon_flags_plaintext": "31563412efcdab89",
    "beacon_resolvable_nonce": "a0a1a2a3a4d33a08",
    "beacon_flags": "0201061bffffffa0a1a2a3a4d33a08091d46f049631414c3d19ee2b53fd151",
  ]

  let keys = HandoffKeys(groupKey: GroupKey(bytes: Array(0..<32))!)
  /// Device keys from the seeds `a1`×32 and `b0`×32 (PROTOCOL.md section 11).
  let alice = LocalIdentity(key: DeviceKey(seed: [UInt8](repeating: 0xa1, count: 32))!, name: "alice")
  let bob = LocalIdentity(key: DeviceKey(seed: [UInt8](repeating: 0xb0, count: 32))!, name: "bob")

  /// The X25519 public key of the secret key `byte`×32.
  static func ephemeralPublic(_ byte: UInt8) -> [UInt8] {
    HandoffCrypto.x25519PublicKey(secret: [UInt8](repeating: byte, count: 32))
  }

  /// Everything the vectors cover, computed by the code.
  func computed() -> [String: String] {
    var out: [String: String] = [:]
    out["k_beacon_enc"] = keys.beaconCipher.hexString
    out["k_beacon_mac"] = keys.beaconMAC.hexString
    out["k_auth"] = keys.auth.hexString
    out["k_payload"] = keys.payload.hexString
    out["k_summary"] = keys.summary.hexString
    let content = BeaconContent(activityHash: 0x12_3456, indexDigest: 0x89ab_cdef)
    out["beacon_plaintext"] = content.plaintext.hexString
    out["beacon"] = Beacon.seal(content, keys: keys, nonce: Array(0xa0...0xa7)).hexString
    func littleEndian(_ id: DeviceID) -> String {
      (0..<8).map { UInt8(truncatingIfNeeded: id.rawValue >> (8 * $0)) }.hexString
    }
    out["device_key_alice"] = alice.key.publicKey.bytes.hexString
    out["device_key_bob"] = bob.key.publicKey.bytes.hexString
    out["device_id_alice"] = littleEndian(alice.device)
    out["device_id_bob"] = littleEndian(bob.device)
    let m1 = SecureChannel.makeHello(challenge: [UInt8](repeating: 0x11, count: 32))
    let (eI, eR) = (Self.ephemeralPublic(0x55), Self.ephemeralPublic(0x66))
    let m2 = SecureChannel.makeChallengeResponse(
      hello: m1, challenge: [UInt8](repeating: 0x22, count: 32), ephemeral: eR,
      nonce: [UInt8](repeating: 0x33, count: 24), me: bob, keys: keys)
    let m3 = SecureChannel.makeResponse(
      hello: m1, challengeResponse: m2, ephemeral: eI, nonce: [UInt8](repeating: 0x44, count: 24),
      me: alice, keys: keys)
    let shared = HandoffCrypto.x25519(
      secret: [UInt8](repeating: 0x55, count: 32), peerPublic: eR)!
    out["hs_ephemeral_i"] = eI.hexString
    out["hs_ephemeral_r"] = eR.hexString
    out["hs_shared"] = shared.hexString
    out["hs_m1"] = m1.hexString
    out["hs_m2"] = m2.hexString
    out["hs_m3"] = m3.hexString
    let (ir, ri) = SecureChannel.sessionKeys(
      hello: m1, challengeResponse: m2, response: m3, initiator: alice.device,
      responder: bob.device, shared: shared, keys: keys)
    out["k_initiator_to_responder"] = ir.hexString
    out["k_responder_to_initiator"] = ri.hexString
    let text = Array("# Hi\n".utf8)
    let version = VersionVector([alice.device: 2, bob.device: 1])
    let payload = ActivityPayload(
      activityType: "org.example.notes", title: ActivityPayload.title(of: text, path: "a.md"),
      path: "a.md", version: version, origin: alice.device, originName: "alice",
      hash: ContentHash(of: text), content: text)
    out["content_hash"] = payload.hash.hex
    out["version_vector"] = version.encoded.hexString
    let message = HandoffMessage.note(payload)
    let plain = [message.kind.rawValue, 0] + message.body
    out["frame_plaintext"] = plain.hexString
    out["frame"] = SecureChannel.sealFrame(plain, counter: 5, key: ir).hexString
    // Links: LINK as the initiator's frame 0, PING as the responder's frame 0,
    // PONG as the initiator's frame 1.
    func plaintext(_ message: HandoffMessage) -> [UInt8] {
      [message.kind.rawValue, 0] + message.body
    }
    let link = plaintext(.link(maxNoteSize: 1 << 20))
    out["link_plaintext"] = link.hexString
    out["link_frame"] = SecureChannel.sealFrame(link, counter: 0, key: ir).hexString
    out["ping_frame"] = SecureChannel.sealFrame(plaintext(.ping), counter: 0, key: ri).hexString
    out["pong_frame"] = SecureChannel.sealFrame(plaintext(.pong), counter: 1, key: ir).hexString
    let have = plaintext(
      .have([
        HandoffIndexEntry(
          activityType: "org.example.notes", path: "a.md", hash: payload.hash, size: 5,
          version: version, origin: alice.device)
      ]))
    out["have_plaintext"] = have.hexString
    out["have_frame"] = SecureChannel.sealFrame(have, counter: 2, key: ir).hexString
    // The responder's control frame 0 (section 5): frames 0 to 2 taken,
    // 4 and 6 held, the rest asked for again; 7 K-frames sent, 70 credits
    // granted.
    out["control_frame"] = FrameRecovery.seal(
      [0x05],
      header: FrameRecovery.Header(
        marker: FrameRecovery.controlMarker, number: 0, ack: 3,
        report: FlowReport(framesSent: 7, creditsGranted: 70), flags: FrameRecovery.resendFlag),
      key: ri
    ).hexString
    let entry = HandoffIndexEntry(
      activityType: "org.example.notes", path: "a.md", hash: payload.hash, size: 5,
      version: version, origin: alice.device)
    let a = entry.activityHash
    out["activity_hash"] = [UInt8(a & 0xff), UInt8(a >> 8 & 0xff), UInt8(a >> 16)].hexString
    var index = HandoffIndex(offeredTypes: ["org.example.notes"], summaryKey: keys.summary)
    let key = HandoffEngine.key(entry.activityType, entry.path)
    index[key] = StoredNote(entry: entry)
    let position = IndexSummary.position(type: entry.activityType, path: entry.path)
    out["index_position"] =
      [UInt8(position >> 24), UInt8(position >> 16 & 0xff), UInt8(position >> 8 & 0xff), UInt8(position & 0xff)].hexString
    out["index_fingerprint"] =
      IndexSummary.fingerprint(
        type: entry.activityType, path: entry.path, hash: entry.hash, key: keys.summary
      ).bytes.hexString
    out["index_digest_full"] = index.summary.digest.hexString
    let d = index.summary.shortDigest
    out["index_digest"] =
      [UInt8(d & 0xff), UInt8(d >> 8 & 0xff), UInt8(d >> 16 & 0xff), UInt8(d >> 24)].hexString
    let ask = HandoffMessage.getNodes([
      .init(depth: 0, prefix: 0, wantsEntries: false),
      .init(depth: 1, prefix: position >> 28, wantsEntries: true),
    ])
    out["get_nodes"] = ([ask.kind.rawValue] + ask.body).hexString
    let answer = HandoffMessage.nodes(
      [.entries([entry])]
        + [.children(index.summary.children(depth: 0, prefix: 0).map {
          .init(count: UInt32($0.count), fingerprint: $0.shortFingerprint)
        })])
    out["nodes"] = ([answer.kind.rawValue] + answer.body).hexString
    let turn = HandoffMessage.turn(indexDigest: d, [entry])
    out["turn"] = ([turn.kind.rawValue] + turn.body).hexString
    // Deletions and renames: a.md deleted by alice at {alice: 3, bob: 1},
    // then the same bytes as b.md at {alice: 1}.
    let tombstone = StoredNote.tombstone(
      of: entry, version: VersionVector([alice.device: 3, bob.device: 1]), origin: alice.device
    ).entry
    out["tombstone_fingerprint"] =
      IndexSummary.fingerprint(
        type: tombstone.activityType, path: tombstone.path, hash: tombstone.hash, deleted: true,
        key: keys.summary
      ).bytes.hexString
    let gone = HandoffMessage.gone([tombstone])
    out["gone"] = ([gone.kind.rawValue] + gone.body).hexString
    let renamed = HandoffIndexEntry(
      activityType: "org.example.notes", path: "b.md", hash: payload.hash, size: 5,
      version: VersionVector([alice.device: 1]), origin: alice.device)
    // A node holding a.md and b.md: the index with both, summed.
    out["index_fingerprint_b"] =
      IndexSummary.fingerprint(
        type: renamed.activityType, path: renamed.path, hash: renamed.hash, key: keys.summary
      ).bytes.hexString
    var pair = index
    pair[HandoffEngine.key(renamed.activityType, renamed.path)] = StoredNote(entry: renamed)
    out["index_pair_fingerprint"] = pair.summary.root.fingerprint.bytes.hexString
    out["index_pair_digest_full"] = pair.summary.digest.hexString
    let moved = HandoffMessage.moved(from: tombstone, to: renamed)
    out["moved"] = ([moved.kind.rawValue] + moved.body).hexString
    out["k_address"] = keys.address.hexString
    out["address_prand"] = "a1b243"
    out["address"] =
      ResolvableAddress(device: alice.device, prand: [0xa1, 0xb2, 0x43], keys: keys).bytes.hexString
    // Section 3.3: the same content closed and asking, sealed by alice with
    // the random part a0..a4 of a resolvable nonce.
    let flagged = BeaconContent(
      activityHash: 0x12_3456, indexDigest: 0x89ab_cdef, closed: true, asking: true)
    let random: [UInt8] = Array(0xa0...0xa4)
    let nonce = random + Beacon.nonceTag(random, device: alice.device, keys: keys)
    out["beacon_flags_plaintext"] = flagged.plaintext.hexString
    out["beacon_resolvable_nonce"] = nonce.hexString
    out["beacon_flags"] = Beacon.seal(flagged, keys: keys, nonce: nonce).hexString
    return out
  }

  @Test func codeMatchesFrozenVectors() {
    let got = computed()
    for (name, value) in Self.expected {
      #expect(got[name] == value, "vector \(name)")
    }
  }

  @Test func protocolDocumentListsTheSameVectors() throws {
    let documented = try documentedVectors(Set(Self.expected.keys))
    #expect(documented == Self.expected)
  }

  /// The independent check: Python's hashlib and `cryptography` recompute every
  /// vector from the document alone.
  @Test func pythonRecomputesTheDocumentedVectors() throws {
    let (status, lines) = try runVectorScript("verify-handoff-vectors.py")
    #expect(status == 0, "\(lines.joined(separator: "\n"))")
    #expect(lines.last == "all vectors verified")
    #expect(lines.filter { $0.hasPrefix("ok ") }.count >= Self.expected.count)
  }

  @Test func framesAndHandshakeOpenWithTheVectorKeys() throws {
    let m1 = try #require([UInt8](hexString: Self.expected["hs_m1"]!))
    let m2 = try #require([UInt8](hexString: Self.expected["hs_m2"]!))
    let m3 = try #require([UInt8](hexString: Self.expected["hs_m3"]!))
    #expect(
      SecureChannel.openChallengeResponse(m2, hello: m1, keys: keys) == .identity(bob.peer))
    #expect(
      SecureChannel.openResponse(m3, hello: m1, challengeResponse: m2, keys: keys)
        == .identity(alice.peer))
    // Bound to the other messages: a different M1 breaks M2 and M3.
    var otherM1 = m1
    otherM1[5] ^= 1
    #expect(SecureChannel.openChallengeResponse(m2, hello: otherM1, keys: keys) == .sealBroken)
    #expect(
      SecureChannel.openResponse(m3, hello: otherM1, challengeResponse: m2, keys: keys) == .sealBroken)
    let key = try #require([UInt8](hexString: Self.expected["k_initiator_to_responder"]!))
    let frame = try #require([UInt8](hexString: Self.expected["frame"]!))
    #expect(
      SecureChannel.openFrame(frame, counter: 5, key: key)?.hexString
        == Self.expected["frame_plaintext"])
    #expect(SecureChannel.openFrame(frame, counter: 6, key: key) == nil)  // replayed out of order
    var header = frame
    header[1] = 6  // a header claiming another counter
    #expect(SecureChannel.openFrame(header, counter: 6, key: key) == nil)
  }
}

/// Runs one of the independent vector scripts in Tests/Scripts with the
/// venv's Python: its exit status and every line it printed.
func runVectorScript(_ name: String) throws -> (status: Int32, lines: [String]) {
  let script = TestEnvironment.repository.appendingPathComponent("Tests/Scripts/" + name).path
  let child = try ChildProcess(TestEnvironment.python, [script])
  var lines: [String] = []
  while let line = child.readLine() { lines.append(line) }
  return (child.wait(), lines)
}

/// The `name = value` lines of PROTOCOL.md for the vectors in `names`,
/// values trimmed.
func documentedVectors(_ names: Set<String>) throws -> [String: String] {
  let doc = try String(
    contentsOf: TestEnvironment.repository.appendingPathComponent(
      "Sources/BatonHandoff/PROTOCOL.md"), encoding: .utf8)
  var documented: [String: String] = [:]
  for line in doc.split(separator: "\n") {
    let parts = line.split(separator: "=", maxSplits: 1).map {
      $0.trimmingCharacters(in: .whitespaces)
    }
    if parts.count == 2, names.contains(parts[0]) { documented[parts[0]] = parts[1] }
  }
  return documented
}
