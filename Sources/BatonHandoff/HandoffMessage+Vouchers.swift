/// This device's vouchers, made on the way out (PROTOCOL.md section 7.5):
/// the index keeps only other devices' vouchers, and Ed25519 signs the same
/// counter to the same bytes each time, so every entry and NOTE a message
/// carries gets this device's voucher for its counter when it is sent.
extension HandoffMessage {
  /// The message with `key`'s voucher, made now, on every entry and NOTE
  /// whose version counts changes by `key`'s device (one already there is
  /// replaced: a voucher is for the counter in the vector it travels with).
  func vouched(by key: DeviceKey) -> HandoffMessage {
    // `Vouchers.signed` leaves a version without a counter of ours as it is.
    func entry(_ e: HandoffIndexEntry) -> HandoffIndexEntry {
      var out = e
      out.vouchers = e.vouchers.signed(
        by: key, type: e.activityType, path: e.path, version: e.version)
      return out
    }
    switch self {
    case .activity(let current, let title, let digest):
      return .activity(current.map(entry), title: title, indexDigest: digest)
    case .index(let entries): return .index(entries.map(entry))
    case .turn(let digest, let entries): return .turn(indexDigest: digest, entries.map(entry))
    case .have(let entries): return .have(entries.map(entry))
    case .gone(let entries): return .gone(entries.map(entry))
    case .moved(let from, let to): return .moved(from: entry(from), to: entry(to))
    case .nodes(let answers):
      return .nodes(
        answers.map {
          if case .entries(let entries) = $0 { return .entries(entries.map(entry)) }
          return $0
        })
    case .link(let limit, .entries(let entries)):
      return .link(maxNoteSize: limit, root: .entries(entries.map(entry)))
    case .note(let payload):
      var out = payload
      out.vouchers = payload.vouchers.signed(
        by: key, type: payload.activityType, path: payload.path, version: payload.version)
      return .note(out)
    case .getActivity, .getIndex, .getNote, .noteUnavailable, .done, .error, .getNodes,
      .link(_, .children), .ping, .pong, .members:
      return self
    }
  }
}
