import BatonDBus
import BatonHandoff
import BatonSystem
import Synchronization

/// Our org.bluez.AdvertisementMonitor1: an `or_patterns` monitor whose one
/// pattern is our beacon's Manufacturer Specific AD with company 0xFFFF
/// (PROTOCOL.md 3), exported under its own ObjectManager root, which is
/// what `AdvertisementMonitorManager1.RegisterMonitor` takes.
///
/// bluetoothd (5.66, with experimental features) reads the monitor through
/// that ObjectManager, has the kernel add the pattern to its passive
/// background scan (60/30 ms, no scan requests, no discovery) and calls
/// `Activate()`. Then for every advertisement that matches it creates or
/// updates the advertiser's Device1 (InterfacesAdded, PropertiesChanged on
/// ManufacturerData only when the data changed, on RSSI when it moved 8 dBm
/// or more), and after those signals calls `DeviceFound(o)` with the
/// device's path (no RSSI thresholds are set, so for every advertisement).
/// `Release()` says the monitor no longer runs (the kernel dropped it, or
/// the adapter went away). Those calls expect no reply.
final class AdvertisementMonitor: Sendable {
  static let rootPath = "/org/baton/monitor"
  static let path = rootPath + "/beacon"
  static let interface = "org.bluez.AdvertisementMonitor1"
  static let managerInterface = "org.bluez.AdvertisementMonitorManager1"
  static let type = "or_patterns"
  /// The Manufacturer Specific AD type (0xFF), and the company id 0xFFFF
  /// at its start (the beacon's header after the Flags AD).
  static let adType: UInt8 = 0xFF
  static let content: [UInt8] = Array(Beacon.header[5...6])

  /// `Patterns` as bluetoothd reads it: a(yyay) of (start position, AD
  /// type, content).
  static var patterns: DBusValue {
    .array(
      elementSignature: "(yyay)",
      [.structure([.byte(0), .byte(adType), .bytes(content)])])
  }

  enum Event: Sendable, Equatable {
    case activated
    case released
    /// An advertisement of the device at this path matched.
    case found(String)
  }

  /// Where bluetoothd's calls go, shared with the object's method closure.
  /// The closure sits in a struct: a bare (optional) closure as a Mutex's
  /// value is reabstracted by `withLock`'s generic `inout` at every call,
  /// one thunk more each time (a stack and heap that grew with every
  /// advertisement heard).
  private final class Handler: Sendable {
    struct Action: Sendable {
      let call: @Sendable (Event) -> Void
    }
    let value = Mutex<Action?>(nil)
  }

  let object: DBusObject
  private let handler = Handler()

  init() {
    let handler = self.handler
    object = DBusObject(
      path: Self.path, interface: Self.interface,
      properties: [
        .init("Type", "s", emitsChange: false), .init("Patterns", "a(yyay)", emitsChange: false),
      ],
      methods: [
        .init("Release"), .init("Activate"), .init("DeviceFound", signature: "o"),
        .init("DeviceLost", signature: "o"),
      ],
      property: { name in
        switch name {
        case "Type": .string(Self.type)
        case "Patterns": Self.patterns
        default: nil
        }
      },
      method: { member, arguments in
        let event: Event? =
          switch member {
          case "Activate": .activated
          case "Release": .released
          case "DeviceFound": arguments.first?.string.map(Event.found)
          default: nil
          }
        if let event, let handle = handler.value.withLock({ $0 }) { handle.call(event) }
        return .success([])
      })
  }

  /// Where bluetoothd's calls go (on the bus thread).
  func onEvent(_ handle: @escaping @Sendable (Event) -> Void) {
    handler.value.withLock { $0 = Handler.Action(call: handle) }
  }

  /// Exports the monitor and its ObjectManager root on `bus`.
  func export(on bus: DBusConnection) async throws {
    try await bus.addObjectManager(at: Self.rootPath)
    try await bus.export(object)
  }

  /// Takes the monitor off the bus (InterfacesRemoved, as bluetoothd
  /// watches our ObjectManager): bluetoothd drops it, without a Release,
  /// and has the kernel remove its pattern.
  func withdraw(on bus: DBusConnection) async throws {
    try await bus.emitInterfaces(added: false, path: Self.path, interfaces: [Self.interface])
    await bus.unexport(object)
  }

  /// Puts it back (InterfacesAdded): bluetoothd reads it as a new monitor
  /// of our registration, and activates it.
  func offer(on bus: DBusConnection) async throws {
    try await bus.export(object)
    try await bus.emitInterfaces(added: true, path: Self.path, interfaces: [Self.interface])
  }
}
