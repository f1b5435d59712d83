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
