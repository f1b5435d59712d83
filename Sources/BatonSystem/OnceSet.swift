/// The keys of things done once (a line logged, a decline counted), with a
/// bound: peers choose most of the keys (paths, versions, sizes), so the
/// set must not grow with what they send. Past `limit` keys it starts
/// again empty, and a key seen before counts as new once more: at worst a
/// line is logged again, or a decline counted twice.
package struct OnceSet: Sendable {
  package let limit: Int
  private var seen: Set<String> = []

  package init(limit: Int = 4096) {
    self.limit = max(1, limit)
  }

  /// Whether `key` comes for the first time (since the set last started
  /// again); remembers it.
  package mutating func first(_ key: String) -> Bool {
    guard !seen.contains(key) else { return false }
    if seen.count >= limit { seen.removeAll() }
    seen.insert(key)
    return true
  }

  /// How many keys are remembered now.
  package var count: Int { seen.count }
}
