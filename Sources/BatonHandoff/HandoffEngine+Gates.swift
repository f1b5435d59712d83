import BatonNotes

/// The engine's side of a folder's gate (`IncomingGate`): notes it has not
/// answered for wait in `awaiting`, and are applied when it answers.
extension HandoffEngine {
  /// Keeps an incoming note its gate has not answered for, to apply when
  /// it has (`AwaitingNotes`); false when there is no room (the caller has
  /// it fetched again).
  func awaitDecision(_ payload: ActivityPayload, from peer: String, _ summary: SessionSummary)
    -> Bool
  {
    awaiting.keep(
      AwaitingNote(
        payload: payload, peerLabel: peer, peerName: summary.peerName,
        peerDevice: summary.peerDevice),
      key: Self.key(payload.activityType, payload.path))
  }

  /// A folder's gate answered for some notes it had left pending: those
  /// kept are applied now (through their link, when it still runs, so that
  /// its peer's holdings and the relays follow), each checked again against
  /// the index as it is now; those still pending stay. Links also resync,
  /// for notes there was no room to keep.
  public func incomingDecided() {
    let (waiting, overflowed) = awaiting.takeAll()
    for (peer, notes) in Dictionary(grouping: waiting, by: \.peerLabel) {
      let payloads = notes.map(\.payload)
      if let link = links.values.first(where: { $0.peerLabel == peer }) {
        linkApply(payloads, link)
      } else {
        var summary = SessionSummary(peerName: notes[0].peerName, peerDevice: notes[0].peerDevice)
        applyAll(payloads, from: peer, summary: &summary)
      }
    }
    if overflowed { resyncLinks() }
  }
}
