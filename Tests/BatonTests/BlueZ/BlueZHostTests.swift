import Foundation
import Testing

@testable import BatonAgent
@testable import BatonBlueZ
@testable import BatonDBus
@testable import BatonHCI
@testable import BatonHandoff
@testable import BatonHost
@testable import BatonL2CAP
@testable import BatonRadio
@testable import BatonSystem

/// BlueZHost's D-Bus side against a stand-in bluetoothd on a private bus:
/// registration, in-place beacon updates, discovery, reports from Device1,
/// a powered-off adapter and a bluetoothd restart. (The L2CAP side needs a
/// kernel with Bluetooth: the VM harness runs it.)
@Suite("BlueZHost", .serialized)
struct BlueZHostTests {
  static let beacon = Beacon.header + Array(repeating: UInt8(0x5A), count: 24)

  /// The advertisement as bluetoothd reads it.
  func advertisedData(_ fake: FakeBluetoothd, _ host: BlueZHost) async throws -> [String: DBusValue]
  {
    try await fake.connection.allProperties(
      try await host.bus.uniqueName(), BlueZHost.advertisementPath, "org.bluez.LEAdvertisement1")
  }

  @Test func registersScansReportsAndRegistersAgainOnChange() async throws {
    let bus = try PrivateBus()
    defer { bus.stop() }
    let fake = try await FakeBluetoothd(bus: bus)
    let host = try await BlueZHost.open(adapter: "hci0", bus: try bus.connect())
    #expect(host.address == BluetoothAddress(FakeBluetoothd.adapterAddress))
    #expect(!host.ownsAddress)

    try await host.startAdvertising(data: Self.beacon, intervalMilliseconds: 200, connectable: true)
    let register = await fake.next("RegisterAdvertisement")
    #expect(register?.arguments.first == .objectPath(BlueZHost.advertisementPath))
    var properties = try await advertisedData(fake, host)
    #expect(properties["Type"] == .string("peripheral"))
    #expect(properties["Discoverable"] == .boolean(true))
    #expect(properties["MinInterval"] == .uint32(200))
    #expect(
      properties["ManufacturerData"]?.integerDictionary?[0xFFFF]?.byteArray
        == Array(Self.beacon.dropFirst(7)))

