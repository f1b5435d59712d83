import BatonSystem

/// The summary of an index that peers compare (PROTOCOL.md section 6.1): a
/// fingerprint per node of a fixed 16-ary tree over the key hashes, kept up
/// to date on every change in O(1) (four sums and an entry in a bucket of n / 4096), so that
/// neither the beacon nor a session ever passes over the whole index.
///
/// - An entry's *position* is the first 4 bytes, big-endian, of
///   BLAKE2b-256(`string type || string path`): its place does not depend on
///   its content, so both sides put the same note in the same node.
/// - Its *fingerprint* is the 16 bytes, little-endian, of BLAKE2b-128 keyed
///   with the group's summary key (`HandoffKeys.summary`) over `string type ||
///   string path || content hash`, with a byte 01 appended for a tombstone:
///   without the group key no one can predict an entry's term, so no set of
///   entries crafted in advance sums alike in every group, and for an
///   outsider finding two sets that do is as hard as telling keyed BLAKE2b
///   from random. A key holder can still craft them (PROTOCOL.md 6.1).
/// - A node at depth d (0 to 8) holds the entries whose position starts with
///   the node's d nibbles (its prefix); its fingerprint is the sum modulo 2^128
///   of theirs, with their count. The root's gives the index digest.
///
/// Depths 0 to 3 are kept as arrays (4369 nodes); a deeper node is computed
/// from the entries of its depth-3 bucket (n / 4096 of them on average).
struct IndexSummary: Sendable {
  /// A sum of entry fingerprints modulo 2^128.
  struct Fingerprint: Hashable, Sendable {
    var low: UInt64 = 0
    var high: UInt64 = 0

    static func + (a: Fingerprint, b: Fingerprint) -> Fingerprint {
      let (low, carry) = a.low.addingReportingOverflow(b.low)
      return Fingerprint(low: low, high: a.high &+ b.high &+ (carry ? 1 : 0))
    }
    static func - (a: Fingerprint, b: Fingerprint) -> Fingerprint {
      let (low, borrow) = a.low.subtractingReportingOverflow(b.low)
      return Fingerprint(low: low, high: a.high &- b.high &- (borrow ? 1 : 0))
    }

    /// 16 bytes, little-endian.
    var bytes: [UInt8] {
      var w = ByteWriter()
      w.u64(low)
      w.u64(high)
      return w.bytes
    }
  }

  /// A node's count and fingerprint.
  struct Node: Hashable, Sendable {
    var count: Int = 0
    var fingerprint = Fingerprint()

    /// The 8 bytes a NODES answer carries: the fingerprint's low half.
    var shortFingerprint: UInt64 { fingerprint.low }
  }

  /// One entry as the summary holds it.
  struct Item: Sendable {
    var position: UInt32
    var fingerprint: Fingerprint
  }

  /// Depths kept as arrays; deeper nodes come from their depth-3 bucket.
  static let storedDepth = 3
  /// The deepest node: all 32 bits of the position.
  static let maxDepth = 8

  private var levels: [[Node]] = (0...IndexSummary.storedDepth).map {
    [Node](repeating: Node(), count: 1 << (4 * $0))
  }
  /// An entry of a depth-3 node, with its index key.
  private struct Member: Sendable {
    var key: String
    var item: Item
  }
  /// The entries of each depth-3 node (n / 4096 of them on average), in an
  /// array found by a linear search: dictionaries this small cost about
  /// twice the memory for no gain in speed.
  private var buckets = [[Member]](repeating: [], count: 1 << (4 * IndexSummary.storedDepth))

  /// The 32-byte key of the entry fingerprints: `HandoffKeys.summary`.
  let key: [UInt8]

  init(key: [UInt8]) {
    self.key = key
  }

  var count: Int { levels[0][0].count }
  var root: Node { levels[0][0] }

  /// The index digest: BLAKE2b-256(`u64 count || root fingerprint[16]`).
  var digest: [UInt8] { Self.digest(of: root) }

  /// The beacon's 32-bit index digest: the digest's first 4 bytes, little-endian.
  var shortDigest: UInt32 { Self.shortDigest(digest) }

  static func digest(of root: Node) -> [UInt8] {
    var w = ByteWriter()
    w.u64(UInt64(root.count))
    w.raw(root.fingerprint.bytes)
    return HandoffCrypto.hash(w.bytes)
  }

  static func shortDigest(_ digest: [UInt8]) -> UInt32 {
    UInt32(digest[0]) | UInt32(digest[1]) << 8 | UInt32(digest[2]) << 16 | UInt32(digest[3]) << 24
  }

  // MARK: Hashes of one entry

  static func position(type: String, path: String) -> UInt32 {
    var w = ByteWriter()
    w.string(type)
    w.string(path)
    let h = HandoffCrypto.hash(w.bytes)
    return UInt32(h[0]) << 24 | UInt32(h[1]) << 16 | UInt32(h[2]) << 8 | UInt32(h[3])
  }

