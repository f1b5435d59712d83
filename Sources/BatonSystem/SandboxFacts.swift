#if canImport(Glibc)
  import Glibc
#endif

/// What the agent can tell of the sandbox it runs in, so that a refusal
/// the sandbox made is not blamed on the kernel: a unit's
/// `RestrictAddressFamilies=` makes `socket(AF_BLUETOOTH)` fail with
/// EAFNOSUPPORT exactly as a kernel without Bluetooth does.
public struct SandboxFacts: Sendable, Equatable {
  /// The kernel has Bluetooth (`/sys/module/bluetooth` or
  /// `/sys/class/bluetooth`), whatever this process may do with it.
  public var kernelHasBluetooth: Bool
  /// systemd started this process as a unit (it sets `INVOCATION_ID`).
  public var systemdUnit: Bool

  public init(kernelHasBluetooth: Bool, systemdUnit: Bool) {
    self.kernelHasBluetooth = kernelHasBluetooth
    self.systemdUnit = systemdUnit
  }

  /// This process's, read now.
  public static var current: SandboxFacts {
    SandboxFacts(
      kernelHasBluetooth: access("/sys/module/bluetooth", F_OK) == 0
        || access("/sys/class/bluetooth", F_OK) == 0,
      systemdUnit: getenv("INVOCATION_ID").map { $0.pointee != 0 } ?? false)
  }
}
