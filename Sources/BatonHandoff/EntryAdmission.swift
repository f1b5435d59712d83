import BatonNotes
import BatonSystem

/// Whether a peer's entry, or a note that arrived, may be taken at all,
/// before its version is weighed (`IncomingVersion`): its folder is
/// declared here, it fits the size limit, its path is safe and acceptable
/// to the folder, and its version is plausible and vouched for (PROTOCOL.md
/// sections 7 and 7.5). A plain value of this device's id, the size limit
/// and the members' keys, with no engine, store or I/O
/// (`EntryAdmissionTests`); the engine logs and counts what it says.
package struct EntryAdmission: Sendable {
  /// What becomes of one entry or note.
  package enum Verdict: Equatable, Sendable {
    /// It may be taken, with the vouchers this agent keeps of it.
    case admitted(Vouchers)
    /// This agent does not take it (its folder, its size or its name):
    /// declined, which is the peer's business to know, not a fault.
    case declined(String)
    /// It cannot be genuine or safe (a bad payload): a failure.
    case refused(String)
  }

  /// This device: only it counts its own changes.
  package let device: DeviceID
  /// The largest note taken, in bytes (`HandoffPolicy.maxNoteSize`).
  package let maxNoteSize: Int
  /// The members' keys, which check their vouchers.
  package let keys: [DeviceID: DevicePublicKey]

  package init(device: DeviceID, maxNoteSize: Int, keys: [DeviceID: DevicePublicKey]) {
    self.device = device
    self.maxNoteSize = maxNoteSize
    self.keys = keys
  }

  /// A peer's index entry (INDEX, a link's SUMMARY or NOTES, a rename),
  /// for `folder`, the folder of its activity type here (nil: none is
  /// declared), against `local`, the entry of the same path here. A
  /// tombstone always fits the size limit.
  package func verdict(
    on e: HandoffIndexEntry, folder: (any NoteFolderAccess)?, local: HandoffIndexEntry?
  ) -> Verdict {
    guard let folder else {
      return .declined("no folder declares activity type \(e.activityType)")
    }
    guard e.deleted || e.size <= maxNoteSize else {
      return .declined("note of \(e.size) bytes exceeds the \(maxNoteSize)-byte limit")
    }
    guard EntryAdmission.isSafePath(e.path) else {
      return .refused("bad payload: unsafe path '\(e.path)'")
    }
    if let reason = folder.refusal(of: e.path) {
      return .declined("the folder refuses the name: \(reason)")
    }
    return versionVerdict(
      e.version, e.vouchers, type: e.activityType, path: e.path, against: local)
  }

  /// A note that arrived (NOTE), as `verdict(on:folder:local:)` says of an
  /// entry, and its bytes besides: they fit the limit, match its hash and
  /// are UTF-8. The folder checks the name when it writes the note.
  package func verdict(
    on p: ActivityPayload, folder: (any NoteFolderAccess)?, local: HandoffIndexEntry?
  ) -> Verdict {
    guard folder != nil else { return .declined("undeclared activity type") }
    guard EntryAdmission.isSafePath(p.path), p.content.count <= maxNoteSize,
      ContentHash(of: p.content) == p.hash, String(validating: p.content, as: UTF8.self) != nil
    else {
      return .refused("bad payload for \(p.path): hash, size, path or UTF-8 do not check")
    }
    return versionVerdict(
      p.version, p.vouchers, type: p.activityType, path: p.path, against: local)
  }

  private func versionVerdict(
    _ version: VersionVector, _ vouchers: Vouchers, type: String, path: String,
    against local: HandoffIndexEntry?
  ) -> Verdict {
    if let reason = IncomingVersion.implausibility(
      of: version, path: path, against: local, device: device)
    {
      return .refused("bad payload: \(reason)")
    }
    switch checkedVouchers(version, vouchers, type: type, path: path, against: local) {
    case .failure(let refusal): return .refused("bad payload: \(refusal)")
    case .success(let kept): return .admitted(kept)
    }
  }

  /// What the vouchers of a peer's version of a note come to against the
  /// local entry (PROTOCOL.md section 7.5): the vouchers this agent keeps
  /// (each checked with its device's key from the membership records), or
  /// why the version is forged. A voucher is checked where it counts: where
  /// the peer's counter is above the local one (a raise), or where the
  /// local counter has none (it would be adopted, or outrank that counter:
  /// `IncomingVersion.order`). One that does not verify under its device's
  /// key makes the version forged; one whose device's key is not known
  /// here is dropped. A raise without a voucher is refused where the local
  /// counter of that device has one. This device's own vouchers are not
  /// kept: it signs its counter again each time it sends an entry
  /// (`SecureChannel.send`; Ed25519 gives the same bytes each time), so the
  /// index holds only the vouchers of other devices.
  package func checkedVouchers(
    _ version: VersionVector, _ vouchers: Vouchers, type: String, path: String,
    against local: HandoffIndexEntry?
  ) -> Result<Vouchers, VoucherRefusal> {
    let localVersion = local?.version ?? VersionVector()
    let localVouchers = local?.vouchers ?? Vouchers()
    var kept = Vouchers()
    for device in version.devices where device != self.device {
      let (counter, localCounter) = (version[device], localVersion[device])
      let localVouched = localVouchers[device] != nil
      var verified = false
      if let signature = vouchers[device], counter > localCounter || !localVouched {
        if let key = keys[device] {
          guard vouchers.verifies(device, counter: counter, key: key, type: type, path: path)
          else {
            return .failure(.doesNotVerify(path: path, device: device, counter: counter))
          }
          kept.set(signature, for: device)
          verified = true
        }
      }
      if counter > localCounter, !verified, localVouched {
        return .failure(
          .unvouchedRaise(path: path, device: device, counter: counter, vouched: localCounter))
      }
    }
    return .success(kept)
  }

  /// A relative path with no empty, `.` or `..` component, no NUL or backslash.
  package static func isSafePath(_ path: String) -> Bool {
    guard !path.isEmpty, path.utf8.count <= HandoffLimits.maxPathBytes, !path.hasPrefix("/"),
      !path.contains("\u{0}"), !path.contains("\\")
    else { return false }
    return path.split(separator: "/", omittingEmptySubsequences: false).allSatisfy {
      !$0.isEmpty && $0 != "." && $0 != ".."
    }
  }
}
