import BatonSystem
import CBatonShims
import CSystemd
import FoundationEssentials
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// A D-Bus connection through sd-bus, driven by a thread of its own.
///
/// sd-bus is not thread-safe, so every sd-bus call on this connection runs on
/// its bus thread: the thread waits in a `PollLoop` on the bus descriptor
/// (`sd_bus_get_fd`, `sd_bus_get_events`, `sd_bus_get_timeout`), dispatches
/// with `sd_bus_process`, and runs the jobs other threads queue (they wake
/// the loop). Method calls are asynchronous (`sd_bus_call_async`), so
/// Swift's cooperative pool never blocks on the bus. Signal handlers and
/// exported objects' callbacks run on the bus thread.
public final class DBusConnection: @unchecked Sendable {
  /// The bus the connection is on, for messages.
  public let label: String

  private let bus: OpaquePointer
  /// The bus thread's wait; it lives as long as the object, so a late
  /// `wake()` from another thread never writes to a reused descriptor.
  private let pollLoop: PollLoop
  private let log = Logger(label: "dbus")

  private struct Shared {
    var jobs: [@Sendable (OpaquePointer) -> Void] = []
    var closing: String?
    var closed: DBusError?
    var closeWaiters: [CheckedContinuation<DBusError, Never>] = []
  }
  private let shared = Mutex(Shared())

  // Bus-thread state (no lock: only the bus thread touches these).
  private var pendingCalls: [ObjectIdentifier: CallBox] = [:]
  private var subscriptions: [UInt64: (slot: OpaquePointer, box: Unmanaged<SignalBox>)] = [:]
  private var exports: [ObjectIdentifier: DBusObject] = [:]
  private var objectManagers: [OpaquePointer] = []
  private var nextSubscription: UInt64 = 0
  private let tally = SignalTally()
  /// `coalesceSignals(for:)`'s pause, in nanoseconds (0: none).
  private let coalescing = Atomic<Int64>(0)

  /// Connects to the system bus (`DBUS_SYSTEM_BUS_ADDRESS` if set, else
  /// /run/dbus/system_bus_socket).
  public static func system() throws(DBusError) -> DBusConnection {
    try openLibrary()
    var bus: OpaquePointer?
    try DBusMessageCoding.check("connecting to the system bus", sd_bus_open_system(&bus))
    return try DBusConnection(bus: bus!, label: "the system bus")
  }

  /// Connects to the user's session bus (`DBUS_SESSION_BUS_ADDRESS` if set,
  /// else `$XDG_RUNTIME_DIR/bus`): desktop notifications.
  public static func session() throws(DBusError) -> DBusConnection {
    try openLibrary()
    var bus: OpaquePointer?
    try DBusMessageCoding.check("connecting to the session bus", sd_bus_open_user(&bus))
    return try DBusConnection(bus: bus!, label: "the session bus")
  }

  /// Connects to the bus at `address` (`unix:path=...`), as a bus client.
  public static func connect(address: String) throws(DBusError) -> DBusConnection {
    try openLibrary()
    var bus: OpaquePointer?
    try DBusMessageCoding.check("sd_bus_new", sd_bus_new(&bus))
    do {
      try DBusMessageCoding.check("sd_bus_set_address", sd_bus_set_address(bus, address))
      try DBusMessageCoding.check("sd_bus_set_bus_client", sd_bus_set_bus_client(bus, 1))
      try DBusMessageCoding.check("connecting to \(address)", sd_bus_start(bus))
    } catch {
      sd_bus_unref(bus)
      throw error
    }
    return try DBusConnection(bus: bus!, label: address)
  }

  /// Opens libsystemd, which baton loads only when it first needs D-Bus
  /// (Sources/CBatonShims/systemd.c).
  private static func openLibrary() throws(DBusError) {
    if let reason = baton_systemd_open_error() {
      throw DBusError.libraryMissing(reason: String(cString: reason))
    }
  }

