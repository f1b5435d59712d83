import CBluetooth
import Foundation
import Testing

@testable import BatonHCI
@testable import BatonSystem

@Suite struct HCIUserChannelTransportTests {
  /// This machine's kernel (and CI's) has no Bluetooth: opening hci0 must say
  /// so, with the fix, rather than fail obscurely. On a kernel with Bluetooth
  /// the same call on an index that cannot exist must say "no such adapter".
  @Test func openingOnThisKernelNamesTheCauseAndTheFix() throws {
    let probe = socket(
      AF_BLUETOOTH, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), BTPROTO_HCI)
    let probeError = errno
    if probe < 0 && probeError == EAFNOSUPPORT {
      let error = #expect(throws: HCIUserChannelError.self) {
        try HCIUserChannelTransport(index: 0)
      }
      #expect(error == .bluetoothUnsupported(index: 0))
      let text = error?.description ?? ""
      #expect(text.hasPrefix("hci0: "))
      #expect(text.contains("no Bluetooth support"))
      #expect(text.contains("EAFNOSUPPORT"))
      #expect(text.contains("modprobe bluetooth"))
      #expect(text.contains("tcp:HOST:PORT"))
      #expect(text.contains("serial:/dev/tty"))
      #expect(HCIUserChannelTransport.adapters().isEmpty)
    } else {
      if probe >= 0 { close(probe) }
      let error = #expect(throws: HCIUserChannelError.self) {
        try HCIUserChannelTransport(index: 0xFFF0)
      }
      guard case .noSuchAdapter(index: 0xFFF0, _) = error else {
        Issue.record("expected noSuchAdapter, got \(String(describing: error))")
        return
      }
    }
  }

  @Test(arguments: [
    (EAFNOSUPPORT, "bluetoothUnsupported", ["EAFNOSUPPORT", "modprobe", "tcp:"]),
    (ENODEV, "noSuchAdapter", ["no such Bluetooth adapter", "ENODEV", "no Bluetooth adapters"]),
    (EBUSY, "adapterBusy", ["EBUSY", "btmgmt --index 3 power off", "bluetoothd"]),
    (EALREADY, "adapterBusy", ["EALREADY", "btmgmt --index 3 power off"]),
    (EUSERS, "userChannelTaken", ["EUSERS", "another program"]),
    (
      EPERM, "notPermitted",
      [
        "EPERM", "CAP_NET_ADMIN", "setcap cap_net_admin+ep", "drop `controller = hci3`",
        "AmbientCapabilities=CAP_NET_ADMIN", "do not run the agent as root",
      ]
    ),
    (EACCES, "notPermitted", ["EACCES", "CAP_NET_ADMIN"]),
    (ERFKILL, "blockedByRFKill", ["rfkill unblock bluetooth"]),
    (EIO, "failed", ["EIO", "open"]),
  ])
  func eachErrnoGetsItsOwnMessage(errno: Int32, kind: String, phrases: [String]) {
    let error = HCIUserChannelError(opening: 3, errno: Errno(rawValue: errno), available: [])
    #expect(Mirror(reflecting: error).children.first?.label == kind)
    #expect(error.index == 3)
    let text = error.describe(in: SandboxFacts(kernelHasBluetooth: false, systemdUnit: false))
    #expect(text.hasPrefix("hci3: "))
    for phrase in phrases {
      #expect(text.contains(phrase), "\(phrase) missing in: \(text)")
    }
  }

  /// Issue 31: under a sandbox, a refusal is not blamed on the kernel. A
  /// unit's RestrictAddressFamilies= without AF_BLUETOOTH gives the same
  /// EAFNOSUPPORT as a kernel without Bluetooth; and under systemd the
  /// capability hint names the unit's drop-in.
  @Test func aSandboxsRefusalIsNotBlamedOnTheKernel() {
    let sandboxed = SandboxFacts(kernelHasBluetooth: true, systemdUnit: true)
    let family = HCIUserChannelError(opening: 0, errno: Errno(rawValue: EAFNOSUPPORT), available: [])
      .describe(in: sandboxed)
    #expect(family.contains("RestrictAddressFamilies=") && family.contains("AF_BLUETOOTH"), "\(family)")
    #expect(!family.contains("no Bluetooth support"), "\(family)")
    let permission = HCIUserChannelError(opening: 0, errno: Errno(rawValue: EPERM), available: [])
    let unit = permission.describe(in: sandboxed)
    #expect(unit.contains("drop-in") && unit.contains("systemctl --user edit baton"), "\(unit)")
    let shell = permission.describe(in: SandboxFacts(kernelHasBluetooth: true, systemdUnit: false))
    #expect(!shell.contains("drop-in") && shell.contains("setcap"), "\(shell)")
  }

  @Test func noSuchAdapterListsTheAdaptersThatExist() {
    let present = [
      HCIAdapterInfo(
        index: 0, name: "hci0", address: "00:AA:01:00:00:23", isUp: false,
        type: "VIRTUAL"),
      HCIAdapterInfo(
        index: 1, name: "hci1", address: "00:AA:01:01:00:24", isUp: true,
        type: "USB"),
    ]
    let error = HCIUserChannelError(opening: 7, errno: Errno(rawValue: ENODEV), available: present)
    #expect(error == .noSuchAdapter(index: 7, available: present))
    #expect(error.description.contains("hci7: no such Bluetooth adapter"))
    #expect(error.description.contains("hci0 00:AA:01:00:00:23, hci1 00:AA:01:01:00:24 (up)"))
    #expect(error.description.contains("--controller hci0"))
    #expect(!error.description.contains("no Bluetooth adapters"))
  }

  @Test func adapterInfoDecodesLibbluetoothsStruct() {
    var info = hci_dev_info()
    info.dev_id = 2
    withUnsafeMutableBytes(of: &info.name) { $0.copyBytes(from: Array("hci2".utf8)) }
    // bdaddr_t is little-endian: the printed form is reversed.
    withUnsafeMutableBytes(of: &info.bdaddr) {
      $0.copyBytes(from: [0x55, 0x44, 0x33, 0x22, 0x11, 0x0A])
    }
    info.flags = 1  // HCI_UP
    info.type = 1  // USB
    let adapter = HCIAdapterInfo(info)
    #expect(adapter.index == 2)
    #expect(adapter.name == "hci2")
    #expect(adapter.address == "0A:11:22:33:44:55")
    #expect(adapter.isUp)
    #expect(adapter.type == "USB")
    #expect(adapter.description == "hci2 0A:11:22:33:44:55 (up)")
  }

  @Test func indexesOutsideTheKernelsRangeAreNoSuchAdapter() {
    let error = #expect(throws: HCIUserChannelError.self) {
      try HCIUserChannelTransport(index: -1)
    }
    #expect(error == .noSuchAdapter(index: -1, available: []))
  }

  @Test func deviceListRequestMatchesTheCMacro() {
    // _IOR('H', 210, int) from <bluetooth/hci.h>
    #expect(HCIUserChannelTransport.getDeviceList == 0x8004_48D2)
  }
}
