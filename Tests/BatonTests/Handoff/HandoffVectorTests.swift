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
    "hs_ephemeral_i": "38ab664bd86f77d7e66bdd9ae0792913a94fd8b33a1260027e4b46c1f4884c67",
    "hs_ephemeral_r": "219e4d800da968d2a5fcb009c784f4746c7138edb9ee4844b739e830b05cf424",
    "hs_shared": "559ed2171b98fa0c0f417b78b5c5a43e971990d7605860038d940284d3245142",
    "hs_m1": "01061111111111111111111111111111111111111111111111111111111111111111",
    "hs_m2":
      "02062222222222222222222222222222222222222222222222222222222222222222219e4d800da968d2a5fcb009c784f4746c7138edb9ee4844b739e830b05cf4243333333333333333333333333333333333333333333333330118374675f30553b65b9a85a4fbc2ce86fd6e6d6fd2e3db526e8ba8b1",
    "hs_m3":
      "0338ab664bd86f77d7e66bdd9ae0792913a94fd8b33a1260027e4b46c1f4884c6744444444444444444444444444444444444444444444444440e977f6b280ddc0baf05cd1e7b454d44b5163b9c97e2a8e43aafb2b8f360d",
    "k_initiator_to_responder": "f6fcf818fa574f51220dd6c9e6d146ecb186483978698b086c3501e8183ec856",
    "k_responder_to_initiator": "f9a5aca1aca1eecdf4bbff18b61e08be0d402d60ab3ae485812eaab7fed47595",
    "content_hash": "d6db14addfa6dbf2aff4cbd2e69a374fa9bf90b1d65f00c4617101f3a2f087e8",
    "version_vector": "02000807060504030201020000000000000018171615141312110100000000000000",
    "frame_plaintext":
      "060011006f72672e6578616d706c652e6e6f746573020048690400612e6d640200080706050403020102000000000000001817161514131211010000000000000008070605040302010500616c696365d6db14addfa6dbf2aff4cbd2e69a374fa9bf90b1d65f00c4617101f3a2f087e805000000232048690a",
    "frame":
      "11050000000000000000000000000000000000000000000000001834873485f0fcb51a4f5d193a2a23e7d2962f1692fb17608be492be95af69c3ef16e7da4acb638b668dac9cadedd3aa857a2bd77b678da2c85067ad16d66682acaf9e928df1ad2469f4b468d654c199516ab1343ff427495b9e653cf3dcd3171bbdde780448c45d9c855cbdd417ad8c68e52762bf72c8a9e2c811dec0534f75a6e7833129e861c87d",
    "link_plaintext": "0d0000001000",
    "link_frame": "11000000000000000000000000000000000000000000000000002afbf1d49508f8dc1d7e07ac89f3438a8d1dfd117fca",
    "ping_frame": "11000000000000000000000000000000000000000000000000001bac97f0c5c56ca98d5a847d2b72d01f3ee5",
    "pong_frame": "110100000000000000000000000000000000000000000000000032cbf1ee949314ee2f4d2addee418f1c5dad",
    "have_plaintext":
      "10000100000011006f72672e6578616d706c652e6e6f7465730400612e6d64d6db14addfa6dbf2aff4cbd2e69a374fa9bf90b1d65f00c4617101f3a2f087e8050000000000000002000807060504030201020000000000000018171615141312110100000000000000080706050403020100",
    "have_frame":
      "1102000000000000000000000000000000000000000000000000e7fb3c104471c30d6b94ac5bc0546ed90955d3a6aa68d05a74ae049c39ea02ef29bbe2fbdc0bc013cf757a08fc782c893450ca0f0b394de4275f9c5b86c79dd5da995f2257799ce0b2a0eb2bb5328b3e6ce45b866bba85914164592b47a3dbd95240eca2f189ed2eb4f35357f7be8135c71bd7b433712a6956db653f83d2c0b70533",
    "control_frame":
      "12000000000000000003000000000000000700000046000000018ded8a78b820a9fe87f9bff6361ce20722",
    "activity_hash": "7793e1",
    "index_digest": "52514333",
    "index_position": "bc279351",
    "index_fingerprint": "23b1275c6817eb1e1e5bce0b84b03ad2",
    "index_digest_full": "525143330ed9cf0908f598bf24a97e2131cd74b5a3092861a8053ee27aa4ba42",
    "get_nodes": "0b02000000000000810b000000",
    "nodes":
      "0c0200010100000011006f72672e6578616d706c652e6e6f7465730400612e6d64d6db14addfa6dbf2aff4cbd2e69a374fa9bf90b1d65f00c4617101f3a2f087e8050000000000000002000807060504030201020000000000000018171615141312110100000000000000080706050403020100000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000100000023b1275c6817eb1e000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
    "turn":
      "08525143330100000011006f72672e6578616d706c652e6e6f7465730400612e6d64d6db14addfa6dbf2aff4cbd2e69a374fa9bf90b1d65f00c4617101f3a2f087e8050000000000000002000807060504030201020000000000000018171615141312110100000000000000080706050403020100",
    "tombstone_fingerprint":
      "1fc65e369c416bdb1ad3600396167873",
    "index_fingerprint_b":
      "f8a774f950070b0889f6101a1baccbbe",
    "index_pair_fingerprint":
      "1b599c55b91ef626a751df259f5c0691",
    "index_pair_digest_full":
      "717b3e0ee78fecc874d21045c44a5f30881305a942dcb98349120920fd5b8fac",
    "gone":
      "110100000011006f72672e6578616d706c652e6e6f7465730400612e6d64d6db14addfa6dbf2aff4cbd2e69a374fa9bf90b1d65f00c4617101f3a2f087e8050000000000000002000807060504030201030000000000000018171615141312110100000000000000080706050403020101",
    "moved":
      "1211006f72672e6578616d706c652e6e6f7465730400612e6d64d6db14addfa6dbf2aff4cbd2e69a374fa9bf90b1d65f00c4617101f3a2f087e805000000000000000200080706050403020103000000000000001817161514131211010000000000000008070605040302010111006f72672e6578616d706c652e6e6f7465730400622e6d64d6db14addfa6dbf2aff4cbd2e69a374fa9bf90b1d65f00c4617101f3a2f087e80500000000000000010008070605040302010100000000000000080706050403020100",
    "k_address": "8e2794e1d8d203e165def941bc2951c00477eb1d3fdaf86a771f3abac77ea59e",
    "address_prand": "a1b243",
    "address": "0179dea1b243",
    "beacon_flags_plaintext": "31563412efcdab89",
    "beacon_resolvable_nonce": "a0a1a2a3a4ab6733",
    "beacon_flags": "0201061bffffffa0a1a2a3a4ab67338e63d8b469414125e6c58ef1f17728c8",
  ]

  let keys = HandoffKeys(groupKey: GroupKey(bytes: Array(0..<32))!)
  let alice = PeerIdentity(device: DeviceID(rawValue: 0x0102_0304_0506_0708), name: "alice")
  let bob = PeerIdentity(device: DeviceID(rawValue: 0x1112_1314_1516_1718), name: "bob")

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
    #expect(SecureChannel.openChallengeResponse(m2, hello: m1, keys: keys) == bob)
    #expect(SecureChannel.openResponse(m3, hello: m1, challengeResponse: m2, keys: keys) == alice)
    // Bound to the other messages: a different M1 breaks M2 and M3.
    var otherM1 = m1
    otherM1[5] ^= 1
    #expect(SecureChannel.openChallengeResponse(m2, hello: otherM1, keys: keys) == nil)
    #expect(
      SecureChannel.openResponse(m3, hello: otherM1, challengeResponse: m2, keys: keys) == nil)
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