  private init(bus: OpaquePointer, label: String) throws(DBusError) {
    self.bus = bus
    self.label = label
    do throws(Errno) {
      pollLoop = try PollLoop()
    } catch {
      sd_bus_unref(bus)
      throw DBusError.failed(operation: "pipe", errno: error)
    }
    OwnedThread.start(name: "baton-dbus") { [self] in loop() }
  }

  // MARK: Running on the bus thread

  /// Runs `body` on the bus thread and returns its result.
  public func perform<T: Sendable>(_ body: @escaping @Sendable (OpaquePointer) throws -> T)
    async throws -> T
  {
    try await withCheckedThrowingContinuation { continuation in
      enqueue(
        { bus in continuation.resume(with: Result { try body(bus) }) },
        ifClosed: { continuation.resume(throwing: $0) })
    }
  }

  private func enqueue(
    _ job: @escaping @Sendable (OpaquePointer) -> Void, ifClosed: (DBusError) -> Void
  ) {
    let refused = shared.withLock { s -> DBusError? in
      if let closed = s.closed { return closed }
      if let reason = s.closing { return .closed(reason: reason) }
      s.jobs.append(job)
      return nil
    }
    if let refused {
      ifClosed(refused)
      return
    }
    pollLoop.wake()
  }

  /// After a turn that delivered signals, the bus thread leaves the bus
  /// alone for `window` and then takes what came meanwhile in one go, so a
  /// burst of signals spread over a second (bluetoothd's, for every device
  /// a scan window finds) costs a few wake-ups, not one each. A job queued
  /// meanwhile (a call to make) ends the pause at once; a reply that comes
  /// in it waits at most `window`. Zero (the default) turns it off.
  /// At most a second: a longer pause would hold replies that long.
  public func coalesceSignals(for window: Duration) {
    let (seconds, attoseconds) = window.components
    let nanoseconds: Int64 =
      seconds < 0 ? 0 : seconds >= 1 ? 1_000_000_000 : max(0, attoseconds / 1_000_000_000)
    coalescing.store(nanoseconds, ordering: .relaxed)
  }

  private func loop() {
    var failure: DBusError?
    // A failing poll(2) is not the bus's failure: the next turn asks sd-bus again.
    while failure == nil {
      try? pollLoop.run { () -> PollLoop.Turn? in
        let delivered = tally.count
        if let ended = processUntilIdle() {
          failure = ended
          return nil
        }
        let pause = coalescing.load(ordering: .relaxed)
        if pause > 0, tally.count != delivered {
          // Only the wake-up pipe: a queued job ends the pause.
          return PollLoop.Turn([], timeout: .nanoseconds(pause))
        }
        guard let turn = busTurn() else {
          failure = .closed(reason: "lost")
          return nil
        }
        return turn
      }
    }
    shutDown(failure ?? .closed(reason: "closed"))
  }

  /// Runs the queued jobs and `sd_bus_process` until it has nothing more
  /// to do; the reason the connection ends, if it does.
  private func processUntilIdle() -> DBusError? {
    while true {
      let (jobs, closing) = shared.withLock { s in
        defer { s.jobs.removeAll() }
        return (s.jobs, s.closing)
      }
      for job in jobs { job(bus) }
      if let closing { return .closed(reason: closing) }
      let r = sd_bus_process(bus, nil)
      if r < 0 {
        log.warning("connection to \(label) lost: \(Errno(rawValue: -r))")
        return .closed(reason: "lost: \(Errno(rawValue: -r))")
      }
      if r == 0 { return nil }
    }
  }

