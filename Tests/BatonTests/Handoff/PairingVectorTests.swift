import Foundation
import Testing

@testable import BatonHandoff
@testable import BatonSystem

/// The pairing vectors of PROTOCOL.md section 14.9: a whole exchange with
/// fixed randomness, run through `PairingNewcomer` and `PairingMember`.
/// Tests/Scripts/verify-pairing-vectors.py recomputes the same values from
/// the document alone.
@Suite struct PairingVectorTests {
  static let memberSeed = (0..<32).map { UInt8($0) }
  static let newcomerSeed = (0..<32).map { UInt8(0x20 + $0) }
  static let sid = (0..<16).map { UInt8(0x40 + $0) }
  static let code = PairingCode(slot: 7, secret: 42913)!
  static let enrolment = (0..<300).map { UInt8(truncatingIfNeeded: $0) }
  static let messageSize = 200

  /// Every value of the fixed run, hex (fingerprints as printed).
  static func run() throws -> [String: String] {
    let member = PairingIdentity(name: "alice", key: DeviceKey(seed: memberSeed)!.publicKey)
    let newcomer = PairingIdentity(name: "carol", key: DeviceKey(seed: newcomerSeed)!.publicKey)
    let ya = CPaceTests.bytes("cpace_ya")
    let yb = CPaceTests.bytes("cpace_yb")
    var n = try PairingNewcomer(code: code, me: newcomer, sid: sid, scalar: ya)
    var m = PairingMember(code: code, me: member, scalar: yb)
    var out: [String: String] = [:]
    out["pair_member_key"] = member.key.bytes.hexString
    out["pair_newcomer_key"] = newcomer.key.bytes.hexString
    out["pair_member_fingerprint"] = member.fingerprint
    out["pair_newcomer_fingerprint"] = newcomer.fingerprint
    out["pair_prs"] = code.password.hexString
    out["pair_ci"] = PairingMessage.channel(slot: code.slot).hexString
    out["pair_sid"] = sid.hexString
    let ada = PairingMessage.associatedData(newcomer)
    let adb = PairingMessage.associatedData(member)
    out["pair_ada"] = ada.hexString
    out["pair_adb"] = adb.hexString
    // The ISK and its keys, from CPace directly with the same inputs.
    let a = try CPace(
      role: .initiator, password: code.password, sid: sid,
      channel: PairingMessage.channel(slot: code.slot), associatedData: ada, scalar: ya)
    let b = try CPace(
      role: .responder, password: code.password, sid: sid,
      channel: PairingMessage.channel(slot: code.slot), associatedData: adb, scalar: yb)
    out["pair_Ya"] = a.share.hexString
    out["pair_Yb"] = b.share.hexString
    let isk = try a.finish(peerShare: b.share, peerAssociatedData: adb)
    out["pair_isk"] = isk.hexString
    let keys = PairingMessage.Keys(isk: isk)
    out["pair_k_confirm_m"] = keys.confirmMember.hexString
    out["pair_k_confirm_n"] = keys.confirmNewcomer.hexString
    out["pair_k_enrol"] = keys.enrol.hexString
    out["pair_k_ack"] = keys.acknowledge.hexString
    // The exchange itself.
    out["pair_p1"] = n.hello.hexString
    guard case .send(let p2) = m.receive(n.hello), p2.count == 1,
      case .send(let p3) = n.receive(p2[0]), p3.count == 1,
      case .enrol(let who) = m.receive(p3[0]), who == newcomer,
      case .send(let p4) = m.enrol(enrolment, messageSize: messageSize), p4.count == 2
    else { throw PairingError.refusedByMember }
    out["pair_p2"] = p2[0].hexString
    out["pair_p3"] = p3[0].hexString
    out["pair_p4_0"] = p4[0].hexString
    out["pair_p4_1"] = p4[1].hexString
    guard case .send([]) = n.receive(p4[0]),
      case .finished(let p5, let joined) = n.receive(p4[1]), p5.count == 1,
      joined.enrolment == enrolment, joined.peer == member,
      case .finished([], let enrolled) = m.receive(p5[0]), enrolled.peer == newcomer
    else { throw PairingError.refusedByMember }
    out["pair_p5"] = p5[0].hexString
    return out
  }

  static let names: Set<String> = [
    "pair_member_key", "pair_newcomer_key", "pair_member_fingerprint",
    "pair_newcomer_fingerprint", "pair_prs", "pair_ci", "pair_sid", "pair_ada", "pair_adb",
    "pair_Ya", "pair_Yb", "pair_isk", "pair_k_confirm_m", "pair_k_confirm_n", "pair_k_enrol",
    "pair_k_ack", "pair_p1", "pair_p2", "pair_p3", "pair_p4_0", "pair_p4_1", "pair_p5",
  ]

  @Test func theCodeProducesTheDocumentedExchange() throws {
    let computed = try Self.run()
    #expect(Set(computed.keys) == Self.names)
    if ProcessInfo.processInfo.environment["PAIRING_VECTORS_PRINT"] != nil {
      for name in computed.keys.sorted() {
        print(name.padding(toLength: 25, withPad: " ", startingAt: 0) + " = " + computed[name]!)
      }
    }
    let documented = try documentedVectors(Self.names)
    for name in Self.names.sorted() {
      #expect(documented[name] == computed[name], "\(name)")
    }
  }

  /// The independent check: Python (hashlib, `cryptography`, ristretto255
  /// and HChaCha20 written out) recomputes every vector from the document.
  @Test func pythonRecomputesTheDocumentedVectors() throws {
    let (status, lines) = try runVectorScript("verify-pairing-vectors.py")
    #expect(status == 0, "\(lines.joined(separator: "\n"))")
    #expect(lines.last == "all pairing vectors verified")
    #expect(lines.filter { $0.hasPrefix("ok ") }.count >= Self.names.count)
  }
}
