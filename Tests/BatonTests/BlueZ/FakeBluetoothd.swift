import Foundation
import Synchronization

@testable import BatonAgent
@testable import BatonDBus
@testable import BatonHCI
@testable import BatonHandoff
@testable import BatonHost
@testable import BatonL2CAP
@testable import BatonRadio
@testable import BatonSystem

/// A stand-in for bluetoothd on a private bus: owns org.bluez, serves an
/// ObjectManager, one adapter (/org/bluez/hci0: Adapter1,
/// LEAdvertisingManager1 and, with `monitors`, AdvertisementMonitorManager1
/// as bluetoothd 5.66 has with experimental features) and devices the test
/// adds. Every call it gets is logged for `next(_:)` (member and arguments).
///
/// A monitor registered with `RegisterMonitor(root)` is read as bluetoothd
/// reads it (GetManagedObjects on the caller's root; logged as a call
/// "MonitorRead" with its Type and Patterns), then activated (`Activate()`).
/// Unlike bluetoothd, RegisterMonitor is answered before the read.
final class FakeBluetoothd: Sendable {
  struct Call: Sendable {
    var member: String
    var arguments: [DBusValue]
  }

  static let adapterPath = "/org/bluez/hci0"
  static let adapterAddress = "00:AA:01:00:00:01"

  struct CallLog {
    var calls: [Call] = []
    /// Calls of each member ever made.
    var counts: [String: Int] = [:]
    var waiters: [(member: String, continuation: CheckedContinuation<Call?, Never>)] = []
    var ended = false
  }

  let connection: DBusConnection
  private let log = Shared(CallLog())
  let powered = Shared(true)
  /// An error name every call answers with, when set.
  let failWith = Shared<String?>(nil)
  /// Error names by member, for one member's calls only.
  let failMember = Shared<[String: String]>([:])
  private let devices = Shared<[String: Shared<[UInt8]>]>([:])
  private let transports = Shared<[String: Shared<String>]>([:])
  /// Monitors read from registered clients: (unique name, object path).
  private let monitors = Shared<[(client: String, path: String)]>([])
  /// Whether a monitor read is activated (bluetoothd: once the kernel took it).
  let activates = Shared(true)

  init(bus: PrivateBus, monitors offersMonitors: Bool = false) async throws {
    connection = try bus.connect()
    try await connection.addObjectManager(at: "/")
    let log = self.log
    let failWith = self.failWith
    let failMember = self.failMember
    let powered = self.powered
    let answer: @Sendable (String, [DBusValue]) -> Result<[DBusValue], DBusError> = {
      member, args in
      let call = Call(member: member, arguments: args)
      let waiter = log.value.withLock { l -> CheckedContinuation<Call?, Never>? in
        if let i = l.waiters.firstIndex(where: { $0.member == member }) {
          return l.waiters.remove(at: i).continuation
        }
        l.calls.append(call)
        return nil
      }
      log.value.withLock { $0.counts[member, default: 0] += 1 }
      waiter?.resume(returning: call)
      if let name = failWith.value.withLock({ $0 }) ?? failMember.value.withLock({ $0[member] }) {
        return .failure(.remote(name: name, message: "refused by the fake"))
      }
      return .success([])
    }
    try await connection.export(
      DBusObject(
        path: Self.adapterPath, interface: "org.bluez.Adapter1",
        properties: [.init("Address", "s"), .init("AddressType", "s"), .init("Powered", "b")],
        methods: [
          .init("SetDiscoveryFilter", signature: "a{sv}"), .init("StartDiscovery"),
          .init("StopDiscovery"),
        ],
        property: { name in
          switch name {
          case "Address": .string(Self.adapterAddress)
          case "AddressType": .string("public")
          case "Powered": .boolean(powered.value.withLock { $0 })
          default: nil
          }
        }, method: answer))
    try await connection.export(
      DBusObject(
        path: Self.adapterPath, interface: "org.bluez.LEAdvertisingManager1",
        properties: [.init("ActiveInstances", "y", emitsChange: false)],
        methods: [
          .init("RegisterAdvertisement", signature: "oa{sv}"),
          .init("UnregisterAdvertisement", signature: "o"),
        ],
        property: { _ in .byte(0) }, method: answer))
    if offersMonitors {
      let connection = self.connection
      let monitors = self.monitors
      let activates = self.activates
      try await connection.export(
        DBusObject(
          path: Self.adapterPath, interface: "org.bluez.AdvertisementMonitorManager1",
          properties: [
            .init("SupportedMonitorTypes", "as", emitsChange: false),
            .init("SupportedFeatures", "as", emitsChange: false),
          ],
          methods: [
            .init("RegisterMonitor", signature: "o"), .init("UnregisterMonitor", signature: "o"),
          ],
          property: { name in
            switch name {
            case "SupportedMonitorTypes": .array(elementSignature: "s", [.string("or_patterns")])
            case "SupportedFeatures": .array(elementSignature: "s", [])
            default: nil
            }
          },
          methodFrom: { sender, member, args in
            let result = answer(member, args)
            guard case .success = result, let root = args.first?.string else { return result }
            if member == "UnregisterMonitor" {
              monitors.value.withLock { $0.removeAll { $0.client == sender } }
              return result
            }
            Task {
              await Self.read(
                client: sender, root: root, on: connection, into: monitors, log: log,
                activate: activates.value.withLock { $0 })
            }
            return result
          }))
    }
    // As bluetoothd: the name, then the adapter appears.
    try await connection.requestName("org.bluez")
    try await connection.emitInterfaces(
      added: true, path: Self.adapterPath,
      interfaces: ["org.bluez.Adapter1", "org.bluez.LEAdvertisingManager1"]
        + (offersMonitors ? ["org.bluez.AdvertisementMonitorManager1"] : []))
  }

