import Testing

@testable import BatonHandoff
@testable import BatonSystem

/// The index summary kept up to date change by change must always equal the
/// one computed from scratch over the index as it is (PROTOCOL.md 6.1).
@Suite struct IndexSummaryTests {
  static let type = "org.example.notes"
  static let other = "org.example.unconfigured"
  /// The summary key of the test group (group key 00 01 ... 1f).
  static let summaryKey = HandoffKeys(groupKey: GroupKey(bytes: Array(0..<32))!).summary

  /// Every node of depth 0 to 8 that holds something, computed from the
  /// offered entries alone with the definition's formulas.
  static func scratch(_ notes: [String: StoredNote], offered types: Set<String>)
    -> (nodes: [Int: [UInt32: IndexSummary.Node]], keys: [Int: [UInt32: Set<String>]])
  {
    var nodes: [Int: [UInt32: IndexSummary.Node]] = [:]
    var keys: [Int: [UInt32: Set<String>]] = [:]
    for (key, note) in notes
    where (!note.deleted || note.entry.deleted) && types.contains(note.entry.activityType)
      && note.entry.unencodableReason == nil
    {
      let e = note.entry
      let position = IndexSummary.position(type: e.activityType, path: e.path)
      let fp = IndexSummary.fingerprint(
        type: e.activityType, path: e.path, hash: e.hash, deleted: e.deleted, key: summaryKey)
      for depth in 0...8 {
        let prefix = depth == 0 ? 0 : position >> (32 - 4 * UInt32(depth))
        var node = nodes[depth, default: [:]][prefix, default: IndexSummary.Node()]
        node.count += 1
        node.fingerprint = node.fingerprint + fp
        nodes[depth, default: [:]][prefix] = node
        keys[depth, default: [:]][prefix, default: []].insert(key)
      }
    }
    return (nodes, keys)
  }

  static func entry(_ path: String, _ content: String, type: String = type, version: UInt64 = 1)
    -> HandoffIndexEntry
  {
    HandoffIndexEntry(
      activityType: type, path: path, hash: ContentHash(of: Array(content.utf8)),
      size: content.utf8.count, version: VersionVector([DeviceID(rawValue: 7): version]),
      origin: DeviceID(rawValue: 7))
  }

  static func check(_ index: HandoffIndex, _ notes: [String: StoredNote]) {
    let (nodes, keys) = scratch(notes, offered: index.offeredTypes)
    let summary = index.summary
    // Every stored node (depths 0 to 3), empty ones included.
    for depth in 0...IndexSummary.storedDepth {
      for prefix in 0..<UInt32(1 << (4 * depth)) {
        let expected = nodes[depth]?[prefix] ?? IndexSummary.Node()
        if summary.node(depth: depth, prefix: prefix) != expected {
          Issue.record("node \(depth)/\(prefix) differs from scratch")
          return
        }
      }
    }
    // Every deeper node that holds something, its children and its keys.
    for depth in 0...8 {
      for (prefix, node) in nodes[depth] ?? [:] {
        #expect(summary.node(depth: depth, prefix: prefix) == node)
        #expect(Set(summary.keys(depth: depth, prefix: prefix)) == keys[depth]![prefix]!)
        if depth < 8 {
          let children = summary.children(depth: depth, prefix: prefix)
          for c in 0..<16 {
            #expect(children[c] == nodes[depth + 1]?[prefix << 4 | UInt32(c)] ?? IndexSummary.Node())
          }
        }
      }
    }
    // The digest from its definition: BLAKE2b-256(u64 count || sum[16]).
    let root = nodes[0]?[0] ?? IndexSummary.Node()
    var bytes: [UInt8] = []
    withUnsafeBytes(of: UInt64(root.count).littleEndian) { bytes += $0 }
    bytes += root.fingerprint.bytes
    #expect(summary.digest == HandoffCrypto.hash(bytes))
    #expect(summary.count == root.count)
  }

