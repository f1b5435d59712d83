/// A controller spec that names no backend or controller we know, and why.
public struct ControllerSpecError: Error, Equatable, Sendable, CustomStringConvertible {
  /// The spec as written.
  public let spec: String
  /// What is wrong with it.
  public let reason: String

  public init(_ spec: String, reason: String) {
    self.spec = spec
    self.reason = reason
  }

  public var description: String {
    "bad controller spec \"\(spec)\": \(reason); "
      + "use bluez, bluez:hciN, hciN, tcp:HOST:PORT or serial:/dev/ttyX[:BAUD]"
  }
}
