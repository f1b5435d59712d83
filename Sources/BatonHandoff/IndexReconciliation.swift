import BatonSystem

/// Finding what differs between two indexes without sending either
/// (PROTOCOL.md section 6.1): the initiator walks the peer's summary tree
/// (`IndexSummary`) from the root, asking only for the nodes whose
/// fingerprint differs from its own, until the peer answers a node with its
/// entries. A peer that missed k changes in an index of n notes so costs about
/// k × log16(n) node answers of 193 bytes plus k entries, in log16(n) + 1
/// round trips, whatever n is.
///
/// This type is the walk's state and decisions, with no I/O: the catch-up
/// step (`HandoffEngine.reconcile` for a session's initiator, the link
/// sender's `walk` for a link, in HandoffLink+Driver.swift) sends
/// `nextRequest()` as GET_NODES, gives the NODES answer to `absorb`, pulls
/// the peer entries it returns, and a session finally
/// offers `offer(from:)` in TURN. The responder answers with
/// `answer(_:from:)`.
package struct IndexReconciliation {
  /// One node asked for: its depth (0 to 8) and prefix (its first `depth`
  /// nibbles of the position), and whether the asker wants its entries rather
  /// than its children (it has none of them itself).
  package struct Request: Equatable, Sendable {
    package var depth: Int
    package var prefix: UInt32
    package var wantsEntries: Bool
    /// The entries the peer said the node holds (for sizing requests; not sent).
    var expected: Int = 0

    package init(depth: Int, prefix: UInt32, wantsEntries: Bool, expected: Int = 0) {
      self.depth = depth
      self.prefix = prefix
      self.wantsEntries = wantsEntries
      self.expected = expected
    }

    /// The root, answered with its children, or its entries when it holds
    /// at most `leafSize`: a walk's first request, and what LINK carries.
    package static let root = Request(depth: 0, prefix: 0, wantsEntries: false)

    package static func == (a: Request, b: Request) -> Bool {
      a.depth == b.depth && a.prefix == b.prefix && a.wantsEntries == b.wantsEntries
    }
  }

  /// A child in a NODES answer: count and the low 8 bytes of its fingerprint.
  package struct Child: Equatable, Sendable {
    package var count: UInt32
    package var fingerprint: UInt64

    package init(count: UInt32, fingerprint: UInt64) {
      self.count = count
      self.fingerprint = fingerprint
    }
  }

  /// The answer for one node: its 16 children, or its entries.
  package enum Answer: Equatable, Sendable {
    case children([Child])
    case entries([HandoffIndexEntry])
  }

  /// What one NODES answer taught the initiator.
  struct Found {
    /// The peer's entries in nodes that differ: candidates to fetch.
    var peerEntries: [HandoffIndexEntry] = []
  }

  /// A node whose entries the responder answers without being asked to when
  /// it holds at most this many.
  static let leafSize = 4
  /// A node whose entries the initiator asks for (having none of its own) is
  /// asked for in one piece only up to this size; a larger one by its children.
  static let largestEntriesRequest = 1024
  /// The most nodes in one GET_NODES, and the most entries it may bring back.
  static let maxNodesPerRequest = 64
  static let maxEntriesPerRequest = 2048
  /// The responder answers with children rather than entries once its NODES
  /// answer would grow past this many bytes.
  static let answerBudget = 1 << 20
  /// The most nodes one walk asks for: a peer's tree of n entries needs at
  /// most about 8n; more means a peer making the walk up (a hostile key holder).
  static let maxNodesPerWalk = 1 << 22
  /// TURN's entries stop at 15 MiB, well short of its limit; what is left is
  /// offered in the next session (the digests still differ). Each entry
  /// counts with a voucher more than it holds here: the sender's own, made
  /// when it is sent (`HandoffMessage.vouched(by:)`).
  static let turnBudget = 15 << 20

  private var pending: [Request] = [.root]
  private var head = 0
  private var asked = 0
  /// Our keys in nodes the peer lacks or holds otherwise: what TURN offers.
  private var offered: Set<String> = []
  /// The content hash the peer showed for each key it sent.
  private var peerHashes: [String: HandoffIndexEntry.ContentState] = [:]

  init() {}

  /// The next nodes to ask for, or nil when the walk is over.
  mutating func nextRequest() -> [Request]? {
    guard head < pending.count else { return nil }
    var batch: [Request] = []
    var entries = 0
    while head < pending.count, batch.count < Self.maxNodesPerRequest {
      let next = pending[head]
      let cost = next.wantsEntries ? next.expected : Self.leafSize
      if !batch.isEmpty, entries + cost > Self.maxEntriesPerRequest { break }
      batch.append(next)
      entries += cost
      head += 1
    }
    if head > 4096 {
      pending.removeFirst(head)
      head = 0
    }
    asked += batch.count
    return batch
  }

  /// Takes the peer's answers to `request`, compared with our own index.
  /// Throws `WireError` when the answers do not fit the request.
  mutating func absorb(_ request: [Request], _ answers: [Answer], mine: HandoffIndex)
    throws(WireError) -> Found
  {
    guard answers.count == request.count else {
      throw WireError("NODES has \(answers.count) answers for \(request.count) nodes")
    }
    var found = Found()
    for (node, answer) in zip(request, answers) {
      switch answer {
      case .children(let theirs):
        guard node.depth < IndexSummary.maxDepth, theirs.count == 16 else {
          throw WireError("children answer for a node of depth \(node.depth)")
        }
        // The children of a node hold what the node holds, as the peer said.
        let total = theirs.reduce(0) { $0 + Int($1.count) }
        guard node.depth == 0 || total == node.expected else {
          throw WireError(
            "children of node \(node.depth)/\(node.prefix) hold \(total) entries, the node \(node.expected)")
        }
        guard asked + pending.count - head < Self.maxNodesPerWalk else {
          throw WireError("the peer's summary needs over \(Self.maxNodesPerWalk) nodes")
        }
        let ours = mine.summary.children(depth: node.depth, prefix: node.prefix)
        for c in 0..<16 {
          let (peer, own) = (theirs[c], ours[c])
          if Int(peer.count) == own.count && peer.fingerprint == own.shortFingerprint { continue }
          let child = node.prefix << 4 | UInt32(c)
          if peer.count == 0 {
            // The peer has nothing there: everything of ours in it is new to it.
            offered.formUnion(mine.summary.keys(depth: node.depth + 1, prefix: child))
          } else {
            pending.append(
              Request(
                depth: node.depth + 1, prefix: child,
                wantsEntries: own.count == 0 && Int(peer.count) <= Self.largestEntriesRequest,
                expected: Int(peer.count)))
          }
        }
      case .entries(let theirs):
        // Only entries in the node asked for: any other would be taken as
        // held by the peer without the walk having compared it.
        if node.depth > 0 {
          let shift = 32 - 4 * UInt32(node.depth)
          for e in theirs
          where IndexSummary.position(type: e.activityType, path: e.path) >> shift != node.prefix {
            throw WireError(
              "NODES answer for node \(node.depth)/\(node.prefix) holds \(e.path), outside it")
          }
        }
        var hashes: [String: HandoffIndexEntry.ContentState] = [:]
        for e in theirs { hashes[HandoffEngine.key(e.activityType, e.path)] = e.contentState }
        for key in mine.summary.keys(depth: node.depth, prefix: node.prefix)
        where hashes[key] == nil || hashes[key] != mine[key]?.entry.contentState {
          offered.insert(key)
        }
        peerHashes.merge(hashes) { $1 }
        found.peerEntries += theirs
      }
    }
    return found
  }

  /// Our keys in the nodes found to differ (the peer lacks them or holds
  /// them with other content): what a link pushes from (section 6.2).
  var differingKeys: Set<String> { offered }

  /// The entries TURN offers: ours in the nodes found to differ, as they are
  /// now (a note pulled meanwhile that now equals the peer's is left out).
  func offer(from mine: HandoffIndex) -> [HandoffIndexEntry] {
    var bytes = 0
    var out: [HandoffIndexEntry] = []
    for key in offered.sorted() {
      guard let note = mine[key], mine.isOffered(note), peerHashes[key] != note.entry.contentState
      else { continue }
      bytes += note.entry.encodedSize + Vouchers.recordBytes
      if bytes > Self.turnBudget { break }
      out.append(note.entry)
    }
    return out
  }

  /// The responder's answers: a node's entries when asked for them or when it
  /// holds at most `leafSize` (always at depth 8), else its 16 children;
  /// children too once the answer would pass `answerBudget` bytes.
  static func answer(_ requests: [Request], from index: HandoffIndex) -> [Answer] {
    var bytes = 0
    return requests.map { r in
      let node = index.summary.node(depth: r.depth, prefix: r.prefix)
      if r.depth == IndexSummary.maxDepth
        || ((r.wantsEntries || node.count <= leafSize) && bytes < answerBudget)
      {
        let entries = index.offeredEntries(depth: r.depth, prefix: r.prefix)
        bytes += entries.reduce(5) { $0 + $1.encodedSize + Vouchers.recordBytes }
        return .entries(entries)
      }
      bytes += 1 + 16 * 12
      return .children(
        index.summary.children(depth: r.depth, prefix: r.prefix).map {
          Child(count: UInt32(clamping: $0.count), fingerprint: $0.shortFingerprint)
        })
    }
  }
}
