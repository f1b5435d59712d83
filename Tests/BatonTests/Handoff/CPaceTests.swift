import Foundation
import Testing

@testable import BatonHandoff
@testable import BatonSystem

/// The CPACE-RISTR255-SHA512 test vectors of draft-irtf-cfrg-cpace, as listed
/// in PROTOCOL.md ("Pairing primitive: CPace"), checked against `CPace`.
/// Tests/Scripts/verify-cpace-vectors.py checks the same values independently.
@Suite struct CPaceTests {
  static let expected: [String: String] = [
    "cpace_prs": "50617373776f7264",
    "cpace_ci": "0b415f696e69746961746f720b425f726573706f6e646572",
    "cpace_sid": "7e4b4791d6a8ef019b936c79fb7f2c57",
    "cpace_generator_string":
      "11435061636552697374726574746f3235350850617373776f726464"
      + String(repeating: "0", count: 200)
      + "180b415f696e69746961746f720b425f726573706f6e646572107e4b4791d6a8ef019b936c79fb7f2c57",
    "cpace_generator_hash":
      "da6d3ddc8802fca9058755ffd3ebde08a9c2c74945901a258482a288b6663af06bf645c93cd1c51512307199c80e84908916d983b34af77205f90851a657ee27",
    "cpace_g": "222b6b195fe84b1652badb6f6a3ae3d24341e7306967f0b8115b40d5698c7e56",
    "cpace_ada": "414461",
    "cpace_ya": "da3d23700a9e5699258aef94dc060dfda5ebb61f02a5ea77fad53f4ff0976d08",
    "cpace_Ya": "d6bac480f2c386c394efc7c47adb9925dcd2630b64f240c50f8d0eec482b9157",
    "cpace_adb": "414462",
    "cpace_yb": "d2316b454718c35362d83d69df6320f38578ed5984651435e2949762d900b80d",
    "cpace_Yb": "3ea7e0b19560d7c0b0f5734f63b955286dfa8232b5ebe63324e2d9e7433f7258",
    "cpace_K": "80b69a8a76457ab6a4d7f887a4bf6b55a2f80ac19c333f917a05fc9887c8b40f",
    "cpace_transcript_ir":
      "20d6bac480f2c386c394efc7c47adb9925dcd2630b64f240c50f8d0eec482b915703414461203ea7e0b19560d7c0b0f5734f63b955286dfa8232b5ebe63324e2d9e7433f725803414462",
    "cpace_isk_input":
      "15435061636552697374726574746f3235355f49534b107e4b4791d6a8ef019b936c79fb7f2c572080b69a8a76457ab6a4d7f887a4bf6b55a2f80ac19c333f917a05fc9887c8b40f20d6bac480f2c386c394efc7c47adb9925dcd2630b64f240c50f8d0eec482b915703414461203ea7e0b19560d7c0b0f5734f63b955286dfa8232b5ebe63324e2d9e7433f725803414462",
    "cpace_isk_ir":
      "b69effbf61b51d56401c0f65601abe428de8206feaaf0e32198896dcae7b35cd2b38950a39dfd5d4a79164614c2984f7daa460b588c1e80c3fa2068af7900447",
    "cpace_mult_s": "7cd0e075fa7955ba52c02759a6c90dbbfc10e6d40aea8d283e407d88cf538a05",
    "cpace_mult_X": "2c3c6b8c4f3800e7aef6864025b4ed79bd599117e427c41bd47d93d654b4a51c",
    "cpace_mult_sX": "7c13645fe790a468f62c39beb7388e541d8405d1ade69d1778c5fe3e7f6b600e",
    "cpace_invalid_Y1": "2b3c6b8c4f3800e7aef6864025b4ed79bd599117e427c41bd47d93d654b4a51c",
    "cpace_identity": "0000000000000000000000000000000000000000000000000000000000000000",
  ]

  static func bytes(_ name: String) -> [UInt8] { [UInt8](hexString: expected[name]!)! }

  static func vectorSide(_ role: CPace.Role) throws -> CPace {
    try CPace(
      role: role, password: bytes("cpace_prs"), sid: bytes("cpace_sid"),
      channel: bytes("cpace_ci"),
      associatedData: bytes(role == .initiator ? "cpace_ada" : "cpace_adb"),
      scalar: bytes(role == .initiator ? "cpace_ya" : "cpace_yb"))
  }

