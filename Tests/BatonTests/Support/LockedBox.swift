import Synchronization

/// A value that closures running on several tasks can share: a `Mutex` in a
/// class, since a `Mutex` itself cannot be captured by more than one closure.
final class LockedBox<Value: Sendable>: Sendable {
  let mutex: Mutex<Value>
  init(_ value: Value) { mutex = Mutex(value) }
}
