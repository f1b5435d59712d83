import Testing

@testable import BatonHandoff
@testable import BatonSystem

/// The reconciliation walk (PROTOCOL.md 6.1) run between two in-memory
/// indexes, every message encoded and decoded: it finds exactly what differs,
/// and its bytes grow with the differences, not with the index.
@Suite struct IndexReconciliationTests {
  static let type = IndexSummaryTests.type

  struct Outcome {
    var peerEntries: [String: ContentHash] = [:]
    var offered: [String: ContentHash] = [:]
    var bytes = 0
    var roundTrips = 0
  }

  /// I (`mine`) walks R's (`theirs`) summary as the session does.
  static func walk(_ mine: HandoffIndex, _ theirs: HandoffIndex) throws -> Outcome {
    var walk = IndexReconciliation()
    var out = Outcome()
    while let request = walk.nextRequest() {
      let ask = HandoffMessage.getNodes(request)
      let askBody = ask.body
      guard case .getNodes(let decoded) = try HandoffMessage.decode(
        kind: ask.kind.rawValue, body: askBody, maxNoteSize: 1 << 20)
      else { throw WireError("not GET_NODES") }
      let answer = HandoffMessage.nodes(IndexReconciliation.answer(decoded, from: theirs))
      let answerBody = answer.body
      guard case .nodes(let answers) = try HandoffMessage.decode(
        kind: answer.kind.rawValue, body: answerBody, maxNoteSize: 1 << 20)
      else { throw WireError("not NODES") }
      out.bytes += askBody.count + answerBody.count + 2
      out.roundTrips += 1
      let found = try walk.absorb(request, answers, mine: mine)
      for e in found.peerEntries { out.peerEntries[HandoffEngine.key(e.activityType, e.path)] = e.hash }
    }
    for e in walk.offer(from: mine) { out.offered[HandoffEngine.key(e.activityType, e.path)] = e.hash }
    return out
  }

  static func index(_ notes: [String: String]) -> HandoffIndex {
    var index = HandoffIndex(offeredTypes: [type], summaryKey: IndexSummaryTests.summaryKey)
    for (path, content) in notes {
      index[HandoffEngine.key(type, path)] = StoredNote(entry: IndexSummaryTests.entry(path, content))
    }
    return index
  }

  /// Every key whose content differs is found on the right side: the peer's
  /// version among the candidates to fetch, ours in TURN's offer.
  @Test(arguments: [(0, 1), (50, 3), (3000, 1), (3000, 40), (3000, 700)] as [(Int, Int)])
  func findsExactlyWhatDiffers(common: Int, differences: Int) throws {
    var rng = SplitMix64(seed: UInt64(common * 31 + differences))
    var a: [String: String] = [:]
    for i in 0..<common { a["n\(i).md"] = "note \(i)" }
    var b = a
    for d in 0..<differences {
      switch rng.next() % 3 {
      case 0: a["only-a-\(d).md"] = "a \(d)"
      case 1: b["only-b-\(d).md"] = "b \(d)"
      default:
        let path = common > 0 ? "n\(rng.next() % UInt64(common)).md" : "x\(d).md"
        a[path] = "changed in a \(d)"
        b[path] = "changed in b \(d)"
      }
    }
    let outcome = try Self.walk(Self.index(a), Self.index(b))
    let key = { (p: String) in HandoffEngine.key(Self.type, p) }
    for (path, content) in b where a[path] != content {
      #expect(outcome.peerEntries[key(path)] == ContentHash(of: Array(content.utf8)), "\(path)")
    }
    for (path, content) in a where b[path] != content {
      #expect(outcome.offered[key(path)] == ContentHash(of: Array(content.utf8)), "\(path)")
    }
    // Nothing equal on both sides is offered.
    for (k, hash) in outcome.offered {
      let path = String(k.split(separator: "\u{0}").last!)
      #expect(b[path].map { ContentHash(of: Array($0.utf8)) } != hash)
    }
  }

  /// Equal indexes: the root's children answer says so at once.
  @Test func equalIndexesCostOneRoundTrip() throws {
    var notes: [String: String] = [:]
    for i in 0..<2000 { notes["n\(i).md"] = "note \(i)" }
    let outcome = try Self.walk(Self.index(notes), Self.index(notes))
    #expect(outcome.roundTrips == 1)
    #expect(outcome.peerEntries.isEmpty && outcome.offered.isEmpty)
  }

  /// The cost of one change grows with log(n), not n: one differing note in
  /// 20,000 costs a few hundred bytes more than in 200, and far less than
  /// the ~100 bytes per note a full index would.
  @Test func oneChangeCostsLogarithmicBytes() throws {
    func cost(_ n: Int) throws -> Outcome {
      var a: [String: String] = [:]
      for i in 0..<n { a["n\(i).md"] = "note \(i)" }
      var b = a
      b["n\(n / 2).md"] = "changed"
      return try Self.walk(Self.index(a), Self.index(b))
    }
    let small = try cost(200)
    let large = try cost(20_000)
    print(
      "one change: \(small.bytes) B in \(small.roundTrips) round trips among 200 notes,"
        + " \(large.bytes) B in \(large.roundTrips) among 20,000")
    #expect(large.peerEntries.count <= IndexReconciliation.leafSize)
    #expect(large.bytes < 2_500, "\(large.bytes) bytes for one change in 20,000 notes")
    #expect(large.roundTrips <= 5)
    #expect(large.bytes < small.bytes + 1_500)
  }
}

/// A NODES answer holding entries outside the node asked for is a protocol
/// violation: the walk would otherwise take them as held by the peer
/// without having compared them (issue 30).
@Suite struct NodesAnswerCheckTests {
  @Test func entriesOutsideTheNodeAskedForAreRefused() throws {
    let e = IndexSummaryTests.entry("a.md", "A")
    let position = IndexSummary.position(type: e.activityType, path: e.path)
    let inside = IndexReconciliation.Request(
      depth: 2, prefix: position >> 24, wantsEntries: true, expected: 1)
    let outside = IndexReconciliation.Request(
      depth: 2, prefix: (position >> 24) ^ 1, wantsEntries: true, expected: 1)
    let mine = IndexReconciliationTests.index([:])

    var walk = IndexReconciliation()
    let found = try walk.absorb([inside], [.entries([e])], mine: mine)
    #expect(found.peerEntries == [e])

    var hostile = IndexReconciliation()
    #expect(throws: WireError.self) {
      _ = try hostile.absorb([outside], [.entries([e])], mine: mine)
    }
    // At depth 8 the prefix is the whole position.
    var deep = IndexReconciliation()
    #expect(throws: WireError.self) {
      _ = try deep.absorb(
        [.init(depth: 8, prefix: position ^ 0x10, wantsEntries: true, expected: 1)],
        [.entries([e])], mine: mine)
    }
  }
}
