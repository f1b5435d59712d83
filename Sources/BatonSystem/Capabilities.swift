import CBatonShims

/// The one capability baton may hold, `CAP_NET_ADMIN`, which the kernel
/// asks for only to bind the HCI user channel (`controller = hciN`, with
/// the binary's file capability or a system unit's ambient one). It is kept
/// permitted, to open the adapter again after it was lost, and effective
/// only while that one call runs.
///
/// Capabilities belong to threads, and a thread starts with its creator's:
/// so `lowerAtStart` runs in `main` before any other thread exists, and
/// `withNetAdmin` raises it on the calling thread alone (the one-off
/// `hci-open` thread), for its body.
public enum Capabilities {
  /// `CAP_NET_ADMIN` (linux/capability.h).
  static let netAdminNumber: Int32 = 12

  /// Whether the calling thread has `CAP_NET_ADMIN` effective, and permitted.
  public static var netAdmin: (effective: Bool, permitted: Bool) {
    let sets = baton_capability_get(netAdminNumber)
    guard sets >= 0 else { return (false, false) }
    return (sets & 1 != 0, sets & 2 != 0)
  }

  /// Lowers `CAP_NET_ADMIN` from the effective set; first thing in `main`,
  /// so that every thread starts without it. Nothing to do without it.
  public static func lowerAtStart() {
    if netAdmin.effective { _ = baton_capability_set_effective(netAdminNumber, 0) }
  }

  /// Runs `body` with `CAP_NET_ADMIN` effective on this thread when it is
  /// permitted (else as it is: the kernel's refusal then says what is
  /// missing), and lowers it again.
  public static func withNetAdmin<T>(_ body: () throws -> T) rethrows -> T {
    let (effective, permitted) = netAdmin
    guard permitted, !effective, baton_capability_set_effective(netAdminNumber, 1) == 0 else {
      return try body()
    }
    defer { _ = baton_capability_set_effective(netAdminNumber, 0) }
    return try body()
  }
}
