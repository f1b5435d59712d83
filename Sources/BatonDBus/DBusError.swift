import BatonSystem

/// Failures of the D-Bus layer: an error reply from the other side (with its
/// D-Bus error name), a failed sd-bus call (an errno), or a closed connection.
public enum DBusError: Error, Equatable, Sendable, CustomStringConvertible {
  /// The peer answered with an error (`org.freedesktop.DBus.Error.AccessDenied` ...).
  case remote(name: String, message: String)
  /// An sd-bus call failed locally.
  case failed(operation: String, errno: Errno)
  /// The connection is closed (by us, or lost).
  case closed(reason: String)
  /// A reply or signal did not have the arguments we expect.
  case unexpectedReply(member: String, signature: String)
  /// libsystemd, which baton opens for D-Bus, could not be opened
  /// (dlerror's text).
  case libraryMissing(reason: String)

  public static let accessDeniedName = "org.freedesktop.DBus.Error.AccessDenied"
  public static let serviceUnknownName = "org.freedesktop.DBus.Error.ServiceUnknown"
  public static let nameHasNoOwnerName = "org.freedesktop.DBus.Error.NameHasNoOwner"
  public static let unknownObjectName = "org.freedesktop.DBus.Error.UnknownObject"
  public static let unknownMethodName = "org.freedesktop.DBus.Error.UnknownMethod"
  public static let noReplyName = "org.freedesktop.DBus.Error.NoReply"

  /// The D-Bus error name of a remote error; nil for local failures.
  public var name: String? {
    if case .remote(let name, _) = self { return name }
    return nil
  }

  /// Refused by the bus's security policy (or by the service with the same name).
  public var isAccessDenied: Bool {
    switch self {
    case .remote(let name, _): name == Self.accessDeniedName
    case .failed(_, let errno): errno == .permissionDenied || errno == .notPermitted
    default: false
    }
  }

  /// Nobody owns the destination name (the service is not running).
  public var isServiceUnknown: Bool {
    name == Self.serviceUnknownName || name == Self.nameHasNoOwnerName
  }

  /// The service runs but has no such object (or interface, or method).
  public var isUnknownObject: Bool {
    name == Self.unknownObjectName || name == Self.unknownMethodName
      || name == "org.freedesktop.DBus.Error.UnknownInterface"
  }

  public var description: String {
    switch self {
    case .remote(let name, let message): message.isEmpty ? name : "\(name): \(message)"
    case .failed(let operation, let errno): "\(operation) failed: \(errno) (\(errno.name))"
    case .closed(let reason): "the D-Bus connection is closed (\(reason))"
    case .unexpectedReply(let member, let signature):
      "unexpected arguments \"\(signature)\" in \(member)"
    case .libraryMissing(let reason):
      "cannot open libsystemd, which baton uses for D-Bus (\(reason)); "
        + "install the libsystemd0 package"
    }
  }
}