  /// What the bus thread waits for: the bus descriptor for what sd-bus
  /// asks (`sd_bus_get_events`), until sd-bus's next timeout
  /// (`sd_bus_get_timeout`, at most a minute) or a wake-up. Nil when the bus
  /// has no descriptor any more. The descriptor needs no handler: the next
  /// turn's `sd_bus_process` reads it.
  private func busTurn() -> PollLoop.Turn? {
    let fd = sd_bus_get_fd(bus)
    let events = sd_bus_get_events(bus)
    if fd < 0 || events < 0 { return nil }
    var until: UInt64 = 0
    var timeout: Duration?
    if sd_bus_get_timeout(bus, &until) >= 0 && until != UInt64.max {
      var now = timespec()
      clock_gettime(CLOCK_MONOTONIC, &now)
      let nowMicros = UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000
      let milliseconds = until <= nowMicros ? 0 : min(60_000, (until - nowMicros + 999) / 1000)
      timeout = .milliseconds(Int64(milliseconds))
    }
    return PollLoop.Turn(
      [.watching(FileDescriptor(rawValue: fd), for: PollLoop.Events(rawValue: Int16(events)))],
      timeout: timeout)
  }

  /// On the bus thread, as the loop ends: fails what is pending, frees the bus.
  private func shutDown(_ error: DBusError) {
    let (jobs, waiters) = shared.withLock { s in
      s.closed = error
      defer {
        s.jobs.removeAll()
        s.closeWaiters.removeAll()
      }
      return (s.jobs, s.closeWaiters)
    }
    // Jobs queued meanwhile still run (against a closing bus they fail).
    for job in jobs { job(bus) }
    for (_, call) in pendingCalls { call.complete(.failure(error)) }
    pendingCalls.removeAll()
    for (_, sub) in subscriptions {
      sd_bus_slot_unref(sub.slot)
      sub.box.release()
    }
    subscriptions.removeAll()
    for (_, object) in exports {
      sd_bus_slot_unref(object.slot)
      object.slot = nil
    }
    exports.removeAll()
    for slot in objectManagers { sd_bus_slot_unref(slot) }
    objectManagers.removeAll()
    sd_bus_flush_close_unref(bus)
    for waiter in waiters { waiter.resume(returning: error) }
  }

  /// Closes the connection; pending calls fail. Idempotent.
  public func close() {
    let wake = shared.withLock { s -> Bool in
      guard s.closing == nil, s.closed == nil else { return false }
      s.closing = "closed"
      return true
    }
    if wake { pollLoop.wake() }
  }

  /// Waits until the connection has closed (or was lost); returns why.
  public func waitUntilClosed() async -> DBusError {
    await withCheckedContinuation { continuation in
      let closed = shared.withLock { s -> DBusError? in
        if let closed = s.closed { return closed }
        s.closeWaiters.append(continuation)
        return nil
      }
      if let closed { continuation.resume(returning: closed) }
    }
  }

  // MARK: Calls

  private final class CallBox: @unchecked Sendable {
    let member: String
    private let reply: ReplyOnce
    /// Drops the connection's reference once the reply came.
    var onForget: (() -> Void)?
    init(member: String, reply: ReplyOnce) {
      self.member = member
      self.reply = reply
    }
    func complete(_ result: Result<[DBusValue], DBusError>) {
      reply.resume(with: result.mapError { $0 as any Error })
    }
    func forget() {
      onForget?()
      onForget = nil
    }
  }

  /// Calls `member` and returns the reply's arguments; an error reply throws
  /// `DBusError.remote`. `timeout` nil is sd-bus's default (25 s).
  public func call(
    _ destination: String, _ path: String, _ interface: String, _ member: String,
    _ arguments: [DBusValue] = [], timeout: Duration? = nil
  ) async throws -> [DBusValue] {
    let micros = timeout.map { UInt64($0.wholeMilliseconds) * 1000 } ?? 0
    // A cancelled caller stops waiting at once (a stopping agent must not
    // wait for bluetoothd); the reply, if it still comes, is dropped.
    let reply = ReplyOnce()
    return try await withTaskCancellationHandler {
      try await reply.wait {
        enqueue(
          { [self] bus in
            var message: OpaquePointer?
            do {
              try DBusMessageCoding.check(
                "calling \(interface).\(member)",
                sd_bus_message_new_method_call(bus, &message, destination, path, interface, member))
              defer { sd_bus_message_unref(message) }
              try DBusMessageCoding.append(arguments, to: message!)
              let box = CallBox(member: member, reply: reply)
              let context = Unmanaged.passRetained(box)
              let r = sd_bus_call_async(
                bus, nil, message,
                { reply, userdata, _ in
                  let box = Unmanaged<CallBox>.fromOpaque(userdata!).takeRetainedValue()
                  box.complete(DBusConnection.decodeReply(reply, member: box.member))
                  box.forget()
                  return 1
                }, context.toOpaque(), micros)
              if r < 0 {
                context.release()
                throw DBusError.failed(operation: "calling \(member)", errno: Errno(rawValue: -r))
              }
              pendingCalls[ObjectIdentifier(box)] = box
              box.onForget = { [unowned self] in pendingCalls[ObjectIdentifier(box)] = nil }
            } catch let error as DBusError {
              reply.resume(with: .failure(error))
            } catch {
              reply.resume(with: .failure(error))
            }
          }, ifClosed: { reply.resume(with: .failure($0)) })
      }
    } onCancel: {
      reply.resume(with: .failure(CancellationError()))
    }
  }

