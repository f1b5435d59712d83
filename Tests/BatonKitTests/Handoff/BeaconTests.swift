import Testing

@testable import BatonKit

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
    #expect(v.encoded == [2, 0] + [1, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0] + [2, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0])
    #expect(try VersionVector.decode(v.encoded) == v)
  }

  @Test func malformedEncodingsAreRejected() {
    let unsorted: [UInt8] = [2, 0] + [2, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0] + [1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0]
    let zero: [UInt8] = [1, 0] + [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
    let short: [UInt8] = [1, 0, 1, 2]
    for bytes in [unsorted, zero, short, [5, 0]] {
      #expect(throws: WireError.self) { try VersionVector.decode(bytes) }
    }
  }
}

@Suite struct HandoffMessageTests {
  let entry = HandoffIndexEntry(
    activityType: "org.example.notes", path: "dir/a.md", hash: ContentHash(of: [1, 2, 3]), size: 3,
    version: VersionVector([DeviceID(rawValue: 5): 2]), origin: DeviceID(rawValue: 5))

  @Test func everyMessageRoundTrips() throws {
    let payload = ActivityPayload(
      activityType: "t", title: "T", path: "p.md", version: entry.version, origin: entry.origin,
      originName: "alice", hash: ContentHash(of: [9]), content: [9])
    let messages: [HandoffMessage] = [
      .getActivity, .activity(entry, title: "A"), .activity(nil, title: ""), .getIndex,
      .index([entry, entry]), .getNote(activityType: "t", path: "p"), .note(payload),
      .noteUnavailable(activityType: "t", path: "p", reason: .tooLarge), .turn([]),
      .done(activityHash: 7, indexDigest: 8), .error(code: 1, text: "no"),
    ]
    for m in messages {
      #expect(try HandoffMessage.decode(kind: m.kind.rawValue, body: m.body, maxNoteSize: 1000) == m)
    }
  }

  @Test func malformedBodiesAreRejectedNotCrashed() {
    let body = HandoffMessage.index([entry]).body
    for cut in 0..<body.count {
      #expect(throws: WireError.self) {
        try HandoffMessage.decode(kind: 4, body: Array(body.prefix(cut)), maxNoteSize: 1000)
      }
    }
    #expect(throws: WireError.self) { try HandoffMessage.decode(kind: 99, body: [], maxNoteSize: 1) }
    #expect(throws: WireError.self) { try HandoffMessage.decode(kind: 1, body: [0], maxNoteSize: 1) }
    // A note larger than the receiver's limit.
    let big = ActivityPayload(
      activityType: "t", title: "", path: "p", version: VersionVector(), origin: DeviceID(rawValue: 1),
      originName: "", hash: ContentHash(of: [UInt8](repeating: 0, count: 100)),
      content: [UInt8](repeating: 0, count: 100))
    #expect(throws: WireError.self) {
      try HandoffMessage.decode(kind: 6, body: HandoffMessage.note(big).body, maxNoteSize: 99)
    }
  }

  @Test func titles() {
    #expect(ActivityPayload.title(of: Array("\n\n## Shopping list  \n- eggs".utf8), path: "x.md") == "Shopping list")
    #expect(ActivityPayload.title(of: [], path: "dir/y.md") == "y.md")
  }

  @Test func unsafePathsAreRefused() {
    for path in ["", "/etc/passwd", "../x", "a/../../x", "a//b", "./a", "a\\b", "a\u{0}b"] {
      #expect(!HandoffEngine.isSafePath(path), "\(path)")
    }
    for path in ["a.md", "dir/sub/b.md", ".hidden.md", "a..b.md"] {
      #expect(HandoffEngine.isSafePath(path), "\(path)")
    }
  }
}
