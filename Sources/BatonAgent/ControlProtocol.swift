import FoundationEssentials

/// A request on the control socket: one line of JSON, such as
/// `{"command":"status"}` or `{"command":"send","path":"/home/u/notes/a.md"}`.
/// `{"command":"deletions","action":"apply"}` (the action is `list` when
/// absent).
public struct ControlRequest: Codable, Sendable, Equatable {
  public enum Command: String, Codable, Sendable {
    case status, send, deletions
  }
  public var command: Command
  /// For `send`: the note's absolute path.
  public var path: String?
  /// For `deletions`: what to do with the held deletions.
  public var action: DeletionAction?

  public init(command: Command, path: String? = nil, action: DeletionAction? = nil) {
    self.command = command
    self.path = path
    self.action = action
  }

  public static let status = ControlRequest(command: .status)
  public static func send(_ path: String) -> ControlRequest {
    ControlRequest(command: .send, path: path)
  }
  public static func deletions(_ action: DeletionAction) -> ControlRequest {
    ControlRequest(command: .deletions, action: action)
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

  public init(
    ok: Bool, status: AgentStatus? = nil, message: String? = nil, error: String? = nil,
    deletions: [HeldDeletionRecord]? = nil
  ) {
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
