extension Duration {
  /// The duration in seconds, as a floating-point number (for messages).
  public var secondsValue: Double {
    Double(components.seconds) + Double(components.attoseconds) / 1e18
  }

  /// The duration in whole milliseconds (rounded down).
  public var wholeMilliseconds: Int64 {
    components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000
  }
}