  @Test(arguments: [1, 2, 3, 4] as [UInt64])
  func incrementalSummaryAgreesWithScratchOverRandomHistories(seed: UInt64) {
    var rng = SplitMix64(seed: seed)
    var index = HandoffIndex(offeredTypes: [Self.type], summaryKey: Self.summaryKey)
    var notes: [String: StoredNote] = [:]
    let paths = (0..<120).map { "dir\($0 % 7)/note-\($0).md" }
    for step in 0..<400 {
      let path = paths[Int(rng.next() % UInt64(paths.count))]
      let type = rng.next() % 10 == 0 ? Self.other : Self.type
      let key = HandoffEngine.key(type, path)
      var note = notes[key]
      switch rng.next() % 7 {
      case 0, 1:  // new content (a save or an incoming note)
        note = StoredNote(
          entry: Self.entry(path, "v\(rng.next() % 5)", type: type, version: rng.next() % 9 + 1))
      case 2:  // version only (a merge)
        note?.entry.version = VersionVector([DeviceID(rawValue: 9): rng.next() % 9 + 1])
      case 3:  // deleted (a tombstone), or withdrawn (over the size limit)
        if rng.next() % 2 == 0, let live = note {
          note = .tombstone(
            of: live.entry, version: VersionVector([DeviceID(rawValue: 7): rng.next() % 9 + 1]),
            origin: DeviceID(rawValue: 7))
        } else {
          note?.deleted = true
        }
      case 4:  // found again
        note?.deleted = false
        note?.entry.deleted = false
      case 5:  // gone from the index altogether
        note = nil
      default:  // a path over the wire limit: not offered
        if rng.next() % 4 == 0 {
          note = StoredNote(
            entry: Self.entry(String(repeating: "p", count: 1100), "x", type: type))
        }
      }
      let k = note.map { HandoffEngine.key($0.entry.activityType, $0.entry.path) } ?? key
      index[k] = note
      notes[k] = note
      if step % 20 == 0 || step == 399 {
        Self.check(index, notes)
        let tombstones = notes.values.filter {
          $0.entry.deleted && index.isOffered($0)
        }.count
        #expect(index.tombstoneCount == tombstones)
        // The dense store (a removal moves the last note into the gap)
        // holds exactly the notes, by key and by iteration.
        #expect(index.count == notes.count)
        #expect(notes.allSatisfy { index[$0.key] == $0.value })
        #expect(Dictionary(uniqueKeysWithValues: index.map { ($0.key, $0.value) }) == notes)
      }
    }
    #expect(index.summary.count > 0)
  }

  /// Two indexes built in different orders hold the same summary.
  /// Every change of a note, a version alone included, is the key the
  /// engine tells its links of; an assignment that changes nothing is none.
  @Test func theIndexTellsWhichNoteAChangeChanged() {
    var index = HandoffIndex(offeredTypes: [Self.type], summaryKey: Self.summaryKey)
    let key = "\(Self.type)\0n.md"
    index[key] = StoredNote(entry: Self.entry("n.md", "one"))
    #expect(index.takeChange() == key)
    #expect(index.takeChange() == nil)
    index[key] = StoredNote(entry: Self.entry("n.md", "one"))
    #expect(index.takeChange() == nil)
    // The same content at a new version: the summary does not change, the note does.
    let digest = index.summary.digest
    index[key] = StoredNote(entry: Self.entry("n.md", "one", version: 2))
    #expect(index.summary.digest == digest)
    #expect(index.takeChange() == key)
    index[key]?.deleted = true
    #expect(index.takeChange() == key)
    index[key] = nil
    #expect(index.takeChange() == key)
    index["\(Self.type)\0absent.md"] = nil
    #expect(index.takeChange() == nil)
  }

  @Test func orderDoesNotMatter() {
    let entries = (0..<500).map { Self.entry("n\($0).md", "content \($0)") }
    var a = HandoffIndex(offeredTypes: [Self.type], summaryKey: Self.summaryKey)
    var b = HandoffIndex(offeredTypes: [Self.type], summaryKey: Self.summaryKey)
    for e in entries { a[HandoffEngine.key(e.activityType, e.path)] = StoredNote(entry: e) }
    for e in entries.reversed() { b[HandoffEngine.key(e.activityType, e.path)] = StoredNote(entry: e) }
    #expect(a.summary.digest == b.summary.digest)
    b[HandoffEngine.key(Self.type, "n7.md")] = StoredNote(entry: Self.entry("n7.md", "changed"))
    #expect(a.summary.digest != b.summary.digest)
  }

  /// The same entries under two groups' keys: every fingerprint differs, so
  /// no set of entries crafted without a group's key sums alike in it.
  @Test func anotherGroupsKeyGivesOtherFingerprints() {
    let otherKey = HandoffKeys(groupKey: GroupKey(bytes: Array(32..<64))!).summary
    #expect(otherKey != Self.summaryKey)
    let entries = (0..<200).map { Self.entry("n\($0).md", "content \($0)") }
    var a = HandoffIndex(offeredTypes: [Self.type], summaryKey: Self.summaryKey)
    var b = HandoffIndex(offeredTypes: [Self.type], summaryKey: otherKey)
    for e in entries {
      a[HandoffEngine.key(e.activityType, e.path)] = StoredNote(entry: e)
      b[HandoffEngine.key(e.activityType, e.path)] = StoredNote(entry: e)
      let mine = IndexSummary.fingerprint(
        type: e.activityType, path: e.path, hash: e.hash, key: Self.summaryKey)
      let theirs = IndexSummary.fingerprint(
        type: e.activityType, path: e.path, hash: e.hash, key: otherKey)
      #expect(mine != theirs, "\(e.path)")
    }
    // Positions do not depend on the key: both put a note in the same node,
    // with the same count, and only the fingerprints tell the groups apart.
    #expect(a.summary.count == b.summary.count)
    #expect(a.summary.root.fingerprint != b.summary.root.fingerprint)
    #expect(a.summary.digest != b.summary.digest)
    for c in 0..<16 {
      #expect(a.summary.children(depth: 0, prefix: 0)[c].count == b.summary.children(depth: 0, prefix: 0)[c].count)
    }
  }
}
