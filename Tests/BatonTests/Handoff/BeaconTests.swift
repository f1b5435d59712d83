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

  /// PROTOCOL.md 3.3: the flags travel sealed and leave the version alone;
  /// a beacon of an agent before them (first byte 1) reads as open.
  @Test func closedAndAskingFlagsRoundTrip() {
    for (closed, asking) in [(false, false), (true, false), (false, true), (true, true)] {
      let flagged = BeaconContent(
        activityHash: 0xabcdef, indexDigest: 7, closed: closed, asking: asking)
      let opened = Beacon.open(Beacon.seal(flagged, keys: keys), keys: keys)
      #expect(opened == flagged)
      #expect(opened?.version == Beacon.protocolVersion)
    }
    let old = BeaconContent(plaintext: [1, 0xef, 0xcd, 0xab, 7, 0, 0, 0])
    #expect(!old.closed && !old.asking && old.version == 1)
  }

  /// A resolvable nonce names its sealer to key holders only: it resolves
  /// to the device that sealed it, not to another, and two seals still
  /// share no bytes.
  @Test func aResolvableNonceResolvesToItsSealerOnly() {
    let alice = DeviceID(rawValue: 0x0102_0304_0506_0708)
    let bob = DeviceID(rawValue: 0x1112_1314_1516_1718)
    let a = Beacon.seal(content, keys: keys, device: alice)
    let b = Beacon.seal(content, keys: keys, device: alice)
    #expect(Beacon.open(a, keys: keys) == content)
    #expect(Beacon.resolves(a, to: alice, keys: keys))
    #expect(!Beacon.resolves(a, to: bob, keys: keys))
    #expect(!Beacon.resolves(a, to: alice, keys: HandoffKeys(groupKey: GroupKey.generate())))
    #expect(Array(a[7..<12]) != Array(b[7..<12]))
    // Found inside a longer list of AD structures too, as bluetoothd builds it.
    let list = Array(a[3...]) + [0x02, 0x01, 0x06]
    #expect(Beacon.resolves(list, to: alice, keys: keys))
  }
}