  static func decodeReply(_ reply: OpaquePointer?, member: String) -> Result<
    [DBusValue], DBusError
  > {
    guard let reply else { return .failure(.closed(reason: "no reply")) }
    if sd_bus_message_is_method_error(reply, nil) > 0 {
      let error = sd_bus_message_get_error(reply)
      let name =
        error?.pointee.name.map { String(cString: $0) } ?? "org.freedesktop.DBus.Error.Failed"
      let text = error?.pointee.message.map { String(cString: $0) } ?? ""
      return .failure(.remote(name: name, message: text))
    }
    do {
      return .success(try DBusMessageCoding.read(reply))
    } catch {
      return .failure(error)
    }
  }

  /// `org.freedesktop.DBus.Properties.Get`, the variant unwrapped.
  public func property(
    _ destination: String, _ path: String, _ interface: String, _ name: String
  ) async throws -> DBusValue {
    let reply = try await call(
      destination, path, "org.freedesktop.DBus.Properties", "Get",
      [.string(interface), .string(name)])
    guard let value = reply.first else {
      throw DBusError.unexpectedReply(member: "Get", signature: "")
    }
    return value.unwrapped
  }

  /// `org.freedesktop.DBus.Properties.GetAll`.
  public func allProperties(_ destination: String, _ path: String, _ interface: String)
    async throws -> [String: DBusValue]
  {
    let reply = try await call(
      destination, path, "org.freedesktop.DBus.Properties", "GetAll", [.string(interface)])
    guard let properties = reply.first?.stringDictionary else {
      throw DBusError.unexpectedReply(
        member: "GetAll", signature: reply.map(\.signature).joined())
    }
    return properties.mapValues(\.unwrapped)
  }

  /// The unique name that owns `name` on the bus, or nil when nobody does.
  public func nameOwner(_ name: String) async throws -> String? {
    do {
      let reply = try await call(
        "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetNameOwner",
        [.string(name)])
      return reply.first?.string
    } catch let error as DBusError where error.isServiceUnknown {
      return nil
    }
  }

  /// Takes a well-known name (tests use this to stand in for a service).
  public func requestName(_ name: String) async throws {
    _ = try await call(
      "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "RequestName",
      [.string(name), .uint32(4)])  // DBUS_NAME_FLAG_DO_NOT_QUEUE
  }

  /// Our unique name (`:1.42`).
  public func uniqueName() async throws -> String {
    try await perform { bus in
      var name: UnsafePointer<CChar>?
      try DBusMessageCoding.check("sd_bus_get_unique_name", sd_bus_get_unique_name(bus, &name))
      return String(cString: name!)
    }
  }

  // MARK: Signals

  private final class SignalBox: @unchecked Sendable {
    let handler: @Sendable (DBusSignal) -> Void
    /// The connection's count of delivered signals (bus thread only).
    let tally: SignalTally
    init(_ handler: @escaping @Sendable (DBusSignal) -> Void, tally: SignalTally) {
      self.handler = handler
      self.tally = tally
    }
  }

