import FoundationEssentials

/// A request on the control socket: one line of JSON, such as
/// `{"command":"status"}` or `{"command":"send","path":"/home/u/notes/a.md"}`.
public struct ControlRequest: Codable, Sendable, Equatable {
  public enum Command: String, Codable, Sendable {
    case status, send
  }
  public var command: Command
  /// For `send`: the note's absolute path.
  public var path: String?

  public init(command: Command, path: String? = nil) {
    self.command = command
    self.path = path
  }

  public static let status = ControlRequest(command: .status)
  public static func send(_ path: String) -> ControlRequest {
    ControlRequest(command: .send, path: path)
  }
}

/// The reply: one line of JSON, `{"ok":true,"status":{...}}`,
/// `{"ok":true,"message":"..."}` or `{"ok":false,"error":"..."}`.
public struct ControlResponse: Codable, Sendable, Equatable {
  public var ok: Bool
  public var status: AgentStatus?
  public var message: String?
  public var error: String?

  public init(ok: Bool, status: AgentStatus? = nil, message: String? = nil, error: String? = nil) {
    self.ok = ok
    self.status = status
    self.message = message
    self.error = error
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
