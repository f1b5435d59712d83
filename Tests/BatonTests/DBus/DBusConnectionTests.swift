import Foundation
import Synchronization
import Testing

@testable import BatonAgent
@testable import BatonDBus
@testable import BatonHCI
@testable import BatonHandoff
@testable import BatonHost
@testable import BatonL2CAP
@testable import BatonSystem

/// The sd-bus wrappers on a private bus: values round-trip through real
/// messages, an exported object answers calls and Properties, signals arrive,
/// errors carry their D-Bus names.
@Suite("DBusConnection", .serialized)
struct DBusConnectionTests {
  static let sample: [DBusValue] = [
    .byte(7), .boolean(true), .int16(-3), .uint16(0xFFFF), .int32(-70000), .uint32(4_000_000_000),
    .int64(-1 << 40), .uint64(1 << 63), .double(2.5), .string("héllo"),
    .objectPath("/org/baton/x"), .signature("a{sv}"),
    .bytes([1, 2, 3]), .bytes([]),
    .stringVariantDictionary(["Transport": .string("le"), "DuplicateData": .boolean(true)]),
    .array(
      elementSignature: "{qv}", [.dictEntry(.uint16(0xFFFF), .variant(.bytes([9, 8])))]),
    .structure([.string("a"), .variant(.int32(1))]),
  ]

  /// An echo object: its `Echo` method returns its arguments.
  func echoObject(_ released: Shared<Int>) -> DBusObject {
    DBusObject(
      path: "/org/baton/test", interface: "org.baton.Test1",
      properties: [.init("Name", "s"), .init("Data", "a{qv}")],
      methods: [.init("Echo", signature: "v", result: "v"), .init("Release"), .init("Fail")],
      property: { name in
        switch name {
        case "Name": .string("baton")
        case "Data":
          .array(
            elementSignature: "{qv}",
            [.dictEntry(.uint16(0xFFFF), .variant(.bytes(Array(repeating: 0xAB, count: 24))))])
        default: nil
        }
      },
      method: { member, arguments in
        switch member {
        case "Echo": return .success(arguments)
        case "Release":
          released.value.withLock { $0 += 1 }
          return .success([])
        default: return .failure(.remote(name: "org.baton.Error.Refused", message: "no"))
        }
      })
  }

  /// Runs `body` with a private bus and two connections on it (a server
  /// and a client), closed and stopped afterwards.
  func withTwoConnections(
    _ body: (PrivateBus, DBusConnection, DBusConnection) async throws -> Void
  ) async throws {
    let bus = try PrivateBus()
    defer { bus.stop() }
    let server = try bus.connect()
    let client = try bus.connect()
    defer {
      server.close()
      client.close()
    }
    try await body(bus, server, client)
  }

