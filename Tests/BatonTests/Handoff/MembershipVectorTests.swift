import Foundation
import Testing

@testable import BatonHandoff
@testable import BatonSystem

/// The membership vectors of PROTOCOL.md section 13, frozen here and checked
/// against `MembershipRecord` and `Membership`.
/// Tests/Scripts/verify-member-vectors.py checks the same values independently.
@Suite struct MembershipVectorTests {
  static let expected: [String: String] = [
    "member_alice_key": "db995fe25169d141cab9bbba92baa01f9f2e1ece7df4cb2ac05190f37fcc1f9d",
    "member_alice_id": "b82a0f0caf532b6b",
    "member_bob_key": "2152f8d19b791d24453242e15f2eab6cb7cffa7b6a5ed30097960e069881db12",
    "member_bob_id": "91ce7f33aa172b3c",
    "member_carol_key": "22fc297792f0b6ffc0bfcfdb7edb0c0aa14e025a365ec0e342e86e3829cb74b6",
    "member_carol_id": "53a0005eff5adb2f",
    "member_found":
      "01db995fe25169d141cab9bbba92baa01f9f2e1ece7df4cb2ac05190f37fcc1f9d0500616c69636500f15365000000001b872e3ba8f149cc314ed1000afa1eb4f72c7541a69faad6b538279694077871eb9504880563bb482f1c6208db4e82b3a8c3a0aba6f843bec5da32bea743220f",
    "member_add_bob":
      "022152f8d19b791d24453242e15f2eab6cb7cffa7b6a5ed30097960e069881db120300626f62b82a0f0caf532b6b0000000064f1536500000000a7f8acf07e6e96073de67c16f77aa37125d6cc90fbb9c54c7f4feb3eb617b93cac4182820aa959670bb11779887b084cdc949926733a8d4d7a685f74fa09380e",
    "member_add_carol":
      "0222fc297792f0b6ffc0bfcfdb7edb0c0aa14e025a365ec0e342e86e3829cb74b605006361726f6c91ce7f33aa172b3c00000000c8f1536500000000111f6141f26a4fb4da86e6c3f30d69a56cd0bd77fddf8e2b37de5e77ff1992958fafe8a6de5e57a35037b72cb0417a52a3ca54496230b159f6739fe8b52fc203",
    "member_remove_carol":
      "0353a0005eff5adb2fb82a0f0caf532b6b000000002cf2536500000000ae125483f4e2959009c5af2cf15dd0ebff0d88b57ec5103e7348f17a8e6842590ef916dc2d0affa2aac48e68c9a2379a7820a8cbf01eea3a2330a6e5ef698508",
    "member_rekey_alice":
      "0401000000b82a0f0caf532b6b020091ce7f33aa172b3c50000000e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0b82a0f0caf532b6b50000000e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e19253cec17fab28127d96e1ae892eb229ca659d705e72135f8bebf2cf2bad01046fea6c59959b7c15345e96ff9369162a9feef044d619c2f0cff41177a9b66302",
    "member_rekey_bob":
      "040100000091ce7f33aa172b3c020091ce7f33aa172b3c50000000e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2b82a0f0caf532b6b50000000e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e3e37de80b46b99bb10ac50f711d455724d3bebcbc26b80cf1d84b36c4fc9c9a902785807579a660f7b2cd2a7e7bc0896d694beb0424416c0f3f038955e964c21a04",
    "member_set_digest": "840620e78ed251fce220f6ac07187b72d91946204069bb6a08675c20a4cc44c5",
    "member_rekey_winner": "83dd5a4698a7754b62dffdcfaee7650ea81f31a7db7ade7395455e6f4e16e361",
  ]

  static let alice = DeviceKey(seed: [UInt8](repeating: 0x41, count: 32))!
  static let bob = DeviceKey(seed: [UInt8](repeating: 0x42, count: 32))!
  static let carol = DeviceKey(seed: [UInt8](repeating: 0x43, count: 32))!

