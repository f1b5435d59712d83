import Testing

@testable import BatonHandoff
@testable import BatonNotes
@testable import BatonSystem

@Suite struct HandoffMessageTests {
  let entry = HandoffIndexEntry(
    activityType: "org.example.notes", path: "dir/a.md", hash: ContentHash(of: [1, 2, 3]), size: 3,
    version: VersionVector([DeviceID(rawValue: 5): 2]), origin: DeviceID(rawValue: 5))

  @Test func everyMessageRoundTrips() throws {
    let payload = ActivityPayload(
      activityType: "t", title: "T", path: "p.md", version: entry.version, origin: entry.origin,
      originName: "alice", hash: ContentHash(of: [9]), content: [9])
    let messages: [HandoffMessage] = [
      .getActivity, .activity(entry, title: "A", indexDigest: Array(repeating: 3, count: 32)),
      .activity(nil, title: "", indexDigest: Array(repeating: 0, count: 32)), .getIndex,
      .index([entry, entry]), .getNote(activityType: "t", path: "p"), .note(payload),
      .noteUnavailable(activityType: "t", path: "p", reason: .tooLarge), .turn(indexDigest: 5, []),
      .turn(indexDigest: 6, [entry]), .getNodes([.init(depth: 8, prefix: 0xFFFF_FFFF, wantsEntries: true)]),
      .nodes([.children(Array(repeating: .init(count: 1, fingerprint: 2), count: 16)), .entries([entry])]),
      .done(activityHash: 7, indexDigest: 8), .error(code: 1, text: "no"),
      .link(maxNoteSize: 1_048_576, root: .entries([entry])),
      .link(
        maxNoteSize: 7,
        root: .children(Array(repeating: .init(count: 3, fingerprint: 4), count: 16))),
      .ping, .pong, .have([entry]), .have([]),
    ]
    for m in messages {
      #expect(
        try HandoffMessage.decode(kind: m.kind.rawValue, body: m.body, maxNoteSize: 1000) == m)
    }
  }

  @Test func malformedBodiesAreRejectedNotCrashed() {
    let body = HandoffMessage.index([entry]).body
    for cut in 0..<body.count {
      #expect(throws: WireError.self) {
        try HandoffMessage.decode(kind: 4, body: Array(body.prefix(cut)), maxNoteSize: 1000)
      }
    }
    #expect(throws: WireError.self) {
      try HandoffMessage.decode(kind: 99, body: [], maxNoteSize: 1)
    }
    #expect(throws: WireError.self) {
      try HandoffMessage.decode(kind: 1, body: [0], maxNoteSize: 1)
    }
    // A note larger than the receiver's limit.
    let big = ActivityPayload(
      activityType: "t", title: "", path: "p", version: VersionVector(),
      origin: DeviceID(rawValue: 1),
      originName: "", hash: ContentHash(of: [UInt8](repeating: 0, count: 100)),
      content: [UInt8](repeating: 0, count: 100))
    #expect(throws: WireError.self) {
      try HandoffMessage.decode(kind: 6, body: HandoffMessage.note(big).body, maxNoteSize: 99)
    }
  }

  @Test func titles() {
    #expect(
      ActivityPayload.title(of: Array("\n\n## Shopping list  \n- eggs".utf8), path: "x.md")
        == "Shopping list")
    #expect(ActivityPayload.title(of: [], path: "dir/y.md") == "y.md")
    #expect(ActivityPayload.title(of: Array("#\n  \n".utf8), path: "dir/y.md") == "y.md")
    // One rule for the agent's display and the wire: Note's.
    let text = Array("\u{FEFF}\r\n### Plans\r\nbody".utf8)
    #expect(ActivityPayload.title(of: text, path: "p.md") == Note(bytes: text).title)
    #expect(Note(bytes: text).title == "Plans")
  }

  /// 150 flags are 150 characters but 1,200 bytes: the title is cut to whole
  /// flags within the byte cap, and the message decodes at the peer.
  @Test func longTitlesAreCutToWholeCharactersWithinTheByteCap() throws {
    let flag = "\u{1F1EB}\u{1F1F7}"  // 8 bytes, one character
    let content = Array((String(repeating: flag, count: 150) + "\nbody\n").utf8)
    let title = ActivityPayload.title(of: content, path: "flags.md")
    #expect(title == String(repeating: flag, count: Note.maximumTitleBytes / 8))
    // A single character longer than the cap: the file name instead.
    let zalgo = Array(("e" + String(repeating: "\u{301}", count: 300)).utf8)
    #expect(ActivityPayload.title(of: zalgo, path: "z/zalgo.md") == "zalgo.md")

    // Whatever the caller passes, the encoder writes what the decoder accepts.
    let payload = ActivityPayload(
      activityType: "org.example.notes", title: String(repeating: flag, count: 150),
      path: "flags.md", version: VersionVector([DeviceID(rawValue: 1): 1]),
      origin: DeviceID(rawValue: 1), originName: String(repeating: "ü", count: 50),
      hash: ContentHash(of: content), content: content)
    let message = HandoffMessage.note(payload)
    let decoded = try HandoffMessage.decode(
      kind: message.kind.rawValue, body: message.body, maxNoteSize: 1 << 20)
    guard case .note(let back) = decoded else {
      Issue.record("decoded \(decoded)")
      return
    }
    #expect(back.title == String(repeating: flag, count: HandoffLimits.maxTitleBytes / 8))
    #expect(back.originName == String(repeating: "ü", count: HandoffLimits.maxNameBytes / 2))
    #expect(back.content == content)
    let activity = HandoffMessage.activity(
      HandoffIndexEntry(
        activityType: payload.activityType, path: payload.path, hash: payload.hash,
        size: content.count, version: payload.version, origin: payload.origin),
      title: payload.title, indexDigest: [UInt8](repeating: 7, count: 32))
    #expect(throws: Never.self) {
      try HandoffMessage.decode(
        kind: activity.kind.rawValue, body: activity.body, maxNoteSize: 1 << 20)
    }
    let error = HandoffMessage.error(code: 1, text: String(repeating: flag, count: 100))
    #expect(throws: Never.self) {
      try HandoffMessage.decode(kind: error.kind.rawValue, body: error.body, maxNoteSize: 1 << 20)
    }
  }

  @Test func namesAreCutAtCharacterBoundaries() {
    let name = String(repeating: "é", count: 40)  // 80 bytes
    let cut = HandoffLimits.truncated(name, toBytes: 64)
    #expect(cut.utf8.count == 64 && cut == String(repeating: "é", count: 32))
    #expect(HandoffLimits.truncated("short", toBytes: 64) == "short")
    let me = PeerIdentity(
      key: DeviceKey.generate().publicKey, name: String(repeating: "ü€", count: 30))
    var r = WireReader(SecureChannel.identityBytes(me))
    _ = try? r.raw(DevicePublicKey.byteCount)
    #expect((try? r.string(max: HandoffLimits.maxNameBytes)) != nil)
  }

  @Test func activityTypes() {
    for t in ["org.example.notes", "com.apple.notes", "a.b", "x-y.z_1"] {
      #expect(HandoffLimits.isValidActivityType(t), "\(t)")
    }
    for t in ["", "notes", ".a", "a.", "a..b", "a.b c", "é.fr"] {
      #expect(!HandoffLimits.isValidActivityType(t), "\(t)")
    }
  }

  @Test func unsafePathsAreRefused() {
    for path in ["", "/etc/passwd", "../x", "a/../../x", "a//b", "./a", "a\\b", "a\u{0}b"] {
      #expect(!EntryAdmission.isSafePath(path), "\(path)")
    }
    for path in ["a.md", "dir/sub/b.md", ".hidden.md", "a..b.md"] {
      #expect(EntryAdmission.isSafePath(path), "\(path)")
    }
  }
}
