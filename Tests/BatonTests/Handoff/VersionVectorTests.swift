import Testing

@testable import BatonHandoff

@Suite struct VersionVectorTests {
  let a = DeviceID(rawValue: 1)
  let b = DeviceID(rawValue: 2)

  @Test func comparisons() {
    let base = VersionVector([a: 1])
    #expect(base.compare(base) == .equal)
    #expect(base.incremented(by: a).compare(base) == .newer)
    #expect(base.compare(base.incremented(by: b)) == .older)
    let left = base.incremented(by: a)
    let right = base.incremented(by: b)
    #expect(left.compare(right) == .concurrent)
    let merged = left.merged(with: right)
    #expect(merged == VersionVector([a: 2, b: 1]))
    #expect(merged.compare(left) == .newer && merged.compare(right) == .newer)
    #expect(VersionVector().compare(base) == .older)
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
