/// The tests' one way to wait for something to happen: checks `condition`
/// at once, then every 10 ms, until it holds or `seconds` have passed, and
/// returns whether it held. `seconds` is a bound for a loaded machine, never
/// a timing target; `what` names the signal for the reader. Wrap it in
/// `#expect` (or `#require`) so that a wait that never ends is reported.
/// The condition must be a positive signal (a file, a status field, a log
/// line): to show that something does not happen, wait for a later thing
/// that does.
func eventually(
  _ seconds: Double = 20, _ what: String = "condition",
  _ condition: () async throws -> Bool
) async rethrows -> Bool {
  let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
  while ContinuousClock.now < deadline {
    if try await condition() { return true }
    try? await Task.sleep(for: .milliseconds(10))
  }
  return try await condition()
}
