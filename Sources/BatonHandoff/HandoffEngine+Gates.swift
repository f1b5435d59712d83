import BatonNotes

/// An incoming note kept while its folder's gate decides (`IncomingGate`).
struct AwaitingNote {
  var payload: ActivityPayload
  /// Who handed it over: as in logs, and by name and device.
  var peerLabel: String
  var peerName: String
  var peerDevice: DeviceID
}

extension HandoffEngine {
  /// At most this many notes, of at most `maxAwaitingBytes` in all, wait
  /// for their gate's answer here; others are fetched again after it.
  static let maxAwaiting = 256
  static let maxAwaitingBytes = 4 << 20

  /// Keeps an incoming note its gate has not answered for, to apply when
  /// it has; false when there is no room (the caller has it fetched again).
  func awaitDecision(_ payload: ActivityPayload, from peer: String, _ summary: SessionSummary)
    -> Bool
  {
    let key = Self.key(payload.activityType, payload.path)
    let replaced = awaitingDecision[key]?.payload.content.count ?? 0
    let bytes = awaitingBytes - replaced + payload.content.count
    guard awaitingDecision[key] != nil || awaitingDecision.count < Self.maxAwaiting,
      bytes <= Self.maxAwaitingBytes
    else {
      awaitingOverflowed = true
      return false
    }
    awaitingDecision[key] = AwaitingNote(
      payload: payload, peerLabel: peer, peerName: summary.peerName,
      peerDevice: summary.peerDevice)
    awaitingBytes = bytes
    return true
  }

  /// A folder's gate answered for some notes it had left pending: those
  /// kept are applied now (through their link, when it still runs, so that
  /// its peer's holdings and the relays follow), each checked again against
  /// the index as it is now; those still pending stay. Links also resync,
  /// for notes there was no room to keep.
  public func incomingDecided() {
    let waiting = awaitingDecision
    awaitingDecision = [:]
    awaitingBytes = 0
    for (peer, notes) in Dictionary(grouping: waiting.values, by: \.peerLabel) {
      let payloads = notes.map(\.payload)
      if let link = links.values.first(where: { $0.peerLabel == peer }) {
        linkApply(payloads, link)
      } else {
        var summary = SessionSummary(peerName: notes[0].peerName, peerDevice: notes[0].peerDevice)
        applyAll(payloads, from: peer, summary: &summary)
      }
    }
    if awaitingOverflowed {
      awaitingOverflowed = false
      for link in links.values { link.resyncNow() }
    }
  }
}
