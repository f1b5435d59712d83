/// One decoder of outside bytes, fuzzed by libFuzzer through `baton-fuzz`
/// (issue 31). `seeds` are valid encodings (`baton-fuzz seeds` writes them to
/// Tests/Fuzz/corpus); `decode` feeds one input to the decoder the way the
/// product does.
public struct FuzzTarget: Sendable {
  public let name: String
  public let seeds: [[UInt8]]
  let body: @Sendable ([UInt8]) -> Void

  /// Decodes `input` the way the product does; returns normally whatever the
  /// outcome (a thrown error is a fine outcome, a trap is a crash).
  public func decode(_ input: [UInt8]) { body(input) }
}

public enum DecoderFuzzer {
  /// Every target, in a fixed order.
  public static var targets: [FuzzTarget] { FuzzTargets.all }

  public static func target(named name: String) -> FuzzTarget? {
    targets.first { $0.name == name }
  }
}
