import Testing

@testable import BatonHandoff

@Suite struct BeaconTests {
  let keys = HandoffKeys(groupKey: GroupKey.generate())
  let content = BeaconContent(activityHash: 0xabcdef, indexDigest: 0x0102_0304)

  @Test func fitsOneLegacyAdvertisement() {
    let beacon = Beacon.seal(content, keys: keys)
    #expect(beacon.count == 31)
    #expect(Array(beacon.prefix(7)) == [0x02, 0x01, 0x06, 0x1B, 0xFF, 0xFF, 0xFF])
    // The AD structures account for every byte: 1+2 (flags) + 1+27 (manufacturer).
    #expect(Int(beacon[0]) + 1 + Int(beacon[3]) + 1 == 31)
    #expect(Beacon.open(beacon, keys: keys) == content)
  }

  @Test func twoSealsOfTheSameContentCannotBeLinked() {
    let a = Beacon.seal(content, keys: keys)
    let b = Beacon.seal(content, keys: keys)
    // Nonce, ciphertext and tag all differ (each 8 random-looking bytes).
    for range in [7..<15, 15..<23, 23..<31] {
      #expect(Array(a[range]) != Array(b[range]), "bytes \(range) repeat")
    }
    #expect(Beacon.open(a, keys: keys) == Beacon.open(b, keys: keys))
  }

  @Test func wrongKeyIsRejected() {
    let other = HandoffKeys(groupKey: GroupKey.generate())
    #expect(Beacon.open(Beacon.seal(content, keys: keys), keys: other) == nil)
  }

  @Test func everyFlippedBitIsRejected() {
    let beacon = Beacon.seal(content, keys: keys)
    for byte in 0..<31 {
      for bit in 0..<8 {
        var tampered = beacon
        tampered[byte] ^= UInt8(1 << bit)
        #expect(Beacon.open(tampered, keys: keys) == nil, "byte \(byte) bit \(bit)")
      }
    }
  }

  @Test func otherSizesAndNoiseAreRejected() {
    let beacon = Beacon.seal(content, keys: keys)
    #expect(Beacon.open(Array(beacon.dropLast()), keys: keys) == nil)
    #expect(Beacon.open(beacon + [0], keys: keys) == nil)
    #expect(Beacon.open([], keys: keys) == nil)
    #expect(Beacon.open(advertisingData: [0xFF, 0x01], keys: keys) == nil)
    #expect(Beacon.open(advertisingData: HandoffCrypto.random(31), keys: keys) == nil)
  }

  @Test func foundAmongOtherADStructures() {
    let beacon = Beacon.seal(content, keys: keys)
    let name: [UInt8] = [0x05, 0x09] + Array("test".utf8)
    let data = name + Array(beacon[3...])  // no flags, a name first
    #expect(Beacon.open(advertisingData: data, keys: keys) == content)
  }
}
