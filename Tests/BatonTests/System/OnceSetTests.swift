import Testing

@testable import BatonSystem

@Suite struct OnceSetTests {
  @Test func aKeyIsFirstOnlyOnce() {
    var once = OnceSet()
    let firsts = ["a", "a", "b"].map { once.first($0) }
    #expect(firsts == [true, false, true])
    #expect(once.count == 2)
  }

  /// Peers choose the keys (paths, versions): the set never holds more
  /// than its limit, and starts again when full.
  @Test func theSetStaysWithinItsLimit() {
    var once = OnceSet(limit: 100)
    var largest = 0
    for n in 0..<1000 {
      let first = once.first("key \(n)")
      #expect(first)
      largest = max(largest, once.count)
    }
    #expect(largest == 100)
    // Emptied on the way: an early key is first again.
    let again = once.first("key 0")
    #expect(again)
  }
}
