/// The initiator's catch-up step (PROTOCOL.md section 6.1): walks the peer's
/// summary with `IndexReconciliation`, pulling what it finds as it goes, and
/// returns what to offer the peer in TURN. A long-lived link runs the same
/// step when it comes up.
extension HandoffEngine {
  /// Asks for the summary nodes that differ until both sides' differences are
  /// known; pulls the peer's newer or missing notes on the way (all but
  /// `skipping`, the activity already pulled). Returns our entries the peer
  /// lacks or holds otherwise.
  func reconcile(
    _ ch: inout SecureChannel, _ summary: inout SessionSummary, skipping: HandoffIndexEntry?
  ) async throws -> [HandoffIndexEntry] {
    var walk = IndexReconciliation()
    while let request = walk.nextRequest() {
      try await ch.send(.getNodes(request))
      let answers: [IndexReconciliation.Answer]
      switch try await ch.receive() {
      case .nodes(let a): answers = a
      case .error(_, let text): throw HandoffError.peerError(peer: ch.peerLabel, text: text)
      default: throw violation(ch, "expected NODES")
      }
      let found: IndexReconciliation.Found
      do {
        found = try walk.absorb(request, answers, mine: index)
      } catch {
        throw violation(ch, error.reason)
      }
      let wanted = needs(
        found.peerEntries.filter { $0 != skipping }, from: ch.peerLabel, summary: &summary)
      try await pull(wanted, &ch, &summary)
    }
    return walk.offer(from: index)
  }
}
