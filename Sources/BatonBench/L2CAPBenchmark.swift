import BatonKit

/// Placeholder until the L2CAP benchmark is written.
enum L2CAPBenchmark {
  static func run(_ arguments: [String]) async throws {
    print("the L2CAP benchmark is not written yet")
  }
}