  /// What bluetoothd does with a RegisterMonitor: reads the client's
  /// monitors through its ObjectManager, activates each, and follows the
  /// ObjectManager's InterfacesAdded and InterfacesRemoved (a monitor
  /// added is read and activated; one removed is dropped, logged as a call
  /// "MonitorRemoved").
  private static func read(
    client: String, root: String, on connection: DBusConnection,
    into monitors: Shared<[(client: String, path: String)]>, log: Shared<CallLog>, activate: Bool
  ) async {
    let interface = "org.bluez.AdvertisementMonitor1"
    @Sendable func logged(_ call: Call) {
      let waiter = log.value.withLock { l -> CheckedContinuation<Call?, Never>? in
        l.counts[call.member, default: 0] += 1
        if let i = l.waiters.firstIndex(where: { $0.member == call.member }) {
          return l.waiters.remove(at: i).continuation
        }
        l.calls.append(call)
        return nil
      }
      waiter?.resume(returning: call)
    }
    @Sendable func accept(_ path: String, _ monitor: [String: DBusValue]) async {
      monitors.value.withLock { $0.append((client, path)) }
      logged(
        Call(
          member: "MonitorRead",
          arguments: [
            monitor["Type"]?.unwrapped ?? .string(""),
            monitor["Patterns"]?.unwrapped ?? .array(elementSignature: "(yyay)", []),
          ]))
      if activate { _ = try? await connection.call(client, path, interface, "Activate") }
    }
    _ = try? await connection.subscribe(
      sender: client, path: root, interface: "org.freedesktop.DBus.ObjectManager", member: nil
    ) { signal in
      guard let path = signal.arguments.first?.string, path.hasPrefix(root) else { return }
      if signal.member == "InterfacesAdded",
        let monitor = signal.arguments.dropFirst().first?.stringDictionary?[interface]?
          .stringDictionary
      {
        Task { await accept(path, monitor) }
      } else if signal.member == "InterfacesRemoved",
        signal.arguments.dropFirst().first?.elements?.compactMap(\.string).contains(interface)
          == true
      {
        monitors.value.withLock { $0.removeAll { $0.client == client && $0.path == path } }
        logged(Call(member: "MonitorRemoved", arguments: [.objectPath(path)]))
      }
    }
    guard
      let reply = try? await connection.call(
        client, root, "org.freedesktop.DBus.ObjectManager", "GetManagedObjects")
    else { return }
    for (path, value) in reply.first?.stringDictionary ?? [:] where path.hasPrefix(root) {
      guard let monitor = value.stringDictionary?[interface]?.stringDictionary else { continue }
      await accept(path, monitor)
    }
  }

  /// The monitors' clients hear `member` (bluetoothd's `[noreply]` calls:
  /// Release, DeviceFound(o), DeviceLost(o)).
  func callMonitors(_ member: String, _ arguments: [DBusValue] = []) async throws {
    for (client, path) in monitors.value.withLock({ $0 }) {
      _ = try await connection.call(
        client, path, "org.bluez.AdvertisementMonitor1", member, arguments)
    }
  }

