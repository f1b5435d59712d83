/// Versions a device vouches for (PROTOCOL.md section 7.5): a peer's raise
/// of another device's counter is taken only with that device's voucher, or,
/// for counters made before protocol 9, where this agent holds no voucher of
/// that device for the note. This device's own vouchers are not kept: it
/// signs its counter again each time it sends an entry (`SecureChannel.send`;
/// Ed25519 gives the same bytes each time), so the index holds only the
/// vouchers of other devices.
extension HandoffEngine {
  /// What the vouchers of a peer's version of a note come to against the
  /// local entry: the vouchers this agent keeps (each checked with its
  /// device's key from the membership records), or why the version is
  /// forged. A voucher is checked where it counts: where the peer's counter
  /// is above the local one (a raise), or where the local counter has none
  /// (it would be adopted, or outrank that counter: `IncomingVersion.order`).
  /// One that does not verify under its device's key makes the version
  /// forged; one whose device's key is not known here is dropped. A raise
  /// without a voucher is refused where the local counter of that device
  /// has one.
  func checkedVouchers(
    _ version: VersionVector, _ vouchers: Vouchers, type: String, path: String,
    against local: HandoffIndexEntry?
  ) -> Result<Vouchers, VoucherRefusal> {
    let (localVersion, localVouchers) = (local?.version ?? VersionVector(), local?.vouchers ?? Vouchers())
    var kept = Vouchers()
    for device in version.devices where device != me.device {
      let (counter, localCounter) = (version[device], localVersion[device])
      let localVouched = localVouchers[device] != nil
      var verified = false
      if let signature = vouchers[device], counter > localCounter || !localVouched {
        if let key = membership.keys[device] {
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
}