  static func records() -> [String: MembershipRecord] {
    let (alice, bob, carol) = (Self.alice, Self.bob, Self.carol)
    let (low, high) = (min(alice.deviceID, bob.deviceID), max(alice.deviceID, bob.deviceID))
    func rekey(by key: DeviceKey, _ first: UInt8, _ second: UInt8) -> MembershipRecord {
      .signed(
        .rekey(
          epoch: 1, signer: key.deviceID,
          secrets: [
            .init(device: low, sealed: Array(repeating: first, count: 80)),
            .init(device: high, sealed: Array(repeating: second, count: 80)),
          ]), by: key)
    }
    return [
      "member_found": .signed(
        .found(subject: alice.publicKey, name: "alice", wallTime: 1_700_000_000), by: alice),
      "member_add_bob": .signed(
        .add(
          subject: bob.publicKey, name: "bob", sponsor: alice.deviceID, epoch: 0,
          wallTime: 1_700_000_100), by: alice),
      "member_add_carol": .signed(
        .add(
          subject: carol.publicKey, name: "carol", sponsor: bob.deviceID, epoch: 0,
          wallTime: 1_700_000_200), by: bob),
      "member_remove_carol": .signed(
        .remove(subject: carol.deviceID, signer: alice.deviceID, epoch: 0, wallTime: 1_700_000_300),
        by: alice),
      "member_rekey_alice": rekey(by: alice, 0xe0, 0xe1),
      "member_rekey_bob": rekey(by: bob, 0xe2, 0xe3),
    ]
  }

  static func computed() -> [String: String] {
    var got: [String: String] = [:]
    for (name, key) in [("alice", alice), ("bob", bob), ("carol", carol)] {
      got["member_\(name)_key"] = key.publicKey.bytes.hexString
      var id: [UInt8] = []
      id.appendLE(key.deviceID.rawValue)
      got["member_\(name)_id"] = id.hexString
    }
    let records = records()
    for (name, record) in records { got[name] = record.encoded.hexString }
    var view = Membership(device: alice)
    _ = view.insert(Array(records.values))
    got["member_set_digest"] = view.digest.hexString
    got["member_rekey_winner"] = view.state.winners[1]?.digest.hexString
    return got
  }

  @Test func theCodeComputesTheFrozenVectors() {
    let got = Self.computed()
    for (name, value) in Self.expected {
      #expect(got[name] == value, "vector \(name)")
    }
    #expect(got.count == Self.expected.count)
  }

  @Test func protocolDocumentListsTheSameVectors() throws {
    let documented = try documentedVectors(Set(Self.expected.keys))
    #expect(documented == Self.expected)
  }

  /// The independent check: Python's hashlib and `cryptography` (Ed25519)
  /// rebuild every record from the document alone and verify its signature.
  @Test func pythonRecomputesTheDocumentedVectors() throws {
    let (status, lines) = try runVectorScript("verify-member-vectors.py")
    #expect(status == 0, "\(lines.joined(separator: "\n"))")
    #expect(lines.last == "all vectors verified")
    #expect(lines.filter { $0.hasPrefix("ok ") }.count == Self.expected.count)
  }

  @Test func theVectorRecordsDecodeVerifyAndGiveTheDocumentedState() throws {
    var decoded: [MembershipRecord] = []
    let signers = [
      "member_found": Self.alice, "member_add_bob": Self.alice, "member_add_carol": Self.bob,
      "member_remove_carol": Self.alice, "member_rekey_alice": Self.alice,
      "member_rekey_bob": Self.bob,
    ]
    for (name, signer) in signers {
      let bytes = try #require([UInt8](hexString: Self.expected[name]!))
      let record = try MembershipRecord(decoding: bytes)
      #expect(record.encoded == bytes, "\(name) re-encodes")
      #expect(record.verifies(with: signer.publicKey), "\(name) verifies")
      #expect(
        !record.verifies(with: Self.carol.publicKey) || signer.deviceID == Self.carol.deviceID)
      decoded.append(record)
    }
    for order in [decoded, decoded.reversed()] {
      var view = Membership(device: Self.bob)
      _ = view.insert(order)
      #expect(view.epoch == 1)
      #expect(view.memberIDs == [Self.alice.deviceID, Self.bob.deviceID])
      #expect(view.removal(of: Self.carol.deviceID)?.by == Self.alice.deviceID)
      #expect(!view.needsRekey)
      #expect(view.digest.hexString == Self.expected["member_set_digest"])
      #expect(view.state.winners[1]?.digest.hexString == Self.expected["member_rekey_winner"])
      #expect(view.epochSecret == nil)  // stand-in seals open for nobody
    }
  }
}
