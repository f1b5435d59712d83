import BatonKit

/// Placeholder until the Handoff benchmark is written.
enum HandoffBenchmark {
  static func run(_ arguments: [String]) async throws {
    print("the Handoff benchmark is not written yet")
  }
}
