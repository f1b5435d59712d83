import Foundation

@testable import BatonDBus
@testable import BatonSystem

/// A stand-in for the desktop's notification service
/// (`org.freedesktop.Notifications`, the Desktop Notifications
/// Specification) on a private bus, as FakeBluetoothd stands in for BlueZ:
/// it records each `Notify` and can send `ActionInvoked` and
/// `NotificationClosed` as a user's click would.
final class FakeNotificationService: @unchecked Sendable {
  struct Notification: Sendable, Equatable {
    var id: UInt32
    var appName: String
    var replaces: UInt32
    var summary: String
    var body: String
    var actions: [String]
  }

  static let name = "org.freedesktop.Notifications"
  static let path = "/org/freedesktop/Notifications"

  let connection: DBusConnection
  private let received = LockedBox<[Notification]>([])
  private var object: DBusObject?

  init(bus: PrivateBus) async throws {
    connection = try bus.connect()
    let received = received
    let object = DBusObject(
      path: Self.path, interface: Self.name, properties: [],
      methods: [
        DBusObject.Method("Notify", signature: "susssasa{sv}i", result: "u"),
        DBusObject.Method("GetCapabilities", result: "as"),
        DBusObject.Method("GetServerInformation", result: "ssss"),
        DBusObject.Method("CloseNotification", signature: "u"),
      ],
      property: { _ in nil },
      method: { member, arguments in
        switch member {
        case "Notify":
          guard arguments.count == 8, let app = arguments[0].string,
            let replaces = arguments[1].integer.flatMap(UInt32.init(exactly:)),
            let summary = arguments[3].string, let body = arguments[4].string,
            let actions = arguments[5].elements?.compactMap(\.string)
          else {
            return .failure(.remote(name: "org.freedesktop.DBus.Error.InvalidArgs", message: "Notify"))
          }
          let id = received.mutex.withLock { list -> UInt32 in
            let id = replaces != 0 ? replaces : UInt32(list.count + 1)
            list.append(
              Notification(
                id: id, appName: app, replaces: replaces, summary: summary, body: body,
                actions: actions))
            return id
          }
          return .success([.uint32(id)])
        case "GetCapabilities":
          return .success([.array(elementSignature: "s", [.string("actions"), .string("body")])])
        case "GetServerInformation":
          return .success([.string("fake"), .string("baton tests"), .string("1"), .string("1.2")])
        case "CloseNotification":
          return .success([])
        default:
          return .failure(.remote(name: DBusError.unknownMethodName, message: member))
        }
      })
    try await connection.export(object)
    self.object = object
    try await connection.requestName(Self.name)
  }

  /// Every `Notify` so far, in order.
  var notifications: [Notification] { received.mutex.withLock { $0 } }

  /// A click on `action` of notification `id`.
  func invoke(_ id: UInt32, action: String) async throws {
    try await connection.emitSignal(
      path: Self.path, interface: Self.name, member: "ActionInvoked",
      [.uint32(id), .string(action)])
  }

  /// The user closed notification `id` (reason 2, dismissed).
  func close(_ id: UInt32) async throws {
    try await connection.emitSignal(
      path: Self.path, interface: Self.name, member: "NotificationClosed", [.uint32(id), .uint32(2)])
  }

  func stop() {
    connection.close()
  }
}
