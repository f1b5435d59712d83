import Foundation

/// What the tests ask about the threads of this process (/proc).
enum Threads {
  /// The calling thread's name (/proc/thread-self/comm).
  static var currentName: String {
    (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8))?
      .trimmingCharacters(in: .whitespacesAndNewlines) ?? "?"
  }

  /// The names of this process's threads.
  static var names: [String] {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    return tasks.compactMap {
      (try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8))?
        .trimmingCharacters(in: .whitespacesAndNewlines)
    }
  }

  /// How many of this process's threads are named `name`.
  static func count(named name: String) -> Int { names.filter { $0 == name }.count }
}
