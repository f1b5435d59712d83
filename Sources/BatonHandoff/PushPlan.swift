import BatonSystem

/// What a link's peer lacks, by how it is sent (PROTOCOL.md sections 6.2
/// and 7.3): a rename as MOVED (a tombstone and a new note of the same
/// bytes, whose old name the peer holds with those bytes and whose new
/// name it does not hold), the other tombstones as GONE, the notes as
/// NOTE. A plain value of what is pending and what the peer holds
/// (`PushPlanTests`); the link's sender sends it.
struct PushPlan: Equatable {
  /// A rename: the old name's tombstone and the new name's entry.
  struct Move: Equatable {
    var gone: HandoffIndexEntry
    var new: HandoffIndexEntry
  }

  var moves: [Move] = []
  var tombstones: [HandoffIndexEntry] = []
  var notes: [HandoffIndexEntry] = []

  /// `pending`, in push order, split; `peerHash` is the hash of the peer's
  /// copy of a key, nil when it holds none. Each tombstone pairs with one
  /// note at most, the first of its bytes in order.
  init(_ pending: [HandoffIndexEntry], peerHash: (String) -> ContentHash?) {
    tombstones = pending.filter(\.deleted)
    notes = pending.filter { !$0.deleted }
    guard !tombstones.isEmpty, !notes.isEmpty else { return }
    var byHash: [ContentHash: Int] = [:]
    for (i, t) in tombstones.enumerated()
    where peerHash(HandoffIndex.key(t.activityType, t.path)) == t.hash {
      byHash[t.hash] = i
    }
    var moved = Set<Int>()
    var moves: [Move] = []
    let tombstones = tombstones
    notes.removeAll { e in
      guard let i = byHash[e.hash], tombstones[i].activityType == e.activityType,
        peerHash(HandoffIndex.key(e.activityType, e.path)) == nil, moved.insert(i).inserted
      else { return false }
      moves.append(Move(gone: tombstones[i], new: e))
      return true
    }
    self.moves = moves
    self.tombstones = tombstones.enumerated().filter { !moved.contains($0.offset) }.map(\.element)
  }
}
