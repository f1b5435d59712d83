import Foundation
import Testing

@testable import BatonHandoff
@testable import BatonNotes
@testable import BatonSystem

/// Whether a peer's entry or note may be taken at all (PROTOCOL.md 7, 7.5),
/// as a plain value: no engine, no store, no actor.
@Suite struct EntryAdmissionTests {
  static let type = HandoffTestAgent.notesType
  let me = DeviceKey.generate()
  let peer = DeviceKey.generate()
  let folder = InMemoryNoteFolder()

  var admission: EntryAdmission {
    EntryAdmission(
      device: me.deviceID, maxNoteSize: 100,
      keys: [me.deviceID: me.publicKey, peer.deviceID: peer.publicKey])
  }

  func offered(
    _ version: VersionVector, path: String = "n.md", size: Int = 5, vouchers: Vouchers = Vouchers(),
    deleted: Bool = false
  ) -> HandoffIndexEntry {
    HandoffIndexEntry(
      activityType: Self.type, path: path, hash: ContentHash(of: Array("hello".utf8)), size: size,
      version: version, vouchers: vouchers, origin: peer.deviceID, deleted: deleted)
  }

  func signed(_ version: VersionVector, by key: DeviceKey, path: String = "n.md") -> Vouchers {
    Vouchers().signed(by: key, type: Self.type, path: path, version: version)
  }

  @Test func aVouchedEntryIsAdmittedWithTheVouchersKept() {
    let version = VersionVector([peer.deviceID: 2])
    let vouchers = signed(version, by: peer)
    #expect(
      admission.verdict(on: offered(version, vouchers: vouchers), folder: folder, local: nil)
        == .admitted(vouchers))
    // A voucher of a device whose key is not known here is dropped, not refused.
    let stranger = DeviceKey.generate()
    let theirs = VersionVector([stranger.deviceID: 1])
    #expect(
      admission.verdict(on: offered(theirs, vouchers: signed(theirs, by: stranger)), folder: folder, local: nil)
        == .admitted(Vouchers()))
  }

  @Test func aFolderNotDeclaredOrANoteTooLargeIsDeclined() {
    let version = VersionVector([peer.deviceID: 1])
    #expect(
      admission.verdict(on: offered(version), folder: nil, local: nil)
        == .declined("no folder declares activity type \(Self.type)"))
    #expect(
      admission.verdict(on: offered(version, size: 101), folder: folder, local: nil)
        == .declined("note of 101 bytes exceeds the 100-byte limit"))
    // A tombstone always fits: it carries no bytes.
    #expect(
      admission.verdict(on: offered(version, size: 101, deleted: true), folder: folder, local: nil)
        == .admitted(Vouchers()))
  }

  @Test func anUnsafePathIsRefusedAndANameTheFolderRefusesIsDeclined() throws {
    let version = VersionVector([peer.deviceID: 1])
    #expect(
      admission.verdict(on: offered(version, path: "../x.md"), folder: folder, local: nil)
        == .refused("bad payload: unsafe path '../x.md'"))
    let dir = FileManager.default.temporaryDirectory
      .appendingPathComponent("admission-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: false)
    defer { try? FileManager.default.removeItem(at: dir) }
    let notes = try NotesFolder(root: dir.path)
    guard case .declined(let reason) = admission.verdict(
      on: offered(version, path: "run.sh"), folder: notes, local: nil)
    else {
      Issue.record("a name the folder refuses is declined")
      return
    }
    #expect(reason.hasPrefix("the folder refuses the name: "))
  }

  @Test func aVersionThatCannotBeGenuineIsRefused() {
    // More changes by this device than it made.
    let forged = VersionVector([me.deviceID: 1])
    guard case .refused(let reason) = admission.verdict(on: offered(forged), folder: folder, local: nil)
    else {
      Issue.record("a forged counter of this device is refused")
      return
    }
    #expect(reason.hasPrefix("bad payload: forged version of n.md"))
    // A voucher that does not verify under its device's key.
    let raised = VersionVector([peer.deviceID: 3])
    let wrong = signed(VersionVector([peer.deviceID: 2]), by: peer)
    #expect(
      admission.verdict(on: offered(raised, vouchers: wrong), folder: folder, local: nil)
        == .refused(
          "bad payload: "
            + VoucherRefusal.doesNotVerify(path: "n.md", device: peer.deviceID, counter: 3)
            .description))
    // A raise without a voucher where the counter here has one.
    let local = offered(
      VersionVector([peer.deviceID: 2]), vouchers: signed(VersionVector([peer.deviceID: 2]), by: peer))
    #expect(
      admission.checkedVouchers(raised, Vouchers(), type: Self.type, path: "n.md", against: local)
        == .failure(.unvouchedRaise(path: "n.md", device: peer.deviceID, counter: 3, vouched: 2)))
    // Without a voucher here, the same raise is taken (a counter of before protocol 9).
    #expect(
      admission.checkedVouchers(
        raised, Vouchers(), type: Self.type, path: "n.md", against: offered(VersionVector([peer.deviceID: 2])))
        == .success(Vouchers()))
  }

  @Test func aNoteIsCheckedForItsBytesAsWell() {
    let version = VersionVector([peer.deviceID: 1])
    let text = Array("hello".utf8)
    func note(_ content: [UInt8], hash: ContentHash) -> ActivityPayload {
      ActivityPayload(
        activityType: Self.type, title: "hello", path: "n.md", version: version,
        origin: peer.deviceID, originName: "peer", hash: hash, content: content)
    }
    #expect(admission.verdict(on: note(text, hash: ContentHash(of: text)), folder: folder, local: nil) == .admitted(Vouchers()))
    #expect(
      admission.verdict(on: note(text, hash: ContentHash(of: text)), folder: nil, local: nil)
        == .declined("undeclared activity type"))
    let bad = "bad payload for n.md: hash, size, path or UTF-8 do not check"
    #expect(admission.verdict(on: note(text, hash: ContentHash(of: [1])), folder: folder, local: nil) == .refused(bad))
    let notUTF8: [UInt8] = [0xFF, 0xFE]
    #expect(admission.verdict(on: note(notUTF8, hash: ContentHash(of: notUTF8)), folder: folder, local: nil) == .refused(bad))
    let large = [UInt8](repeating: 0x61, count: 101)
    #expect(admission.verdict(on: note(large, hash: ContentHash(of: large)), folder: folder, local: nil) == .refused(bad))
  }
}