  /// Signals delivered so far; only the bus thread reads or writes it.
  private final class SignalTally: @unchecked Sendable {
    var count = 0
  }

  /// Delivers matching signals to `handler` (on the bus thread) until
  /// `unsubscribe` with the returned id. nil fields match anything. The
  /// bus daemon filters (the match rule), so a signal that does not match
  /// never wakes this process: `pathNamespace` (the path or one below it),
  /// `arg0` (the first argument, a string and not an object path, exactly)
  /// and `arg0Path` (the first argument, a string or an object path: this
  /// one, or any below it when this ends in `/`)
  /// narrow a busy interface down to what the caller acts on.
  public func subscribe(
    sender: String?, path: String? = nil, pathNamespace: String? = nil,
    interface: String?, member: String?, arg0: String? = nil, arg0Path: String? = nil,
    handler: @escaping @Sendable (DBusSignal) -> Void
  ) async throws -> UInt64 {
    let rule = try Self.matchRule([
      ("sender", sender), ("path", path), ("path_namespace", pathNamespace),
      ("interface", interface), ("member", member), ("arg0", arg0), ("arg0path", arg0Path),
    ])
    return try await perform { [self] bus in
      let box = Unmanaged.passRetained(SignalBox(handler, tally: tally))
      var slot: OpaquePointer?
      let r = sd_bus_add_match(
        bus, &slot, rule,
        { message, userdata, _ in
          guard let message, let userdata else { return 0 }
          let box = Unmanaged<SignalBox>.fromOpaque(userdata).takeUnretainedValue()
          box.tally.count &+= 1
          func text(_ p: UnsafePointer<CChar>?) -> String { p.map { String(cString: $0) } ?? "" }
          guard let arguments = try? DBusMessageCoding.read(message) else { return 0 }
          box.handler(
            DBusSignal(
              sender: text(sd_bus_message_get_sender(message)),
              path: text(sd_bus_message_get_path(message)),
              interface: text(sd_bus_message_get_interface(message)),
              member: text(sd_bus_message_get_member(message)), arguments: arguments))
          return 0
        }, box.toOpaque())
      if r < 0 {
        box.release()
        throw DBusError.failed(
          operation: "subscribing to \(member ?? "signals")", errno: Errno(rawValue: -r))
      }
      nextSubscription += 1
      subscriptions[nextSubscription] = (slot!, box)
      return nextSubscription
    }
  }

  /// A signal match rule (the D-Bus specification, "Match Rules") of the
  /// fields given. A value may not hold a quote: the rules have no escape
  /// we need, and every value here is a name or path of ours or bluetoothd's.
  static func matchRule(_ fields: [(key: String, value: String?)]) throws(DBusError) -> String {
    var rule = "type='signal'"
    for (key, value) in fields {
      guard let value else { continue }
      guard !value.contains("'") else {
        throw .failed(operation: "matching \(key)=\(value)", errno: .invalidArgument)
      }
      rule += ",\(key)='\(value)'"
    }
    return rule
  }

  /// Ends a subscription.
  public func unsubscribe(_ id: UInt64) async {
    _ = try? await perform { [self] _ in
      guard let sub = subscriptions.removeValue(forKey: id) else { return }
      sd_bus_slot_unref(sub.slot)
      sub.box.release()
    }
  }

  // MARK: Exporting

  /// Exports `object` until `unexport` (or the connection closes).
  public func export(_ object: DBusObject) async throws {
    try await perform { [self] bus in
      var slot: OpaquePointer?
      let r = sd_bus_add_object_vtable(
        bus, &slot, object.path, object.interface, object.makeVTable(),
        Unmanaged.passUnretained(object).toOpaque())
      if r < 0 {
        throw DBusError.failed(
          operation: "exporting \(object.interface) at \(object.path)", errno: Errno(rawValue: -r))
      }
      object.slot = slot
      exports[ObjectIdentifier(object)] = object
    }
  }

