import Testing

@testable import BatonHandoff

@Suite struct VersionVectorTests {
  let a = DeviceID(rawValue: 1)
  let b = DeviceID(rawValue: 2)

  @Test func comparisons() throws {
    let base = VersionVector([a: 1])
    #expect(base.compare(base) == .equal)
    let left = try #require(base.incremented(by: a))
    let right = try #require(base.incremented(by: b))
    #expect(left.compare(base) == .newer)
    #expect(base.compare(right) == .older)
    #expect(left.compare(right) == .concurrent)
    let merged = left.merged(with: right)
    #expect(merged == VersionVector([a: 2, b: 1]))
    #expect(merged.compare(left) == .newer && merged.compare(right) == .newer)
    #expect(VersionVector().compare(base) == .older)
  }

  /// The pairs layout (one inline, the rest in an array) against a plain
  /// dictionary model over random operations: lookups, increments, merges,
  /// comparisons and the encoding all agree.
  @Test(arguments: [1, 2, 3] as [UInt64])
  func operationsAgreeWithADictionaryModel(seed: UInt64) throws {
    var rng = SplitMix64(seed: seed)
    func random() -> (VersionVector, [DeviceID: UInt64]) {
      var model: [DeviceID: UInt64] = [:]
      for _ in 0..<(rng.next() % 4) {
        model[DeviceID(rawValue: rng.next() % 6 + 1)] = rng.next() % 4
      }
      return (VersionVector(model), model.filter { $0.value > 0 })
    }
    for _ in 0..<300 {
      let (x, mx) = random()
      let (y, my) = random()
      #expect(x.counters == mx && x.deviceCount == mx.count)
      #expect(Set(x.devices) == Set(mx.keys) && x.devices == x.devices.sorted())
      for d in 0..<8 { #expect(x[DeviceID(rawValue: UInt64(d))] == mx[DeviceID(rawValue: UInt64(d))] ?? 0) }
      let device = DeviceID(rawValue: rng.next() % 7 + 1)
      var bumped = mx
      bumped[device, default: 0] += 1
      #expect(x.incremented(by: device) == VersionVector(bumped))
      let merged = mx.merging(my) { max($0, $1) }
      #expect(x.merged(with: y) == VersionVector(merged))
      let ahead = merged.contains { $0.value > my[$0.key] ?? 0 }
      let behind = merged.contains { $0.value > mx[$0.key] ?? 0 }
      let order: VersionOrder =
        switch (ahead, behind) {
        case (false, false): .equal
        case (true, false): .newer
        case (false, true): .older
        case (true, true): .concurrent
        }
      #expect(x.compare(y) == order)
      #expect(try VersionVector.decode(x.encoded) == x)
      #expect((x == y) == (mx == my) && (x == y ? x.hashValue == y.hashValue : true))
    }
  }

  @Test func exhaustedCounterIsNotIncrementedAndDoesNotTrap() throws {
    let saturated = VersionVector([a: .max, b: 3])
    #expect(saturated.incremented(by: a) == nil)
    #expect(try #require(saturated.incremented(by: b)) == VersionVector([a: .max, b: 4]))
  }

  @Test func canonicalEncodingRoundTrips() throws {
    let v = VersionVector([b: 7, a: 3])
    #expect(
      v.encoded == [2, 0] + [1, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0] + [
        2, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0,
      ])
    #expect(try VersionVector.decode(v.encoded) == v)
  }

  @Test func malformedEncodingsAreRejected() {
    let unsorted: [UInt8] =
      [2, 0] + [2, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0] + [
        1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0,
      ]
    let zero: [UInt8] = [1, 0] + [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
    let short: [UInt8] = [1, 0, 1, 2]
    for bytes in [unsorted, zero, short, [5, 0]] {
      #expect(throws: WireError.self) { try VersionVector.decode(bytes) }
    }
  }
}
