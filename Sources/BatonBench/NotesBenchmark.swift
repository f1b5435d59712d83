import BatonKit

/// Placeholder until the Notes benchmark is written.
enum NotesBenchmark {
  static func run(_ arguments: [String]) async throws {
    print("the Notes benchmark is not written yet")
  }
}
