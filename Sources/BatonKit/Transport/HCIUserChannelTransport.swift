/// PLACEHOLDER so that the `hci` branch compiles: the real kernel HCI user
/// channel transport is written on another branch and replaces this file at
/// merge.
public final class HCIUserChannelTransport: HCITransport {
  /// Always throws: not built on this branch.
  public init(index: Int) throws {
    throw TransportError.unavailable("the kernel HCI user channel transport (hci\(index))")
  }
  public var description: String { "hci" }
  public func send(_ packet: [UInt8]) throws {}
  public func receive() throws -> [UInt8]? { nil }
  public func close() {}
}
