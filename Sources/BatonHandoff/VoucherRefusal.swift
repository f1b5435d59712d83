/// Why a peer's version of a note is refused by the rules of vouchers
/// (PROTOCOL.md section 7.5); recorded as a failure (bad payload).
package enum VoucherRefusal: Error, Equatable, CustomStringConvertible {
  /// A voucher this agent checked is not its device's signature.
  case doesNotVerify(path: String, device: DeviceID, counter: UInt64)
  /// A raise of a counter that is vouched for here, with no voucher.
  case unvouchedRaise(path: String, device: DeviceID, counter: UInt64, vouched: UInt64)

  package var description: String {
    switch self {
    case .doesNotVerify(let path, let device, let counter):
      return "forged version of \(path): the voucher of device \(device) for \(counter)"
        + " changes does not verify under its key; refused"
    case .unvouchedRaise(let path, let device, let counter, let vouched):
      return "forged version of \(path): it claims \(counter) changes by device \(device),"
        + " which vouched for \(vouched) here, with no voucher of that device; refused"
    }
  }
}