  /// Stops exporting `object`.
  public func unexport(_ object: DBusObject) async {
    _ = try? await perform { [self] _ in
      guard exports.removeValue(forKey: ObjectIdentifier(object)) != nil else { return }
      sd_bus_slot_unref(object.slot)
      object.slot = nil
    }
  }

  /// Serves `org.freedesktop.DBus.ObjectManager` for the objects under `path`.
  public func addObjectManager(at path: String) async throws {
    try await perform { [self] bus in
      var slot: OpaquePointer?
      try DBusMessageCoding.check(
        "adding an object manager at \(path)", sd_bus_add_object_manager(bus, &slot, path))
      objectManagers.append(slot!)
    }
  }

  /// Emits `PropertiesChanged` for `names` of an exported object (their
  /// values read from the object at once).
  public func emitPropertiesChanged(path: String, interface: String, names: [String]) async throws {
    try await perform { bus in
      try withCStringArray(names) { array in
        try DBusMessageCoding.check(
          "emitting PropertiesChanged",
          sd_bus_emit_properties_changed_strv(bus, path, interface, array))
      }
    }
  }

  /// Emits the signal `interface.member` from `path` with `arguments`.
  public func emitSignal(
    path: String, interface: String, member: String, _ arguments: [DBusValue] = []
  ) async throws {
    try await perform { bus in
      var message: OpaquePointer?
      try DBusMessageCoding.check(
        "emitting \(interface).\(member)",
        sd_bus_message_new_signal(bus, &message, path, interface, member))
      defer { sd_bus_message_unref(message) }
      try DBusMessageCoding.append(arguments, to: message!)
      try DBusMessageCoding.check(
        "emitting \(interface).\(member)", sd_bus_send(bus, message, nil))
    }
  }

  /// Emits `InterfacesAdded` (or `InterfacesRemoved`) for exported objects.
  public func emitInterfaces(added: Bool, path: String, interfaces: [String]) async throws {
    try await perform { bus in
      try withCStringArray(interfaces) { array in
        try DBusMessageCoding.check(
          "emitting InterfacesAdded/Removed",
          added
            ? sd_bus_emit_interfaces_added_strv(bus, path, array)
            : sd_bus_emit_interfaces_removed_strv(bus, path, array))
      }
    }
  }
}

/// A method call's reply, delivered exactly once: by the reply, a failure,
/// or the caller's cancellation, whichever comes first. The result travels
/// under the lock, not through the continuation: the caller takes it under
/// the lock the deliverer stored it under, so the reply's values (decoded on
/// the bus thread) are handed over to the caller's thread in a way
/// ThreadSanitizer sees. A continuation resumed before its task has
/// suspended is not such a hand-over to it (swiftlang/swift#57803), and a
/// fast reply does that.
final class ReplyOnce: Sendable {
  private struct State {
    var continuation: CheckedContinuation<Void, Never>?
    var result: Result<[DBusValue], any Error>?
  }
  private let state = Mutex(State())

  /// Runs `start` once the caller waits, then waits for the result.
  func wait(then start: () -> Void) async throws -> [DBusValue] {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      let delivered = state.withLock { s -> Bool in
        if s.result != nil { return true }
        s.continuation = continuation
        return false
      }
      if delivered { continuation.resume() }
      start()
    }
    return try state.withLock { s -> Result<[DBusValue], any Error> in s.result! }.get()
  }

  /// Delivers `result` unless one was delivered already.
  func resume(with result: Result<[DBusValue], any Error>) {
    let continuation = state.withLock { s -> CheckedContinuation<Void, Never>? in
      guard s.result == nil else { return nil }
      s.result = result
      defer { s.continuation = nil }
      return s.continuation
    }
    continuation?.resume()
  }
}

/// A NULL-terminated `char **` for the sd-bus `_strv` calls.
private func withCStringArray<T>(
  _ strings: [String], _ body: (UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) throws -> T
) rethrows -> T {
  var pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) } + [nil]
  defer { for pointer in pointers { free(pointer) } }
  return try pointers.withUnsafeMutableBufferPointer { try body($0.baseAddress!) }
}