  /// A tombstone's input ends with one more byte, 01, so that a deleted
  /// note never sums like the note it deleted.
  static func fingerprint(
    type: String, path: String, hash: ContentHash, deleted: Bool = false, key: [UInt8]
  ) -> Fingerprint {
    var w = ByteWriter()
    w.string(type)
    w.string(path)
    w.raw(hash.bytes)
    if deleted { w.u8(HandoffIndexEntry.tombstoneFlag) }
    let h = HandoffCrypto.hash(w.bytes, key: key, length: 16)
    var low: UInt64 = 0
    var high: UInt64 = 0
    for i in (0..<8).reversed() {
      low = low << 8 | UInt64(h[i])
      high = high << 8 | UInt64(h[8 + i])
    }
    return Fingerprint(low: low, high: high)
  }

  static func item(_ e: HandoffIndexEntry, key: [UInt8]) -> Item {
    Item(
      position: position(type: e.activityType, path: e.path),
      fingerprint: fingerprint(
        type: e.activityType, path: e.path, hash: e.hash, deleted: e.deleted, key: key))
  }

  // MARK: Changes

  /// Adds (or replaces) the entry under `key`.
  mutating func insert(_ key: String, _ entry: HandoffIndexEntry) {
    let item = Self.item(entry, key: self.key)
    let bucket = Int(item.position >> 20)
    if let i = buckets[bucket].firstIndex(where: { $0.key == key }) {
      account(buckets[bucket][i].item, adding: false)
      buckets[bucket][i].item = item
    } else {
      buckets[bucket].append(Member(key: key, item: item))
    }
    account(item, adding: true)
  }

  /// Removes the entry under `key` (type and path give its place).
  mutating func remove(_ key: String, type: String, path: String) {
    let bucket = Int(Self.position(type: type, path: path) >> 20)
    guard let i = buckets[bucket].firstIndex(where: { $0.key == key }) else { return }
    account(buckets[bucket][i].item, adding: false)
    buckets[bucket].swapAt(i, buckets[bucket].count - 1)
    buckets[bucket].removeLast()
  }

  private mutating func account(_ item: Item, adding: Bool) {
    for depth in 0...Self.storedDepth {
      let i = depth == 0 ? 0 : Int(item.position >> (32 - 4 * UInt32(depth)))
      if adding {
        levels[depth][i].count += 1
        levels[depth][i].fingerprint = levels[depth][i].fingerprint + item.fingerprint
      } else {
        levels[depth][i].count -= 1
        levels[depth][i].fingerprint = levels[depth][i].fingerprint - item.fingerprint
      }
    }
  }

  // MARK: Reading nodes

  /// Whether (depth, prefix) names a node: depth 0 to 8, prefix below 16^depth.
  static func isValid(depth: Int, prefix: UInt32) -> Bool {
    depth >= 0 && depth <= maxDepth && (depth == maxDepth || prefix < (1 << (4 * UInt32(depth))))
  }

  private static func within(_ position: UInt32, depth: Int, prefix: UInt32) -> Bool {
    depth == 0 || position >> (32 - 4 * UInt32(depth)) == prefix
  }

  /// The node at `depth` with `prefix` (the first `depth` nibbles of its positions).
  func node(depth: Int, prefix: UInt32) -> Node {
    if depth <= Self.storedDepth { return levels[depth][Int(prefix)] }
    var node = Node()
    for item in bucket(depth: depth, prefix: prefix).lazy.map(\.item)
    where Self.within(item.position, depth: depth, prefix: prefix) {
      node.count += 1
      node.fingerprint = node.fingerprint + item.fingerprint
    }
    return node
  }

  /// The 16 children of a node of depth below 8.
  func children(depth: Int, prefix: UInt32) -> [Node] {
    let childDepth = depth + 1
    if childDepth <= Self.storedDepth {
      let first = Int(prefix) << 4
      return Array(levels[childDepth][first..<first + 16])
    }
    var nodes = [Node](repeating: Node(), count: 16)
    for item in bucket(depth: depth, prefix: prefix).lazy.map(\.item)
    where Self.within(item.position, depth: depth, prefix: prefix) {
      let child = Int(item.position >> (32 - 4 * UInt32(childDepth)) & 0xF)
      nodes[child].count += 1
      nodes[child].fingerprint = nodes[child].fingerprint + item.fingerprint
    }
    return nodes
  }

  /// The index keys of the entries in a node.
  func keys(depth: Int, prefix: UInt32) -> [String] {
    if depth >= Self.storedDepth {
      return bucket(depth: depth, prefix: prefix).compactMap {
        Self.within($0.item.position, depth: depth, prefix: prefix) ? $0.key : nil
      }
    }
    let span = 1 << (4 * (Self.storedDepth - depth))
    let first = Int(prefix) * span
    return buckets[first..<first + span].flatMap { $0.map(\.key) }
  }

  private func bucket(depth: Int, prefix: UInt32) -> [Member] {
    buckets[Int(prefix >> (4 * UInt32(depth - Self.storedDepth)))]
  }

}
