import BatonSystem
import CSystemd

#if canImport(Glibc)
  import Glibc
#endif

/// An object we export on the bus: one interface at `path` with read-only
/// properties and methods, served through an sd-bus vtable
/// (`sd_bus_add_object_vtable`). sd-bus answers `Properties.Get`/`GetAll`
/// and `Introspect` from the vtable; property values come from `property`,
/// method calls go to `method` (with the caller's unique name). Both
/// closures run on the bus thread and must return quickly. A call sent
/// without expecting a reply (bluetoothd's `[noreply]` methods) gets none.
public final class DBusObject: @unchecked Sendable {
  public struct Property: Sendable {
    public var name: String
    public var signature: String
    /// Whether `PropertiesChanged` carries the new value.
    public var emitsChange: Bool
    public init(_ name: String, _ signature: String, emitsChange: Bool = true) {
      self.name = name
      self.signature = signature
      self.emitsChange = emitsChange
    }
  }

  public struct Method: Sendable {
    public var name: String
    public var signature: String
    public var result: String
    public init(_ name: String, signature: String = "", result: String = "") {
      self.name = name
      self.signature = signature
      self.result = result
    }
  }

  public let path: String
  public let interface: String
  public let properties: [Property]
  public let methods: [Method]
  let property: @Sendable (String) -> DBusValue?
  let method: @Sendable (_ sender: String, String, [DBusValue]) -> Result<[DBusValue], DBusError>

  // The vtable and the strings it points to, alive as long as this object
  // (sd-bus keeps pointers into them). Touched on the bus thread only.
  private var vtable: UnsafeMutablePointer<sd_bus_vtable>?
  private var strings: [UnsafeMutablePointer<CChar>] = []
  var slot: OpaquePointer?

  public init(
    path: String, interface: String, properties: [Property], methods: [Method] = [],
    property: @escaping @Sendable (String) -> DBusValue?,
    method: @escaping @Sendable (String, [DBusValue]) -> Result<[DBusValue], DBusError> = {
      name, _ in .failure(.remote(name: DBusError.unknownMethodName, message: name))
    }
  ) {
    self.path = path
    self.interface = interface
    self.properties = properties
    self.methods = methods
    self.property = property
    self.method = { _, member, arguments in method(member, arguments) }
  }

  /// An object whose `method` is also told who called (`sender`, the
  /// caller's unique name), to call it back.
  public init(
    path: String, interface: String, properties: [Property], methods: [Method] = [],
    property: @escaping @Sendable (String) -> DBusValue?,
    methodFrom method: @escaping @Sendable (_ sender: String, String, [DBusValue]) -> Result<
      [DBusValue], DBusError
    >
  ) {
    self.path = path
    self.interface = interface
    self.properties = properties
    self.methods = methods
    self.property = property
    self.method = method
  }

  deinit {
    vtable?.deallocate()
    for s in strings { free(s) }
  }

  /// Builds the vtable (once) on the bus thread.
  func makeVTable() -> UnsafePointer<sd_bus_vtable> {
    if let vtable { return UnsafePointer(vtable) }
    func keep(_ s: String) -> UnsafeMutablePointer<CChar> {
      let copy = strdup(s)!
      strings.append(copy)
      return copy
    }
    var entries = [baton_vtable_start()]
    for p in properties {
      entries.append(
        baton_vtable_property(
          keep(p.name), keep(p.signature), DBusObject.getter, p.emitsChange ? 1 : 0)
      )
    }
    for m in methods {
      entries.append(
        baton_vtable_method(keep(m.name), keep(m.signature), keep(m.result), DBusObject.handler))
    }
    entries.append(baton_vtable_end())
    let table = UnsafeMutablePointer<sd_bus_vtable>.allocate(capacity: entries.count)
    table.initialize(from: entries, count: entries.count)
    vtable = table
    return UnsafePointer(table)
  }

  /// `sd_bus_property_get_t`: a non-capturing closure; the object comes back
  /// through `userdata`.
  private static let getter: sd_bus_property_get_t = {
    _, _, _, property, reply, userdata, busError in
    guard let userdata, let property, let reply else { return -EINVAL }
    let object = Unmanaged<DBusObject>.fromOpaque(userdata).takeUnretainedValue()
    let name = String(cString: property)
    guard let value = object.property(name) else {
      return sd_bus_error_set(busError, DBusError.unknownMethodName, "no property \(name)")
    }
    do {
      // The vtable declares the type; a variant's content is what goes in.
      try DBusMessageCoding.append(value.unwrapped, to: reply)
    } catch {
      return sd_bus_error_set(busError, "org.freedesktop.DBus.Error.Failed", "\(error)")
    }
    return 1
  }

  /// `sd_bus_message_handler_t` for every method of the vtable.
  private static let handler: sd_bus_message_handler_t = { message, userdata, busError in
    guard let message, let userdata else { return -EINVAL }
    let object = Unmanaged<DBusObject>.fromOpaque(userdata).takeUnretainedValue()
    let member = sd_bus_message_get_member(message).map { String(cString: $0) } ?? ""
    let sender = sd_bus_message_get_sender(message).map { String(cString: $0) } ?? ""
    let arguments: [DBusValue]
    do {
      arguments = try DBusMessageCoding.read(message)
    } catch {
      return sd_bus_error_set(busError, "org.freedesktop.DBus.Error.InvalidArgs", "\(error)")
    }
    let result = object.method(sender, member, arguments)
    // sd-bus refuses a reply to a call that expects none.
    guard sd_bus_message_get_expect_reply(message) > 0 else { return 1 }
    switch result {
    case .failure(let failure):
      let name = failure.name ?? "org.freedesktop.DBus.Error.Failed"
      var text = "\(failure)"
      if case .remote(_, let message) = failure { text = message }
      return sd_bus_error_set(busError, name, text)
    case .success(let results):
      var reply: OpaquePointer?
      var r = sd_bus_message_new_method_return(message, &reply)
      guard r >= 0, let reply else { return r }
      defer { sd_bus_message_unref(reply) }
      do {
        try DBusMessageCoding.append(results, to: reply)
      } catch {
        return sd_bus_error_set(busError, "org.freedesktop.DBus.Error.Failed", "\(error)")
      }
      r = sd_bus_send(sd_bus_message_get_bus(message), reply, nil)
      return r < 0 ? r : 1
    }
  }
}

/// A signal received through `DBusConnection.subscribe`.
public struct DBusSignal: Sendable, CustomStringConvertible {
  public var sender: String
  public var path: String
  public var interface: String
  public var member: String
  public var arguments: [DBusValue]

  public var description: String {
    "\(interface).\(member) on \(path) from \(sender): \(arguments)"
  }
}
