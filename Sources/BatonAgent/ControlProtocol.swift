import FoundationEssentials

/// A request on the control socket: one line of JSON, such as
/// `{"command":"status"}` or `{"command":"send","path":"/home/u/notes/a.md"}`.
/// `{"command":"deletions","action":"apply"}` (the action is `list` when
/// absent), `{"command":"trash"}`,
/// `{"command":"restore","path":"/home/u/notes/a.md","day":"2026-12-02"}`
/// (the newest day when `day` is absent), `{"command":"devices"}`,
/// `{"command":"devices","remove":"laptop"}`; `{"command":"pair"}` (a member
/// shows a code: the answer's `code`), `{"command":"pair","wait":true}` (the
/// member waits for that pairing's end), `{"command":"pair","code":"07-042-913"}`
/// (a new device pairs with the code).
public struct ControlRequest: Codable, Sendable, Equatable {
  public enum Command: String, Codable, Sendable {
    case status, send, deletions, trash, restore, devices, pair
  }
  public var command: Command
  /// For `send` and `restore`: the note's absolute path.
  public var path: String?
  /// For `deletions`: what to do with the held deletions.
  public var action: DeletionAction?
  /// For `restore`: the trash's day folder (`yyyy-mm-dd`).
  public var day: String?
  /// For `devices`: the member to remove (its name, device id or fingerprint).
  public var remove: String?
  /// For `pair` on a new device: the code the member showed.
  public var code: String?
  /// For `pair` on a member: wait for the end of the pairing of the code
  /// shown (rather than show a new one).
  public var wait: Bool?

  public init(
    command: Command, path: String? = nil, action: DeletionAction? = nil, day: String? = nil,
    remove: String? = nil, code: String? = nil, wait: Bool? = nil
  ) {
    self.command = command
    self.code = code
    self.wait = wait
    self.path = path
    self.action = action
    self.day = day
    self.remove = remove
  }

  public static let status = ControlRequest(command: .status)
  public static func send(_ path: String) -> ControlRequest {
    ControlRequest(command: .send, path: path)
  }
  public static func deletions(_ action: DeletionAction) -> ControlRequest {
    ControlRequest(command: .deletions, action: action)
  }
  public static let trash = ControlRequest(command: .trash)
  public static func restore(_ path: String, day: String?) -> ControlRequest {
    ControlRequest(command: .restore, path: path, day: day)
  }
  public static func devices(remove: String? = nil) -> ControlRequest {
    ControlRequest(command: .devices, remove: remove)
  }
  public static func pair(code: String? = nil, wait: Bool = false) -> ControlRequest {
    ControlRequest(command: .pair, code: code, wait: wait ? true : nil)
  }
}

/// One device of the group, as `baton devices` shows it.
public struct DeviceEntry: Codable, Sendable, Equatable {
  /// The device id, 16 hex digits.
  public var id: String
  public var name: String
  /// What a user compares to tell devices apart (`3f2a-91c0-0b7e-d4a5`).
  public var fingerprint: String
  /// The device that added it (itself, for a founder of a key-file group).
  public var addedBy: String
  public var member: Bool
  /// Set for a removed device: who removed it.
  public var removedBy: String?
  public var thisDevice: Bool
  /// A link with it is up (it is in range).
  public var linked: Bool
  public var lastSeen: Date?

  public init(
    id: String, name: String, fingerprint: String, addedBy: String, member: Bool,
    removedBy: String?, thisDevice: Bool, linked: Bool, lastSeen: Date?
  ) {
    self.id = id
    self.name = name
    self.fingerprint = fingerprint
    self.addedBy = addedBy
    self.member = member
    self.removedBy = removedBy
    self.thisDevice = thisDevice
    self.linked = linked
    self.lastSeen = lastSeen
  }
}

/// One version in a folder's trash, as `baton trash` shows it.
public struct TrashedVersionRecord: Codable, Sendable, Equatable {
  /// The note's absolute path in its folder (what `baton restore` takes).
  public var path: String
  /// The trash's day folder, `yyyy-mm-dd` (UTC).
  public var day: String
  public var size: Int
  /// `deleted` (on a peer) or `overwritten` (by a peer's version, or a
  /// restore).
  public var reason: String
  /// Where it is: the absolute path of the file in the trash.
  public var trashPath: String

  public init(path: String, day: String, size: Int, reason: String, trashPath: String) {
    self.path = path
    self.day = day
    self.size = size
    self.reason = reason
    self.trashPath = trashPath
  }
}

/// What `baton deletions` does with the deletions held for a person.
public enum DeletionAction: String, Codable, Sendable, CaseIterable {
  /// Lists them.
  case list
  /// Makes them (sends the ones made here, applies the peers').
  case apply
  /// Undoes them: the notes come back everywhere.
  case reject
}

/// One held deletion, as `baton deletions` shows it.
public struct HeldDeletionRecord: Codable, Sendable, Equatable {
  public var activityType: String
  public var path: String
  /// The peer that deleted it; nil when it was deleted here.
  public var peer: String?
  public var since: Date

  public init(activityType: String, path: String, peer: String?, since: Date) {
    self.activityType = activityType
    self.path = path
    self.peer = peer
    self.since = since
  }
}

/// The reply: one line of JSON, `{"ok":true,"status":{...}}`,
/// `{"ok":true,"message":"..."}`, `{"ok":true,"deletions":[...]}` or
/// `{"ok":false,"error":"..."}`.
public struct ControlResponse: Codable, Sendable, Equatable {
  public var ok: Bool
  public var status: AgentStatus?
  public var message: String?
  public var error: String?
  /// For `deletions`: the deletions held (after the action).
  public var deletions: [HeldDeletionRecord]?
  /// For `trash`: the versions in the trash.
  public var trash: [TrashedVersionRecord]?
  /// For `devices`: the group's devices (after a removal).
  public var devices: [DeviceEntry]?
  /// For `pair` on a member: the code to type on the new device.
  public var code: String?

  public init(
    ok: Bool, status: AgentStatus? = nil, message: String? = nil, error: String? = nil,
    deletions: [HeldDeletionRecord]? = nil, trash: [TrashedVersionRecord]? = nil,
    devices: [DeviceEntry]? = nil, code: String? = nil
  ) {
    self.code = code
    self.devices = devices
    self.trash = trash
    self.ok = ok
    self.status = status
    self.message = message
    self.error = error
    self.deletions = deletions
  }

  public static func failure(_ error: String) -> ControlResponse {
    ControlResponse(ok: false, error: error)
  }
}

/// The JSON coding of the control protocol: sorted keys, ISO 8601 dates,
/// one line per message.
public enum ControlCoding {
  public static func encode<T: Encodable>(_ value: T, pretty: Bool = false) -> [UInt8] {
    let encoder = JSONEncoder()
    encoder.dateEncodingStrategy = .iso8601
    encoder.outputFormatting = pretty ? [.sortedKeys, .prettyPrinted] : [.sortedKeys]
    // Encoding these plain structs cannot fail.
    return Array((try? encoder.encode(value)) ?? Data("{}".utf8))
  }

  public static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
    let decoder = JSONDecoder()
    decoder.dateDecodingStrategy = .iso8601
    return try decoder.decode(type, from: Data(bytes))
  }
}
