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
    "k_identity_r": "285bc9cd7237d9a9ae1bea059e37ef178a113f57d703786b909ff0496eca083d",
    "k_identity_i": "77783ed59314f5dfe0984251199d2efee2ebdb77c195c6440deb5dddde584369",
    "hs_m1": "010a38ab664bd86f77d7e66bdd9ae0792913a94fd8b33a1260027e4b46c1f4884c67",
    "hs_m2":
      "020a219e4d800da968d2a5fcb009c784f4746c7138edb9ee4844b739e830b05cf4243333333333333333333333333333333333333333333333338723563c6f6649af0640d46b150ca9fa156b60a8ffd9392fb7d0bb93a4c1db1748adb544bad4f0a4208da8100667eda778c2c86c7eb45c0458452fc6364518bed845b22831157abbae40888d647955c98a34db39b0d23ff3f7c7f85277680c847730a2dabd515c04564137e47e4387fe471f9d5f84",
    "hs_m3":
      "03444444444444444444444444444444444444444444444444a04c9b0e271dc02b350a3b38ad337563b2df625e125454b1e92349775f87be728d6105f41f7140fe495dd2458b33a5f986e9510796a140f6f6662b9f65e28cb884f47ef03dd85d894c3a7ab626c0af09043e6696ad9022a393a94fa00c1d184088cffafc9afb20f3909464394f2ba14a1a77e35c6157ff",
    "k_initiator_to_responder": "184545a358f280354427ecc21176025f5fee882be4cb9f30d3aef661e1dcdfe9",
    "k_responder_to_initiator": "a7c18baced2b2ceb77e8ce74a055d76f75e6d14fb80f59c37d86487cf7582be2",
    "content_hash": "d6db14addfa6dbf2aff4cbd2e69a374fa9bf90b1d65f00c4617101f3a2f087e8",
    "version_vector": "02005f73d65dbe2e3019020000000000000078177288f3c4a7f40100000000000000",
    "voucher_message_alice": "6261746f6e2d766f7563682d3111006f72672e6578616d706c652e6e6f7465730400612e6d645f73d65dbe2e30190200000000000000",
    "voucher_alice": "a2f887b06149b41d5cacbfd3069f9465f0e62993aa40708f8f0db39691bd52f126c93516e167e96ca3a101f58cac767dd855543c28551c384684b4d604245a08",
    "voucher_bob": "188c93dd1fd439820ca1c60910ef584be04dd63bb6f3baa3c5dc1dd8f6c30fcd7195f30e061c1528cb8f7dfa7ee38d3deb1dfd0310265b1844f5ea3a0794f80b",
    "frame_plaintext":
      "060011006f72672e6578616d706c652e6e6f746573020048690400612e6d6402005f73d65dbe2e3019020000000000000078177288f3c4a7f4010000000000000002005f73d65dbe2e3019a2f887b06149b41d5cacbfd3069f9465f0e62993aa40708f8f0db39691bd52f126c93516e167e96ca3a101f58cac767dd855543c28551c384684b4d604245a0878177288f3c4a7f4188c93dd1fd439820ca1c60910ef584be04dd63bb6f3baa3c5dc1dd8f6c30fcd7195f30e061c1528cb8f7dfa7ee38d3deb1dfd0310265b1844f5ea3a0794f80b5f73d65dbe2e30190500616c696365d6db14addfa6dbf2aff4cbd2e69a374fa9bf90b1d65f00c4617101f3a2f087e805000000232048690a",
    "frame":
      "11050000000000000000000000000000000000000000000000006ce5381a8614574017fd3fb5bdca8c5ffd76c335b302cc9ba54786129bab772c89ddc86a3da536f83549e5c40f9a2c67e96e8e5bdf0c0bcf26c716d992b1e3ed2a47ba8aa4dad0b7b921978cfffd11000259d7454f7ec3e036acb2b33d36168b9889c10d59b2bdb7ab97e70b96def13fe39d344fc65ab45ec326d614a3244ac463d9130bfcbd84ca3bc28c09404950c669b3482a76cfb33f4f6b0939c14611de880e19452fea782f1c3c513fe6fe14a1543421deb1a22885c0fb6ac2dd99f7192d7084f75431d7cd6b41b8b14a1d914b2f8f04d08ca7438e83f6ec7f93c73201c4f7af0f5beedeca31a814a59854cab067a22ec599144557b8c84348bd546a788d38b7d2aa5b54d7abbb93d24368063a1fe600490f800a814ede6c",
    "link_plaintext": "0d0000001000",
    "link_frame":
      "11000000000000000000000000000000000000000000000000001d56c5b9f66919be09c25b7b360fc1785cd5bdf632e2",
    "ping_frame":
      "110000000000000000000000000000000000000000000000000016281c34ef94d38e8c819180f5ad5c2cdc64",
    "pong_frame":
      "1101000000000000000000000000000000000000000000000000f527edfbc2f183fa37fa0b2230494b9889fd",
    "have_plaintext":
      "10000100000011006f72672e6578616d706c652e6e6f7465730400612e6d64d6db14addfa6dbf2aff4cbd2e69a374fa9bf90b1d65f00c4617101f3a2f087e8050000000000000002005f73d65dbe2e3019020000000000000078177288f3c4a7f4010000000000000002005f73d65dbe2e3019a2f887b06149b41d5cacbfd3069f9465f0e62993aa40708f8f0db39691bd52f126c93516e167e96ca3a101f58cac767dd855543c28551c384684b4d604245a0878177288f3c4a7f4188c93dd1fd439820ca1c60910ef584be04dd63bb6f3baa3c5dc1dd8f6c30fcd7195f30e061c1528cb8f7dfa7ee38d3deb1dfd0310265b1844f5ea3a0794f80b5f73d65dbe2e301900",
    "have_frame":
      "11020000000000000000000000000000000000000000000000004bb131510880527a398a351800f051d91b7227bec14236ea7069024c3e0b1ce01fb56074b670301d9fbbd887aada2a81fd036be6a97a9d4ba6fbf446c49c5a5e73cb39d602b7e2cfff9b9f249ba50e2c1969f43061d1639005678f7c5e3137bc3cd771167d18f2359d265b73a26a6828dea48c54f57075cfe8c52a7dd424de6055c8d8b2e33a2b85f341255c731efb5cd77ef1a1a36725de1b62163d0844076b84129dbe2153f8db79c9c2ba462a10b91bb002093cdb4a0ecd4f83007dc20b9f4fd9542da1c8a79e6799da5600b8bb8d41a2e869cde65a85015376b00deaa91b4c70a7c81f22eb1eeb0ca7cd314fb03a78289d13d7f2de5f908635cf084ff2edfd62b3ee2d5d449828fd2ed512db48fb13ea4de2",
    "control_frame":
      "1200000000000000000300000000000000070000004600000001da6a57f7ecb7d4d9d2bacfbebec894b3767abf48c9c8",
    "activity_hash": "a2155a",
    "index_digest": "52514333",
    "index_position": "bc279351",
    "index_fingerprint": "23b1275c6817eb1e1e5bce0b84b03ad2",
    "index_digest_full": "525143330ed9cf0908f598bf24a97e2131cd74b5a3092861a8053ee27aa4ba42",
    "get_nodes": "0b02000000000000810b000000",
    "nodes":
      "0c0200010100000011006f72672e6578616d706c652e6e6f7465730400612e6d64d6db14addfa6dbf2aff4cbd2e69a374fa9bf90b1d65f00c4617101f3a2f087e8050000000000000002005f73d65dbe2e3019020000000000000078177288f3c4a7f4010000000000000002005f73d65dbe2e3019a2f887b06149b41d5cacbfd3069f9465f0e62993aa40708f8f0db39691bd52f126c93516e167e96ca3a101f58cac767dd855543c28551c384684b4d604245a0878177288f3c4a7f4188c93dd1fd439820ca1c60910ef584be04dd63bb6f3baa3c5dc1dd8f6c30fcd7195f30e061c1528cb8f7dfa7ee38d3deb1dfd0310265b1844f5ea3a0794f80b5f73d65dbe2e301900000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000100000023b1275c6817eb1e000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
    "turn":
      "08525143330100000011006f72672e6578616d706c652e6e6f7465730400612e6d64d6db14addfa6dbf2aff4cbd2e69a374fa9bf90b1d65f00c4617101f3a2f087e8050000000000000002005f73d65dbe2e3019020000000000000078177288f3c4a7f4010000000000000002005f73d65dbe2e3019a2f887b06149b41d5cacbfd3069f9465f0e62993aa40708f8f0db39691bd52f126c93516e167e96ca3a101f58cac767dd855543c28551c384684b4d604245a0878177288f3c4a7f4188c93dd1fd439820ca1c60910ef584be04dd63bb6f3baa3c5dc1dd8f6c30fcd7195f30e061c1528cb8f7dfa7ee38d3deb1dfd0310265b1844f5ea3a0794f80b5f73d65dbe2e301900",
    "tombstone_fingerprint": "1fc65e369c416bdb1ad3600396167873",
    "index_fingerprint_b": "f8a774f950070b0889f6101a1baccbbe",
    "index_pair_fingerprint": "1b599c55b91ef626a751df259f5c0691",
    "index_pair_digest_full": "717b3e0ee78fecc874d21045c44a5f30881305a942dcb98349120920fd5b8fac",
    "gone":
      "110100000011006f72672e6578616d706c652e6e6f7465730400612e6d64d6db14addfa6dbf2aff4cbd2e69a374fa9bf90b1d65f00c4617101f3a2f087e8050000000000000002005f73d65dbe2e3019030000000000000078177288f3c4a7f4010000000000000002005f73d65dbe2e30190736d94cc0039790b6df62c5869b75482226c3bbb6084dc6e60ca6477f4a7e6893b3b8d8c542ac1650a39228d1e35a5b470d918f19be702712ae2f44adf7ea0778177288f3c4a7f4188c93dd1fd439820ca1c60910ef584be04dd63bb6f3baa3c5dc1dd8f6c30fcd7195f30e061c1528cb8f7dfa7ee38d3deb1dfd0310265b1844f5ea3a0794f80b5f73d65dbe2e301901",
    "moved":
      "1211006f72672e6578616d706c652e6e6f7465730400612e6d64d6db14addfa6dbf2aff4cbd2e69a374fa9bf90b1d65f00c4617101f3a2f087e8050000000000000002005f73d65dbe2e3019030000000000000078177288f3c4a7f4010000000000000002005f73d65dbe2e30190736d94cc0039790b6df62c5869b75482226c3bbb6084dc6e60ca6477f4a7e6893b3b8d8c542ac1650a39228d1e35a5b470d918f19be702712ae2f44adf7ea0778177288f3c4a7f4188c93dd1fd439820ca1c60910ef584be04dd63bb6f3baa3c5dc1dd8f6c30fcd7195f30e061c1528cb8f7dfa7ee38d3deb1dfd0310265b1844f5ea3a0794f80b5f73d65dbe2e30190111006f72672e6578616d706c652e6e6f7465730400622e6d64d6db14addfa6dbf2aff4cbd2e69a374fa9bf90b1d65f00c4617101f3a2f087e8050000000000000001005f73d65dbe2e3019010000000000000001005f73d65dbe2e3019df8809d142a692ad202921f547bbe8740943eb486bb7160b3504480fa953639b04e389c9ccf5074c3a60b9fb1000dbe1929575498d36326273721d71b339b4015f73d65dbe2e301900",
    "k_address": "8e2794e1d8d203e165def941bc2951c00477eb1d3fdaf86a771f3abac77ea59e",
    "address_prand": "a1b243",
    "address": "bb1c90a1b243",
    "beacon_flags_plaintext": "31563412efcdab89",
    "beacon_resolvable_nonce": "a0a1a2a3a4d33a08",
    "beacon_flags": "0201061bffffffa0a1a2a3a4d33a08091d46f049631414c3d19ee2b53fd151",
    "control_plaintext": "01050000010d",
    "k_initiator_to_responder_phase1": "77fd838e2b243c66d440a9bf81ca21b0c6d7f0f8be9b3a0a127eac0529f8e175",
    "phase1_frame": "5103000000000000000000000000000000000000000000000000fbbedca951d5600a76449b30b5612aad8ef8",
    "part_frame": "130500000000000000000000000000000000000000000000000160ed5a83d108069d6c8d48722a76455cbe3c5d6e1b4fa6f1598794f9632f154ef5c6a446fb3113163d45e64c745ebc23e338017f17dbe68b260fb79e16746ec6",
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
    let (eI, eR) = (Self.ephemeralPublic(0x55), Self.ephemeralPublic(0x66))
    let shared = HandoffCrypto.x25519(
      secret: [UInt8](repeating: 0x55, count: 32), peerPublic: eR)!
    let m1 = SecureChannel.makeHello(ephemeral: eI)
    let m2 = SecureChannel.makeChallengeResponse(
      hello: m1, ephemeral: eR, nonce: [UInt8](repeating: 0x33, count: 24), shared: shared,
      me: bob, keys: keys)
    let m3 = SecureChannel.makeResponse(
      hello: m1, challengeResponse: m2, nonce: [UInt8](repeating: 0x44, count: 24),
      shared: shared, me: alice, keys: keys)
    let sides: [(String, SecureChannel.IdentitySide)] = [
      ("k_identity_r", .responder), ("k_identity_i", .initiator),
    ]
    for (name, side) in sides {
      out[name] =
        SecureChannel.identityKey(side, hello: m1, challengeResponse: m2, shared: shared, keys: keys)
        .hexString
    }
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
    // Section 7.5: each counter with its device's voucher.
    func vouchers(_ path: String, _ version: VersionVector) -> Vouchers {
      Vouchers()
        .signed(by: alice.key, type: "org.example.notes", path: path, version: version)
        .signed(by: bob.key, type: "org.example.notes", path: path, version: version)
    }
    let vouched = vouchers("a.md", version)
    let payload = ActivityPayload(
      activityType: "org.example.notes", title: ActivityPayload.title(of: text, path: "a.md"),
      path: "a.md", version: version, vouchers: vouched, origin: alice.device,
      originName: "alice", hash: ContentHash(of: text), content: text)
    out["content_hash"] = payload.hash.hex
    out["version_vector"] = version.encoded.hexString
    out["voucher_message_alice"] =
      Vouchers.message(type: "org.example.notes", path: "a.md", device: alice.device, counter: 2)
      .hexString
    out["voucher_alice"] = vouched[alice.device]!.hexString
    out["voucher_bob"] = vouched[bob.device]!.hexString
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
          version: version, vouchers: vouched, origin: alice.device)
      ]))
    out["have_plaintext"] = have.hexString
    out["have_frame"] = SecureChannel.sealFrame(have, counter: 2, key: ir).hexString
    // The responder's control frame 0 (section 5): frames 0 to 2 taken,
    // 4 and 6 held, and parts 0, 2 and 3 of frame 3; the rest asked for
    // again; 7 K-frames sent, 70 credits granted.
    out["control_plaintext"] = FrameRecovery.Holding(frames: [0x05], parts: [0: [0x0d]]).bytes.hexString
    out["control_frame"] = FrameRecovery.seal(
      FrameRecovery.Holding(frames: [0x05], parts: [0: [0x0d]]).bytes,
      header: FrameRecovery.Header(
        marker: FrameRecovery.controlMarker, number: 0, ack: 3,
        report: FlowReport(framesSent: 7, creditsGranted: 70), flags: FrameRecovery.resendFlag),
      key: ri
    ).hexString
    // Section 5, "Key updates": the initiator's key of phase 1, and PONG
    // as its frame 3 in phase 1.
    let nextIR = FrameRecovery.nextKey(ir)
    out["k_initiator_to_responder_phase1"] = nextIR.hexString
    out["phase1_frame"] = FrameRecovery.seal(
      plaintext(.pong),
      header: FrameRecovery.Header(
        marker: FrameRecovery.dataMarker, phase: 1, number: 3, ack: 0,
        report: FlowReport(framesSent: 0, creditsGranted: 0), flags: 0),
      key: nextIR
    ).hexString
    // The NOTE of frame 5 sent again in parts (section 5, "Parts"): part 1.
    out["part_frame"] = Self.parts(of: plain, number: 5, key: ir)[1].hexString
    let entry = HandoffIndexEntry(
      activityType: "org.example.notes", path: "a.md", hash: payload.hash, size: 5,
      version: version, vouchers: vouched, origin: alice.device)
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
    var tombstone = StoredNote.tombstone(
      of: entry, version: VersionVector([alice.device: 3, bob.device: 1]), origin: alice.device
    ).entry
    tombstone.vouchers = vouchers("a.md", tombstone.version)
    out["tombstone_fingerprint"] =
      IndexSummary.fingerprint(
        type: tombstone.activityType, path: tombstone.path, hash: tombstone.hash, deleted: true,
        key: keys.summary
      ).bytes.hexString
    let gone = HandoffMessage.gone([tombstone])
    out["gone"] = ([gone.kind.rawValue] + gone.body).hexString
    let renamed = HandoffIndexEntry(
      activityType: "org.example.notes", path: "b.md", hash: payload.hash, size: 5,
      version: VersionVector([alice.device: 1]),
      vouchers: vouchers("b.md", VersionVector([alice.device: 1])), origin: alice.device)
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

  /// The parts the frame layer sends for data frame `number` (its
  /// plaintext `plain`) when the peer asks for it again: a sender that
  /// sealed frames 0 to `number`, asked from `number` on.
  static func parts(of plain: [UInt8], number: UInt64, key: [UInt8]) -> [[UInt8]] {
    let peerKey = [UInt8](repeating: 0xee, count: 32)
    let none = FlowReport(framesSent: 0, creditsGranted: 0)
    var sender = FrameRecovery(sendKey: key, receiveKey: peerKey, messageSize: 2048)
    let now = ContinuousClock.now
    for _ in 0..<number { _ = sender.sealData([14, 0], report: none, now: now) }
    _ = sender.sealData(plain, report: none, now: now)
    let request = FrameRecovery.seal(
      [],
      header: FrameRecovery.Header(
        marker: FrameRecovery.controlMarker, number: 0, ack: number, report: none,
        flags: FrameRecovery.resendFlag),
      key: peerKey)
    return sender.receive(request, report: none, now: now).resend
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
    let shared = try #require([UInt8](hexString: Self.expected["hs_shared"]!))
    #expect(
      SecureChannel.openChallengeResponse(m2, hello: m1, shared: shared, keys: keys)
        == .identity(bob.peer))
    #expect(
      SecureChannel.openResponse(m3, hello: m1, challengeResponse: m2, shared: shared, keys: keys)
        == .identity(alice.peer))
    // Bound to the other messages: a different M1 breaks M2 and M3.
    var otherM1 = m1
    otherM1[5] ^= 1
    #expect(
      SecureChannel.openChallengeResponse(m2, hello: otherM1, shared: shared, keys: keys)
        == .sealBroken)
    #expect(
      SecureChannel.openResponse(
        m3, hello: otherM1, challengeResponse: m2, shared: shared, keys: keys) == .sealBroken)
    // The group key alone opens neither (forward-secret identities).
    var guess = shared
    guess[0] ^= 1
    #expect(
      SecureChannel.openChallengeResponse(m2, hello: m1, shared: guess, keys: keys) == .sealBroken)
    #expect(
      SecureChannel.openResponse(m3, hello: m1, challengeResponse: m2, shared: guess, keys: keys)
        == .sealBroken)
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