  @Test func everyIntermediateValueMatchesTheDraft() throws {
    let prs = Self.bytes("cpace_prs")
    let ci = Self.bytes("cpace_ci")
    let sid = Self.bytes("cpace_sid")
    let string = CPace.generatorString(password: prs, channel: ci, sid: sid)
    #expect(string.count == 170)
    #expect(string.hexString == Self.expected["cpace_generator_string"])
    #expect(CPace.sha512(string).hexString == Self.expected["cpace_generator_hash"])
    #expect(
      try CPace.generator(password: prs, channel: ci, sid: sid).hexString
        == Self.expected["cpace_g"])
    let a = try Self.vectorSide(.initiator)
    let b = try Self.vectorSide(.responder)
    #expect(a.share.hexString == Self.expected["cpace_Ya"])
    #expect(b.share.hexString == Self.expected["cpace_Yb"])
    #expect(try CPace.multiply(Self.bytes("cpace_ya"), b.share).hexString == Self.expected["cpace_K"])
    #expect(try CPace.multiply(Self.bytes("cpace_yb"), a.share).hexString == Self.expected["cpace_K"])
    #expect(
      try CPace.multiply(Self.bytes("cpace_mult_s"), Self.bytes("cpace_mult_X")).hexString
        == Self.expected["cpace_mult_sX"])
    let transcript = CPace.transcriptIR(
      ya: a.share, adA: Self.bytes("cpace_ada"), yb: b.share, adB: Self.bytes("cpace_adb"))
    #expect(transcript.hexString == Self.expected["cpace_transcript_ir"])
    #expect(
      (CPace.lvCat([CPace.dsiISK, sid, Self.bytes("cpace_K")]) + transcript).hexString
        == Self.expected["cpace_isk_input"])
    let iskA = try a.finish(peerShare: b.share, peerAssociatedData: Self.bytes("cpace_adb"))
    let iskB = try b.finish(peerShare: a.share, peerAssociatedData: Self.bytes("cpace_ada"))
    #expect(iskA.hexString == Self.expected["cpace_isk_ir"])
    #expect(iskB.hexString == Self.expected["cpace_isk_ir"])
  }

  @Test func prependLengthIsLEB128() {
    #expect(CPace.prependLength([]) == [0])
    #expect(CPace.prependLength([UInt8](repeating: 7, count: 127)).prefix(1) == [0x7f])
    #expect(CPace.prependLength([UInt8](repeating: 7, count: 128)).prefix(2) == [0x80, 0x01])
    #expect(CPace.prependLength([UInt8](repeating: 7, count: 300)).prefix(2) == [0xac, 0x02])
    // A password longer than a hash block: no padding, no trap.
    let long = [UInt8](repeating: 0x41, count: 200)
    let string = CPace.generatorString(password: long, channel: [], sid: [])
    #expect(string == CPace.lvCat([CPace.dsi, long, [], [], []]))
  }

  static func exchange(codeA: String, codeB: String, adA: String = "a", adB: String = "b")
    throws -> ([UInt8], [UInt8])
  {
    let sid = (0..<16).map { UInt8($0) }
    let ci = Array("ci".utf8)
    let a = try CPace(
      role: .initiator, password: Array(codeA.utf8), sid: sid, channel: ci,
      associatedData: Array(adA.utf8))
    let b = try CPace(
      role: .responder, password: Array(codeB.utf8), sid: sid, channel: ci,
      associatedData: Array(adB.utf8))
    #expect(a.share != b.share)
    let iskA = try a.finish(peerShare: b.share, peerAssociatedData: Array(adB.utf8))
    let iskB = try b.finish(peerShare: a.share, peerAssociatedData: Array(adA.utf8))
    return (iskA, iskB)
  }

  @Test func twoSidesWithOneCodeAgreeOnTheKey() throws {
    let (iskA, iskB) = try Self.exchange(codeA: "4821-tiger", codeB: "4821-tiger")
    #expect(iskA.count == CPace.iskBytes)
    #expect(iskA == iskB)
    // Fresh scalars: a second run gives another key.
    let (again, _) = try Self.exchange(codeA: "4821-tiger", codeB: "4821-tiger")
    #expect(again != iskA)
  }

  @Test func aWrongCodeGivesDifferentKeys() throws {
    let (iskA, iskB) = try Self.exchange(codeA: "4821-tiger", codeB: "4822-tiger")
    #expect(iskA != iskB)
  }

  @Test func associatedDataIsBoundIntoTheKey() throws {
    let sid = [UInt8](repeating: 9, count: 16)
    let a = try CPace(
      role: .initiator, password: [1, 2, 3], sid: sid, channel: [], associatedData: [1])
    let b = try CPace(
      role: .responder, password: [1, 2, 3], sid: sid, channel: [], associatedData: [2])
    let iskA = try a.finish(peerShare: b.share, peerAssociatedData: [3])  // not what B sent
    let iskB = try b.finish(peerShare: a.share, peerAssociatedData: [1])
    #expect(iskA != iskB)
  }

  @Test func badSharesAreRefused() throws {
    let cases: [([UInt8], CPace.Failure)] = [
      (Self.bytes("cpace_identity"), .shareIsIdentity),
      (Self.bytes("cpace_invalid_Y1"), .shareNotAnElement),
      ([UInt8](repeating: 0xff, count: 32), .shareNotAnElement),
      ([], .shareLength(0)),
      (Array(Self.bytes("cpace_Yb").prefix(31)), .shareLength(31)),
      (Self.bytes("cpace_Yb") + [0], .shareLength(33)),
    ]
    for (share, failure) in cases {
      let a = try Self.vectorSide(.initiator)
      #expect(throws: failure) {
        try a.finish(peerShare: share, peerAssociatedData: Self.bytes("cpace_adb"))
      }
      // The attempt is spent: even a good share is now refused.
      #expect(throws: CPace.Failure.alreadyFinished) {
        try a.finish(peerShare: Self.bytes("cpace_Yb"), peerAssociatedData: [])
      }
    }
    #expect(throws: CPace.Failure.shareNotAnElement) {
      try CPace.multiply(Self.bytes("cpace_ya"), Self.bytes("cpace_invalid_Y1"))
    }
    #expect(throws: CPace.Failure.identityResult) {
      try CPace.multiply(Self.bytes("cpace_ya"), Self.bytes("cpace_identity"))
    }
    #expect(CPace.Failure.shareIsIdentity.description.contains("identity"))
  }

  @Test func protocolDocumentListsTheSameVectors() throws {
    let documented = try documentedVectors(Set(Self.expected.keys)).mapValues {
      $0.replacingOccurrences(of: " ", with: "")
    }
    #expect(documented == Self.expected)
  }

  /// The independent check: pure Python (hashlib and RFC 9496 written out)
  /// recomputes every vector from the document alone.
  @Test func pythonRecomputesTheDocumentedVectors() throws {
    let (status, lines) = try runVectorScript("verify-cpace-vectors.py")
    #expect(status == 0, "\(lines.joined(separator: "\n"))")
    #expect(lines.last == "all CPace vectors verified")
    #expect(lines.filter { $0.hasPrefix("ok ") }.count >= 10)
  }
}
