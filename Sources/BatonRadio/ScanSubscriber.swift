/// One `startScanning` stream and the advertisements it wants: a host calls
/// `offer` for every report on the thread that received it, so reports the
/// subscriber does not want (a stranger's advertisement) cost no thread hop.
public struct ScanSubscriber: Sendable {
  /// Whether the subscriber wants an advertisement with this data.
  public let accepts: @Sendable ([UInt8]) -> Bool
  public let continuation: AsyncStream<AdvertisingReport>.Continuation

  public init(
    accepts: @escaping @Sendable ([UInt8]) -> Bool,
    continuation: AsyncStream<AdvertisingReport>.Continuation
  ) {
    self.accepts = accepts
    self.continuation = continuation
  }

  /// Passes `report` on if the subscriber wants it.
  public func offer(_ report: AdvertisingReport) {
    if accepts(report.data) { continuation.yield(report) }
  }

  /// Ends the stream.
  public func finish() { continuation.finish() }
}