  /// An advertisement of a device matched a monitor, delivered as bluetoothd
  /// 5.66 does: the Device1 added, or its ManufacturerData changed only when
  /// it differs, then `DeviceFound(o)` on every monitor.
  func monitorHears(address: String, manufacturerData: [UInt8]) async throws {
    let path = Self.adapterPath + "/dev_" + address.replacingOccurrences(of: ":", with: "_")
    let same = devices.value.withLock { $0[path] }?.value.withLock { $0 == manufacturerData }
    if same != true { try await advertise(address: address, manufacturerData: manufacturerData) }
    try await callMonitors("DeviceFound", [.objectPath(path)])
  }

  /// How many calls of `member` the fake has had.
  func count(_ member: String) -> Int { log.value.withLock { $0.counts[member] ?? 0 } }

  /// Powers the adapter on or off (PropertiesChanged, as bluetoothd does).
  func setPowered(_ on: Bool) async throws {
    powered.value.withLock { $0 = on }
    try await connection.emitPropertiesChanged(
      path: Self.adapterPath, interface: "org.bluez.Adapter1", names: ["Powered"])
  }

  /// Adds (or updates) a device advertising `manufacturerData` for 0xFFFF.
  func advertise(address: String, manufacturerData: [UInt8], rssi: Int16 = -40) async throws {
    let path = Self.adapterPath + "/dev_" + address.replacingOccurrences(of: ":", with: "_")
    let data = Shared(manufacturerData)
    if let current = devices.value.withLock({ $0[path] }) {
      current.value.withLock { $0 = manufacturerData }
      try await connection.emitPropertiesChanged(
        path: path, interface: "org.bluez.Device1", names: ["ManufacturerData"])
      return
    }
    let device = DBusObject(
      path: path, interface: "org.bluez.Device1",
      properties: [
        .init("Address", "s"), .init("AddressType", "s"), .init("RSSI", "n"),
        .init("ManufacturerData", "a{qv}"),
      ],
      property: { name in
        switch name {
        case "Address": .string(address)
        case "AddressType": .string("random")
        case "RSSI": .int16(rssi)
        case "ManufacturerData":
          .array(
            elementSignature: "{qv}",
            [.dictEntry(.uint16(0xFFFF), .variant(.bytes(data.value.withLock { $0 })))])
        default: nil
        }
      })
    devices.value.withLock { $0[path] = data }
    try await connection.export(device)
    try await connection.emitInterfaces(added: true, path: path, interfaces: ["org.bluez.Device1"])
  }

  /// Sets the State of an audio transport (MediaTransport1) of a device on
  /// the adapter, adding it first if it is new, as bluetoothd does when
  /// headphones connect ("idle") and play ("pending", then "active").
  func setTransport(_ name: String, state: String) async throws {
    let path = Self.adapterPath + "/dev_00_11_22_33_44_55/" + name
    if let current = transports.value.withLock({ $0[path] }) {
      current.value.withLock { $0 = state }
      try await connection.emitPropertiesChanged(
        path: path, interface: "org.bluez.MediaTransport1", names: ["State"])
      return
    }
    let value = Shared(state)
    let transport = DBusObject(
      path: path, interface: "org.bluez.MediaTransport1",
      properties: [.init("State", "s"), .init("UUID", "s")],
      property: { name in
        switch name {
        case "State": .string(value.value.withLock { $0 })
        case "UUID": .string("0000110b-0000-1000-8000-00805f9b34fb")
        default: nil
        }
      })
    transports.value.withLock { $0[path] = value }
    try await connection.export(transport)
    try await connection.emitInterfaces(
      added: true, path: path, interfaces: ["org.bluez.MediaTransport1"])
  }

  /// The next call of `member` (earlier calls of others are dropped); nil
  /// once the fake is killed.
  func next(_ member: String) async -> Call? {
    await withCheckedContinuation { continuation in
      let now = log.value.withLock { l -> Call?? in
        if let i = l.calls.firstIndex(where: { $0.member == member }) {
          let call = l.calls[i]
          l.calls.removeSubrange(...i)
          return .some(call)
        }
        if l.ended { return .some(nil) }
        l.waiters.append((member, continuation))
        return nil
      }
      if let now { continuation.resume(returning: now) }
    }
  }

  /// bluetoothd dies: its connection (and name) go away.
  func kill() async {
    connection.close()
    _ = await connection.waitUntilClosed()
    let waiters = log.value.withLock { l in
      l.ended = true
      defer { l.waiters.removeAll() }
      return l.waiters.map(\.continuation)
    }
    for waiter in waiters { waiter.resume(returning: nil) }
  }
}
