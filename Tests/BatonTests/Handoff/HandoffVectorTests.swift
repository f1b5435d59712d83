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
    "k_identity_r": "22ae685e009a0f0d48526970e362e5602e4aaa94ec66ea2a4eb0c730c93e1265",
    "k_identity_i": "0c81f9df890ee480cd6611c822dd37f6cdafd73ea1ab837e73d295ae3c730cb0",
    "hs_m1": "010b38ab664bd86f77d7e66bdd9ae0792913a94fd8b33a1260027e4b46c1f4884c67",
    "hs_m2":
      "020b219e4d800da968d2a5fcb009c784f4746c7138edb9ee4844b739e830b05cf4243333333333333333333333333333333333333333333333334c2b82d7d951dd667a53f4ba9d3ce15e7d49d5d8c068017d4831d9772f6ab0ad90df5472d3255e2380d12eaa2d94f4d7b642b9b20916205190a6a055319a4a3574d03f6cb81a5517fd0b0695b40e0a6b792462359ce11efe3f5b45d06ab6acc372acafa704700d7805cbb3c665529ecb72c2cf4d9f",
    "hs_m3":
      "03444444444444444444444444444444444444444444444444709729b981d586bb0ea9515458841d01d8a266106f84b6d37d0b64705853d737ce8abdf20a283a3609484c33bac95a99f3ee1a795f840d5728d15a19561aed9ad0af06683636ebaabb17ca17ede12a32835ce3f64fb32135263a985ffed473e672fee5c505ae6f051b08d941130409f16056c61a34e5c5",
    "k_initiator_to_responder": "355b135b85f2756e5fb55b434c6a8bfa21d396e73fadf864c417ccf7b7e5454e",
    "k_responder_to_initiator": "2699f616d188a4bc03cf58ba5c6da497a222da641361a7f0f932d5d5b2358daf",
    "content_hash": "d6db14addfa6dbf2aff4cbd2e69a374fa9bf90b1d65f00c4617101f3a2f087e8",
    "version_vector": "02005f73d65dbe2e3019020000000000000078177288f3c4a7f40100000000000000",
    "voucher_message_alice": "6261746f6e2d766f7563682d3111006f72672e6578616d706c652e6e6f7465730400612e6d645f73d65dbe2e30190200000000000000",
    "voucher_alice": "a2f887b06149b41d5cacbfd3069f9465f0e62993aa40708f8f0db39691bd52f126c93516e167e96ca3a101f58cac767dd855543c28551c384684b4d604245a08",
    "voucher_bob": "188c93dd1fd439820ca1c60910ef584be04dd63bb6f3baa3c5dc1dd8f6c30fcd7195f30e061c1528cb8f7dfa7ee38d3deb1dfd0310265b1844f5ea3a0794f80b",
    "frame_plaintext":
      "060011006f72672e6578616d706c652e6e6f746573020048690400612e6d6402005f73d65dbe2e3019020000000000000078177288f3c4a7f4010000000000000002005f73d65dbe2e3019a2f887b06149b41d5cacbfd3069f9465f0e62993aa40708f8f0db39691bd52f126c93516e167e96ca3a101f58cac767dd855543c28551c384684b4d604245a0878177288f3c4a7f4188c93dd1fd439820ca1c60910ef584be04dd63bb6f3baa3c5dc1dd8f6c30fcd7195f30e061c1528cb8f7dfa7ee38d3deb1dfd0310265b1844f5ea3a0794f80b5f73d65dbe2e30190500616c696365d6db14addfa6dbf2aff4cbd2e69a374fa9bf90b1d65f00c4617101f3a2f087e805000000232048690a",
    "frame":
      "110500000000000000000000000000000000000000000000000054246a6d190dd81e4a397c002a1ce9c4876617acde0aedaaa430b56fdb98f19a63cef34f76c403d91f4c10429649134d6153ef09d9807a3207f646b79c8140ac7c82c09c7ebc641a01ca927f232bc7c6d067afffac2069dcb8581945fe929cc64e319e26b9e2d360cf254c028757c510c031f14dcb1b5caae508950f320a19195a0c21b04536c99c8e09a2fd3fc4d50d5bbbbeafa272631da0fc48f808248136cc6bf2d8d061f7b274e98344c6527a0d148ee443d5856d56743252c2c8d4988983c12166b869e7d5efdf64101372be4e318441cecaec70364b26a1329f7db797f3690d50e97c4c5d78c798f560d79ce2fd3f73c93520eb5883221c4f5e170e4344e4e506a681344bf1da879625470369aa3600a4a9eeee6eaefe73",
    "link_plaintext": "0d0000001000010100000011006f72672e6578616d706c652e6e6f7465730400612e6d64d6db14addfa6dbf2aff4cbd2e69a374fa9bf90b1d65f00c4617101f3a2f087e8050000000000000002005f73d65dbe2e3019020000000000000078177288f3c4a7f4010000000000000002005f73d65dbe2e3019a2f887b06149b41d5cacbfd3069f9465f0e62993aa40708f8f0db39691bd52f126c93516e167e96ca3a101f58cac767dd855543c28551c384684b4d604245a0878177288f3c4a7f4188c93dd1fd439820ca1c60910ef584be04dd63bb6f3baa3c5dc1dd8f6c30fcd7195f30e061c1528cb8f7dfa7ee38d3deb1dfd0310265b1844f5ea3a0794f80b5f73d65dbe2e301900",
    "link_frame":
      "11000000000000000000000000000000000000000000000000000a3b8e2269b028ac7bbab8ba434f2c2b4f9e226885a2e004dcfb87ce1ff5f0d016e9b93527cbc6096095f381a0ecfe0cf3e262b10ba09d50182f62058022c2b385143dd8bfa448af67db6b7d1997709ccd81aafe3b18a95f4afb2a8dbcef4546ac6172411b38768267af91e1801a7819b26c20ba50fd9960e7ccb5b759f7baa1745439ab7d8b54b6107f6441e2ee0df3aaecb79069b2b4b82c47186ab7b33e7d667f905f4d22d2ab4a0c742d6149e3271dcf176d64612e7c52ddae4d5b0177a06c48f9f27d94ed7f493ef7d61b8d7493d00d182f9d88276a9090e7113c5a6d2a6369ab0eadf52a621c89440d401b477869aefbc987016180ba954394d84b6d491b27bedb4b60073631f2cc590d2d07a8320ca5021f2fd3e850",
    "ping_frame":
      "1100000000000000000000000000000000000000000000000000ee26daacd2bd167854e69a047ca32a160c5e",
    "pong_frame":
      "1101000000000000000000000000000000000000000000000000f406d017b831eaa3b8778ca7e769a8418fdc",
    "have_plaintext":
      "10000100000011006f72672e6578616d706c652e6e6f7465730400612e6d64d6db14addfa6dbf2aff4cbd2e69a374fa9bf90b1d65f00c4617101f3a2f087e8050000000000000002005f73d65dbe2e3019020000000000000078177288f3c4a7f4010000000000000002005f73d65dbe2e3019a2f887b06149b41d5cacbfd3069f9465f0e62993aa40708f8f0db39691bd52f126c93516e167e96ca3a101f58cac767dd855543c28551c384684b4d604245a0878177288f3c4a7f4188c93dd1fd439820ca1c60910ef584be04dd63bb6f3baa3c5dc1dd8f6c30fcd7195f30e061c1528cb8f7dfa7ee38d3deb1dfd0310265b1844f5ea3a0794f80b5f73d65dbe2e301900",
    "have_frame":
      "1102000000000000000000000000000000000000000000000000e75998b53e440c9afdcf0799322740260a443e4445c74e87c80c5134bce15d4ba0723ffd96c2285be0283bf12a28fa9c4f48dddd4466efaaf72e9816320e106ede25aa20772672a907da09f3d9d6f58f2daa5dbb15b545890569ef80f3619c5aac3a887a324244848abae6f59926cec18513428f7afb73a5b8cd15cc4dcc4bbabec3f9c41e82555b7c3ba3928720a6e1f76c5913fc79dd0ebd96b2aa63e9ad2866b086ed1cc6b5b636bf3da59e1776dc9e3f603463deaf1d0c52be76b0bf928611202e65c71ea7f04cdca5b7630af89b6336e1cea65bf9910e684ef4959c5999843582aad0f0d801d3d82f35bc5b97a795acb71f3d7919ae09b3bea1d757c9e8ab243049aaa89672bd511dd8e7f87696e577e427",
    "control_frame":
      "1200000000000000000300000000000000070000004600000001270b63a03fdc897355d7a30251a698e73607ecd49b89",
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
    "k_initiator_to_responder_phase1": "2c8d6d869a66ce9a5184a8dde0aff8fa3ea1c9e9214291a7344360e803c12329",
    "phase1_frame": "51030000000000000000000000000000000000000000000000004ba43c4bb19ee1e2dd9b060ff48e0c40cbb2",
    "part_frame": "1305000000000000000000000000000000000000000000000001f2fe7735696fcde416df4c9e72d5a9617e3cd4a3a672401b433036ad9ad0c9ddfb89a17f9583c64da07d85c29696d1c91e8b52da204b322fca3b656bd1071c87",
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
    // Links: LINK (with the root of an index holding only the NOTE's entry)
    // as the initiator's frame 0, PING as the responder's frame 0, PONG as
    // the initiator's frame 1, HAVE with that entry as its frame 2.
    func plaintext(_ message: HandoffMessage) -> [UInt8] {
      [message.kind.rawValue, 0] + message.body
    }
    let noteEntry = HandoffIndexEntry(
      activityType: "org.example.notes", path: "a.md", hash: payload.hash, size: 5,
      version: version, vouchers: vouched, origin: alice.device)
    let link = plaintext(.link(maxNoteSize: 1 << 20, root: .entries([noteEntry])))
    out["link_plaintext"] = link.hexString
    out["link_frame"] = SecureChannel.sealFrame(link, counter: 0, key: ir).hexString
    out["ping_frame"] = SecureChannel.sealFrame(plaintext(.ping), counter: 0, key: ri).hexString
    out["pong_frame"] = SecureChannel.sealFrame(plaintext(.pong), counter: 1, key: ir).hexString
    let have = plaintext(.have([noteEntry]))
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