  @Test func valuesRoundTripThroughAnExportedObject() async throws {
    try await withTwoConnections { _, server, client in
      let released = Shared(0)
      let object = echoObject(released)
      try await server.export(object)
      let name = try await server.uniqueName()
      #expect(name.hasPrefix(":"))

      for value in Self.sample {
        let reply = try await client.call(
          name, "/org/baton/test", "org.baton.Test1", "Echo", [.variant(value)])
        #expect(reply == [.variant(value)], "\(value.signature)")
      }
      #expect(
        try await client.property(name, "/org/baton/test", "org.baton.Test1", "Name")
          == .string("baton"))
      let all = try await client.allProperties(name, "/org/baton/test", "org.baton.Test1")
      #expect(all["Name"] == .string("baton"))
      let data = all["Data"]?.integerDictionary?[0xFFFF]?.byteArray
      #expect(data == Array(repeating: 0xAB, count: 24))

      _ = try await client.call(name, "/org/baton/test", "org.baton.Test1", "Release")
      #expect(released.value.withLock { $0 } == 1)

      await #expect(throws: DBusError.remote(name: "org.baton.Error.Refused", message: "no")) {
        _ = try await client.call(name, "/org/baton/test", "org.baton.Test1", "Fail")
      }
      do {
        _ = try await client.call(
          name, "/org/baton/nothing", "org.baton.Test1", "Echo", [.variant(.byte(1))])
        Issue.record("a call to a missing object succeeded")
      } catch let error as DBusError {
        #expect(error.isUnknownObject, "\(error)")
      }
      await server.unexport(object)
      await #expect(throws: DBusError.self) {
        _ = try await client.call(name, "/org/baton/test", "org.baton.Test1", "Release")
      }
      #expect(released.value.withLock { $0 } == 1)
    }
  }

  @Test func missingServicesAndNameOwners() async throws {
    let bus = try PrivateBus()
    defer { bus.stop() }
    let client = try bus.connect()
    defer { client.close() }
    #expect(try await client.nameOwner("org.bluez") == nil)
    do {
      _ = try await client.call(
        "org.bluez", "/", "org.freedesktop.DBus.ObjectManager", "GetManagedObjects")
      Issue.record("a call to a missing service succeeded")
    } catch let error as DBusError {
      #expect(error.isServiceUnknown, "\(error)")
    }

    // NameOwnerChanged: a second connection takes the name, then goes away.
    let (events, continuation) = AsyncStream.makeStream(of: [String].self)
    _ = try await client.subscribe(
      sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus", member: "NameOwnerChanged"
    ) { signal in
      let strings = signal.arguments.compactMap(\.string)
      if strings.first == "org.bluez" { continuation.yield(strings) }
    }
    let service = try bus.connect()
    try await service.requestName("org.bluez")
    let owner = try await service.uniqueName()
    var iterator = events.makeAsyncIterator()
    #expect(await iterator.next() == ["org.bluez", "", owner])
    #expect(try await client.nameOwner("org.bluez") == owner)
    service.close()
    #expect(await service.waitUntilClosed() == .closed(reason: "closed"))
    #expect(await iterator.next() == ["org.bluez", owner, ""])
  }

  @Test func propertiesChangedAndInterfacesAddedArrive() async throws {
    try await withTwoConnections { _, server, client in
      let value = Shared<[UInt8]>([1])
      let object = DBusObject(
        path: "/org/baton/adv", interface: "org.baton.Adv1", properties: [.init("Data", "ay")],
        property: { _ in .bytes(value.value.withLock { $0 }) })
      try await server.addObjectManager(at: "/")
      try await server.export(object)
      let name = try await server.uniqueName()

      let (signals, continuation) = AsyncStream.makeStream(of: DBusSignal.self)
      _ = try await client.subscribe(
        sender: name, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged"
      ) { continuation.yield($0) }
      _ = try await client.subscribe(
        sender: name, interface: "org.freedesktop.DBus.ObjectManager", member: "InterfacesAdded"
      ) { continuation.yield($0) }
      var iterator = signals.makeAsyncIterator()

      value.value.withLock { $0 = [4, 5, 6] }
      try await server.emitPropertiesChanged(
        path: "/org/baton/adv", interface: "org.baton.Adv1", names: ["Data"])
      let changed = try #require(await iterator.next())
      #expect(changed.path == "/org/baton/adv")
      #expect(changed.arguments.first?.string == "org.baton.Adv1")
      #expect(
        changed.arguments.dropFirst().first?.stringDictionary?["Data"]?.byteArray == [4, 5, 6])

      try await server.emitInterfaces(
        added: true, path: "/org/baton/adv", interfaces: ["org.baton.Adv1"])
      let added = try #require(await iterator.next())
      #expect(added.member == "InterfacesAdded")
      #expect(added.arguments.first == .objectPath("/org/baton/adv"))
      let interfaces = added.arguments.dropFirst().first?.stringDictionary
      #expect(interfaces?["org.baton.Adv1"]?.stringDictionary?["Data"]?.byteArray == [4, 5, 6])

      let managed = try await client.call(
        name, "/", "org.freedesktop.DBus.ObjectManager", "GetManagedObjects")
      #expect(managed.first?.stringDictionary?["/org/baton/adv"] != nil)
    }
  }

  /// The bus daemon filters by the match rule: a signal of another adapter,
  /// or another name's NameOwnerChanged, never reaches the process. Each
  /// unwanted signal is sent before the wanted one, so if the filter let it
  /// through it would arrive first (one sender's signals keep their order).
  @Test func matchRulesKeepOtherAdaptersSignalsOff() async throws {
    try await withTwoConnections { bus, server, client in
      try await server.addObjectManager(at: "/")
      for path in [
        "/org/bluez/hci0", "/org/bluez/hci0/dev_a", "/org/bluez/hci1", "/org/bluez/hci1/dev_b",
      ] {
        try await server.export(
          DBusObject(
            path: path, interface: "org.baton.Thing1", properties: [.init("Data", "ay")],
            property: { _ in .bytes([1]) }))
      }
      let name = try await server.uniqueName()
      let (signals, continuation) = AsyncStream.makeStream(of: DBusSignal.self)
      _ = try await client.subscribe(
        sender: name, pathNamespace: "/org/bluez/hci0",
        interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged"
      ) { continuation.yield($0) }
      _ = try await client.subscribe(
        sender: name, interface: "org.freedesktop.DBus.ObjectManager", member: nil,
        arg0Path: "/org/bluez/hci0"
      ) { continuation.yield($0) }
      _ = try await client.subscribe(
        sender: name, interface: "org.freedesktop.DBus.ObjectManager", member: nil,
        arg0Path: "/org/bluez/hci0/"
      ) { continuation.yield($0) }
      _ = try await client.subscribe(
        sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus",
        member: "NameOwnerChanged", arg0: "org.bluez"
      ) { continuation.yield($0) }
      var iterator = signals.makeAsyncIterator()

      for path in ["/org/bluez/hci1/dev_b", "/org/bluez/hci0/dev_a"] {
        try await server.emitPropertiesChanged(
          path: path, interface: "org.baton.Thing1", names: ["Data"])
      }
      #expect(try #require(await iterator.next()).path == "/org/bluez/hci0/dev_a")
      // The adapter itself passes (arg0path, equal), and what is below it
      // (arg0path ending in a slash). arg0 matches only strings, not paths.
      for path in [
        "/org/bluez/hci1", "/org/bluez/hci1/dev_b", "/org/bluez/hci0/dev_a", "/org/bluez/hci0",
      ] {
        try await server.emitInterfaces(added: true, path: path, interfaces: ["org.baton.Thing1"])
      }
      #expect(
        try #require(await iterator.next()).arguments.first == .objectPath("/org/bluez/hci0/dev_a"))
      #expect(try #require(await iterator.next()).arguments.first == .objectPath("/org/bluez/hci0"))
      // Another client's connection and another name: not ours.
      let other = try bus.connect()
      defer { other.close() }
      try await other.requestName("org.other")
      try await other.requestName("org.bluez")
      let owned = try #require(await iterator.next())
      #expect(owned.member == "NameOwnerChanged")
      #expect(owned.arguments.first?.string == "org.bluez")
    }
  }

  /// With signals coalesced, a burst still arrives whole and in order, and
  /// calls made meanwhile are answered (they wait at most the pause).
  @Test func coalescedSignalsArriveWholeAndCallsStillAnswer() async throws {
    try await withTwoConnections { _, server, client in
      client.coalesceSignals(for: .milliseconds(20))
      let value = Shared<[UInt8]>([0])
      try await server.export(
        DBusObject(
          path: "/org/baton/adv", interface: "org.baton.Adv1", properties: [.init("Data", "ay")],
          property: { _ in .bytes(value.value.withLock { $0 }) }))
      let name = try await server.uniqueName()
      let (signals, continuation) = AsyncStream.makeStream(of: [UInt8].self)
      _ = try await client.subscribe(
        sender: name, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged"
      ) { signal in
        if let data = signal.arguments.dropFirst().first?.stringDictionary?["Data"]?.byteArray {
          continuation.yield(data)
        }
      }
      for i in 1...50 {
        value.value.withLock { $0 = [UInt8(i)] }
        try await server.emitPropertiesChanged(
          path: "/org/baton/adv", interface: "org.baton.Adv1", names: ["Data"])
        if i == 25 { #expect(try await client.nameOwner("org.bluez") == nil) }
      }
      var iterator = signals.makeAsyncIterator()
      for i in 1...50 { #expect(await iterator.next() == [UInt8(i)]) }
      #expect(try await client.nameOwner("org.bluez") == nil)
    }
  }

  @Test func aMatchValueWithAQuoteIsRefused() async throws {
    #expect(throws: DBusError.self) {
      _ = try DBusConnection.matchRule([("arg0", "it's")])
    }
    #expect(
      try DBusConnection.matchRule([("sender", "org.bluez"), ("path", nil), ("arg0", "x")])
        == "type='signal',sender='org.bluez',arg0='x'")
  }

  @Test func closingFailsPendingCallsAndLaterOnes() async throws {
    let bus = try PrivateBus()
    let client = try bus.connect()
    bus.stop()
    // The daemon is gone: the bus thread sees the connection end.
    let reason = await client.waitUntilClosed()
    #expect("\(reason)".contains("closed"))
    await #expect(throws: DBusError.self) { _ = try await client.nameOwner("org.bluez") }
    client.close()
  }

  @Test func connectingToNoBusSaysSo() throws {
    #expect(throws: DBusError.self) {
      _ = try DBusConnection.connect(address: "unix:path=/nonexistent/baton-bus")
    }
  }
}

/// A value shared with escaping closures (a `Mutex` cannot be captured).
final class Shared<T: Sendable>: Sendable {
  let value: Mutex<T>
  init(_ initial: T) { value = Mutex(initial) }
}