    // A new beacon: registered again (which restarts advertising, for
    // controllers that report only its start), with the new data; closed
    // (PROTOCOL.md 3.3), so as a broadcast, which the kernel sends
    // non-connectable from a fresh address.
    let next = Beacon.header + Array(repeating: UInt8(0x33), count: 24)
    try await host.updateAdvertisingData(next, connectable: false)
    #expect(await fake.next("UnregisterAdvertisement") != nil)
    #expect(await fake.next("RegisterAdvertisement") != nil)
    properties = try await advertisedData(fake, host)
    #expect(properties["Type"] == .string("broadcast"))
    // bluetoothd refuses a broadcast with flags ("Broadcast cannot set flags").
    #expect(properties["Discoverable"] == .boolean(false))
    #expect(
      properties["ManufacturerData"]?.integerDictionary?[0xFFFF]?.byteArray
        == Array(next.dropFirst(7)))

    // Discovery with the LE filter, then a device's beacon as a report.
    let reports = try await host.startScanning()
    let filter = await fake.next("SetDiscoveryFilter")
    let entries = filter?.arguments.first?.stringDictionary?.mapValues(\.unwrapped)
    #expect(entries?["Transport"] == .string("le"))
    #expect(entries?["DuplicateData"] == .boolean(true))
    #expect(await fake.next("StartDiscovery") != nil)
    let peer = Array(repeating: UInt8(0x77), count: 24)
    try await fake.advertise(address: "C0:00:00:00:00:02", manufacturerData: peer)
    var iterator = reports.makeAsyncIterator()
    let report = try #require(await iterator.next())
    #expect(report.address == BluetoothAddress("C0:00:00:00:00:02"))
    #expect(report.addressType == .random)
    #expect(report.data == Beacon.header + peer)
    #expect(report.rssi == -40)
    // Its beacon changes: a new report.
    let changedPeer = Array(repeating: UInt8(0x78), count: 24)
    try await fake.advertise(address: "C0:00:00:00:00:02", manufacturerData: changedPeer)
    #expect(await iterator.next()?.data == Beacon.header + changedPeer)

    await host.close()
    #expect(host.isClosed)
    #expect(await iterator.next() == nil)
    await fake.kill()
  }

  /// bluetoothd keeps our discovery filter across StopDiscovery, so a scan
  /// window sets it only once; a power cycle drops it, and it is set again.
  @Test func theDiscoveryFilterIsSetOncePerAdapterSession() async throws {
    let bus = try PrivateBus()
    defer { bus.stop() }
    let fake = try await FakeBluetoothd(bus: bus)
    let host = try await BlueZHost.open(adapter: "hci0", bus: try bus.connect())
    _ = try await host.startScanning()
    #expect(await fake.next("SetDiscoveryFilter") != nil)
    #expect(await fake.next("StartDiscovery") != nil)
    for _ in 0..<3 {
      try await host.setScanning(false, everyReport: true)
      #expect(await fake.next("StopDiscovery") != nil)
      try await host.setScanning(true, everyReport: true)
      #expect(await fake.next("StartDiscovery") != nil)
    }
    #expect(fake.count("SetDiscoveryFilter") == 1)
    #expect(fake.count("StartDiscovery") == 4)

    // Powered off, then on: the host starts a new generation and discovers
    // again, with the filter set anew.
    try await fake.setPowered(false)
    try await fake.setPowered(true)
    #expect(await fake.next("SetDiscoveryFilter") != nil)
    #expect(await fake.next("StartDiscovery") != nil)
    #expect(fake.count("SetDiscoveryFilter") == 2)
    await host.close()
    await fake.kill()
  }

  /// The next change other than an audio one.
  func nextChange(_ changes: inout AsyncStream<RadioHostChange>.Iterator) async
    -> RadioHostChange?
  {
    while let change = await changes.next() {
      if case .audio = change { continue }
      return change
    }
    return nil
  }

  /// With bluetoothd's AdvertisementMonitorManager1 (experimental features
  /// on): our monitor is registered with the beacon's pattern, beacons
  /// arrive through it as bluetoothd 5.66 delivers them, and no discovery
  /// ever starts, whatever the schedule asks.
  @Test func scansPassivelyThroughAnAdvertisementMonitor() async throws {
    let bus = try PrivateBus()
    defer { bus.stop() }
    let fake = try await FakeBluetoothd(bus: bus, monitors: true)
    let host = try await BlueZHost.open(
      adapter: "hci0", bus: try bus.connect(), monitorRepeat: .zero)
    let register = await fake.next("RegisterMonitor")
    #expect(register?.arguments == [.objectPath(AdvertisementMonitor.rootPath)])
    let read = try #require(await fake.next("MonitorRead"))
    #expect(read.arguments.first == .string("or_patterns"))
    // One pattern: Manufacturer Specific AD (0xFF) starting with company 0xFFFF.
    #expect(
      read.arguments.last
        == .array(
          elementSignature: "(yyay)", [.structure([.byte(0), .byte(0xFF), .bytes([0xFF, 0xFF])])]))
    var changes = host.changes().makeAsyncIterator()
    #expect(await nextChange(&changes) == .passiveScan(BlueZHost.passiveScan))

    try await host.startAdvertising(data: Self.beacon, intervalMilliseconds: 200, connectable: true)
    let reports = try await host.startScanning()
    try await host.setScanning(true, everyReport: true)
    // A peer heard: its Device1 appears, then DeviceFound.
    let peer = Array(repeating: UInt8(0x77), count: 24)
    try await fake.monitorHears(address: "C0:00:00:00:00:02", manufacturerData: peer)
    var iterator = reports.makeAsyncIterator()
    let report = try #require(await iterator.next())
    #expect(report.address == BluetoothAddress("C0:00:00:00:00:02"))
    #expect(report.data == Beacon.header + peer)
    // Heard again unchanged: bluetoothd signals nothing but DeviceFound,
    // which reports the beacon again.
    try await fake.monitorHears(address: "C0:00:00:00:00:02", manufacturerData: peer)
    #expect(await iterator.next()?.data == Beacon.header + peer)
    #expect(fake.count("StartDiscovery") == 0)
    #expect(fake.count("SetDiscoveryFilter") == 0)
    await host.close()
    await fake.kill()
  }

  /// An unchanged beacon heard again through the monitor is reported at
  /// most every `monitorRepeat`; a changed one at once.
  @Test func aMonitorRepeatsAnUnchangedBeaconRarely() async throws {
    let bus = try PrivateBus()
    defer { bus.stop() }
    let fake = try await FakeBluetoothd(bus: bus, monitors: true)
    let host = try await BlueZHost.open(adapter: "hci0", bus: try bus.connect())
    #expect(await fake.next("MonitorRead") != nil)
    var iterator = try await host.startScanning().makeAsyncIterator()
    let peer = Array(repeating: UInt8(0x77), count: 24)
    try await fake.monitorHears(address: "C0:00:00:00:00:02", manufacturerData: peer)
    #expect(await iterator.next()?.data == Beacon.header + peer)
    try await fake.monitorHears(address: "C0:00:00:00:00:02", manufacturerData: peer)
    let changed = Array(repeating: UInt8(0x78), count: 24)
    try await fake.monitorHears(address: "C0:00:00:00:00:02", manufacturerData: changed)
    // The repeat (within 5 s) was not reported: the next report is the change.
    #expect(await iterator.next()?.data == Beacon.header + changed)
    await host.close()
    await fake.kill()
  }

  /// Without the monitor, or when it is refused, never activated or
  /// released: discovery, as the schedule asks.
  @Test func fallsBackToDiscoveryWhenTheMonitorIsNotThere() async throws {
    let bus = try PrivateBus()
    defer { bus.stop() }
    // Refused.
    var fake = try await FakeBluetoothd(bus: bus, monitors: true)
    fake.failMember.value.withLock { $0["RegisterMonitor"] = "org.bluez.Error.Failed" }
    var host = try await BlueZHost.open(adapter: "hci0", bus: try bus.connect())
    #expect(await fake.next("RegisterMonitor") != nil)
    _ = try await host.startScanning()
    #expect(await fake.next("StartDiscovery") != nil)
    #expect(fake.count("MonitorRead") == 0)
    await host.close()
    await fake.kill()

    // Released by bluetoothd (the kernel dropped it): discovery resumes.
    fake = try await FakeBluetoothd(bus: bus, monitors: true)
    host = try await BlueZHost.open(adapter: "hci0", bus: try bus.connect())
    var changes = host.changes().makeAsyncIterator()
    #expect(await nextChange(&changes) == .passiveScan(BlueZHost.passiveScan))
    _ = try await host.startScanning()
    try await fake.callMonitors("Release")
    #expect(await nextChange(&changes) == .passiveScan(nil))
    #expect(await fake.next("StartDiscovery") != nil)
    await host.close()
    await fake.kill()

    // Registered but never activated: discovery after `monitorActivation`.
    fake = try await FakeBluetoothd(bus: bus, monitors: true)
    fake.activates.value.withLock { $0 = false }
    host = try await BlueZHost.open(adapter: "hci0", bus: try bus.connect())
    _ = try await host.startScanning()
    #expect(await fake.next("MonitorRead") != nil)
    #expect(fake.count("StartDiscovery") == 0)
    #expect(await fake.next("StartDiscovery") != nil)
    await host.close()
    await fake.kill()
  }

  /// bluetoothd restarts: without experimental features (discovery), then
  /// with them again (the monitor registered again, no discovery).
  @Test func registersTheMonitorAgainAfterARestart() async throws {
    let bus = try PrivateBus()
    defer { bus.stop() }
    var fake = try await FakeBluetoothd(bus: bus, monitors: true)
    let host = try await BlueZHost.open(adapter: nil, bus: try bus.connect())
    var changes = host.changes().makeAsyncIterator()
    #expect(await nextChange(&changes) == .passiveScan(BlueZHost.passiveScan))
    _ = try await host.startScanning()

    await fake.kill()
    #expect(await nextChange(&changes) == .passiveScan(nil))
    fake = try await FakeBluetoothd(bus: bus)
    #expect(await nextChange(&changes) == .adapterBack)
    #expect(await fake.next("StartDiscovery") != nil)

    await fake.kill()
    fake = try await FakeBluetoothd(bus: bus, monitors: true)
    #expect(await nextChange(&changes) == .adapterBack)
    #expect(await fake.next("MonitorRead") != nil)
    #expect(await nextChange(&changes) == .passiveScan(BlueZHost.passiveScan))
    try await host.setScanning(true, everyReport: true)
    #expect(fake.count("StartDiscovery") == 0)
    // Powered off and on (bluetoothd keeps the registration): still passive.
    try await fake.setPowered(false)
    try await fake.setPowered(true)
    #expect(await nextChange(&changes) == .adapterBack)
    try await host.setScanning(true, everyReport: true)
    #expect(fake.count("StartDiscovery") == 0)
    await host.close()
    await fake.kill()
  }

  /// While an audio stream plays with a link up the schedule turns even the
  /// passive scan off: the monitor leaves the bus (bluetoothd drops it) and
  /// comes back; paused across a bluetoothd restart, it is offered for the
  /// registration and taken off again once activated. No discovery.
  @Test func theMonitorLeavesTheBusWhileTheScheduleSaysOff() async throws {
    let bus = try PrivateBus()
    defer { bus.stop() }
    var fake = try await FakeBluetoothd(bus: bus, monitors: true)
    let host = try await BlueZHost.open(adapter: nil, bus: try bus.connect())
    var changes = host.changes().makeAsyncIterator()
    #expect(await nextChange(&changes) == .passiveScan(BlueZHost.passiveScan))
    _ = try await host.startScanning()
    try await host.setScanning(false, everyReport: false)
    #expect(await fake.next("MonitorRemoved") != nil)
    try await host.setScanning(true, everyReport: false)
    #expect(await fake.next("MonitorRead") != nil)
    try await host.setScanning(false, everyReport: false)
    #expect(await fake.next("MonitorRemoved") != nil)

    await fake.kill()
    #expect(await nextChange(&changes) == .passiveScan(nil))
    fake = try await FakeBluetoothd(bus: bus, monitors: true)
    #expect(await fake.next("MonitorRead") != nil)
    #expect(await fake.next("MonitorRemoved") != nil)
    #expect(fake.count("StartDiscovery") == 0)
    await host.close()
    await fake.kill()
  }

  @Test func waitsForAPoweredAdapterAndSurvivesARestart() async throws {
    let bus = try PrivateBus()
    defer { bus.stop() }
    var fake = try await FakeBluetoothd(bus: bus)
    fake.powered.value.withLock { $0 = false }
    let opening = Task { try await BlueZHost.open(adapter: nil, bus: try bus.connect()) }
    // Powered off: open waits for PropertiesChanged(Powered), without polling.
    try await fake.setPowered(true)
    let host = try await opening.value
    try await host.startAdvertising(data: Self.beacon, intervalMilliseconds: 100, connectable: true)
    _ = try await host.startScanning()
    #expect(await fake.next("RegisterAdvertisement") != nil)

    // Powered off and on again (btmgmt power off/on): registered again.
    try await fake.setPowered(false)
    try await fake.setPowered(true)
    #expect(await fake.next("RegisterAdvertisement") != nil)
    #expect(await fake.next("StartDiscovery") != nil)

    // bluetoothd dies and comes back: we register and discover again.
    await fake.kill()
    fake = try await FakeBluetoothd(bus: bus)
    let again = await fake.next("RegisterAdvertisement")
    #expect(again?.arguments.first == .objectPath(BlueZHost.advertisementPath))
    #expect(await fake.next("StartDiscovery") != nil)
    #expect(!host.isClosed)
    // The new bluetoothd's signals reach us too (it has another unique name):
    // powered off and on again, we register again.
    try await fake.setPowered(false)
    try await fake.setPowered(true)
    #expect(await fake.next("RegisterAdvertisement") != nil)
    await host.close()
    await fake.kill()
  }

  /// A bluetoothd started while the kernel still scans for a killed one
  /// answers StartDiscovery with InProgress and does not discover: the host
  /// sees Discovering is not true and asks again (measured in the VM).
  @Test func discoveryRefusedAsInProgressIsTriedAgain() async throws {
    let bus = try PrivateBus()
    defer { bus.stop() }
    let fake = try await FakeBluetoothd(bus: bus)
    fake.failMember.value.withLock { $0["StartDiscovery"] = "org.bluez.Error.InProgress" }
    let host = try await BlueZHost.open(adapter: nil, bus: try bus.connect())
    _ = try await host.startScanning()
    #expect(await fake.next("StartDiscovery") != nil)
    fake.failMember.value.withLock { $0["StartDiscovery"] = nil }
    // The retry (2 s later) is a second StartDiscovery, which now succeeds.
    #expect(await fake.next("StartDiscovery") != nil)
    await host.close()
    await fake.kill()
  }

  @Test func notRunningAndDeniedSayWhatToDo() async throws {
    let bus = try PrivateBus()
    defer { bus.stop() }
    do {
      _ = try await BlueZHost.open(adapter: nil, bus: try bus.connect())
      Issue.record("opened with no bluetoothd")
    } catch let error as BlueZError {
      guard case .notRunning = error else {
        Issue.record("\(error)")
        return
      }
      #expect("\(error)".contains("systemctl start bluetooth"))
      #expect("\(error)".contains("controller = hciN"))
    }

    let fake = try await FakeBluetoothd(bus: bus)
    let host = try await BlueZHost.open(adapter: nil, bus: try bus.connect())
    fake.failWith.value.withLock { $0 = "org.bluez.Error.NotPermitted" }
    do {
      try await host.startAdvertising(data: Self.beacon, intervalMilliseconds: 100, connectable: true)
      Issue.record("advertising was not refused")
    } catch let error as BlueZError {
      #expect("\(error)".contains("no advertising instance left"), "\(error)")
    }
    fake.failWith.value.withLock { $0 = DBusError.accessDeniedName }
    do {
      _ = try await host.startScanning()
      Issue.record("discovery was not refused")
    } catch let error as BlueZError {
      #expect("\(error)".contains("'bluetooth' group"), "\(error)")
    }
    await host.close()
    await fake.kill()
  }

  /// The agent stopping while the adapter is off: opening ends at once.
  @Test func cancellingAWaitingOpenEndsIt() async throws {
    let bus = try PrivateBus()
    defer { bus.stop() }
    let fake = try await FakeBluetoothd(bus: bus)
    fake.powered.value.withLock { $0 = false }
    let connection = try bus.connect()
    let opening = Task { try await BlueZHost.open(adapter: nil, bus: connection) }
    opening.cancel()
    await #expect(throws: (any Error).self) { _ = try await opening.value }
    #expect(await connection.waitUntilClosed() == .closed(reason: "closed"))
    await fake.kill()
  }

  @Test func beaconBytesMapBothWays() {
    let data = BlueZHost.manufacturerData(beacon: Self.beacon)
    let bytes = data.integerDictionary?[0xFFFF]?.byteArray
    #expect(bytes?.count == 24)
    #expect(BlueZHost.advertisingData(manufacturerBytes: bytes!) == Self.beacon)
    #expect(BlueZHost.advertisingData(manufacturerBytes: [1, 2]) == [5, 0xFF, 0xFF, 0xFF, 1, 2])
  }

  /// The scan schedule's audio input: a MediaTransport1 whose State is
  /// "pending" or "active" means a stream plays on the adapter.
  @Test func reportsAnAudioStreamFromMediaTransportState() async throws {
    let bus = try PrivateBus()
    defer { bus.stop() }
    let fake = try await FakeBluetoothd(bus: bus)
    let host = try await BlueZHost.open(adapter: "hci0", bus: try bus.connect())
    var audio = host.changes().makeAsyncIterator()
    #expect(await audio.next() == .audio(false))
    // Headphones connect (idle: no change), then play.
    try await fake.setTransport("fd0", state: "idle")
    try await fake.setTransport("fd0", state: "pending")
    #expect(await audio.next() == .audio(true))
    try await fake.setTransport("fd0", state: "active")
    try await fake.setTransport("fd0", state: "idle")
    #expect(await audio.next() == .audio(false))
    // A second transport known at bring-up counts too.
    try await fake.setTransport("fd1", state: "active")
    #expect(await audio.next() == .audio(true))
    let again = try await BlueZHost.open(adapter: "hci0", bus: try bus.connect())
    var fresh = again.changes().makeAsyncIterator()
    #expect(await fresh.next() == .audio(true))
    // Powered off and on: the adapter is back (the schedule's burst).
    try await fake.setPowered(false)
    try await fake.setPowered(true)
    #expect(await fresh.next() == .adapterBack)
    #expect(await audio.next() == .adapterBack)
    await again.close()
    await host.close()
    #expect(await audio.next() == nil)
    await fake.kill()
  }
}
