import BatonNotes

/// Incoming notes a folder's gate (`IncomingGate`, `accept-command`) has
/// not answered for yet, kept to be applied when it has: by index key, at
/// most `limit` notes of at most `byteLimit` bytes in all, so that a peer
/// cannot make the agent hold more while a person decides. A note with no
/// room is not kept: it is fetched again after the answer. A value with
/// no I/O (`AwaitingNotesTests`); the engine applies what it hands back.
struct AwaitingNotes {
  /// The most notes kept.
  let limit: Int
  /// The most bytes of content kept, in all.
  let byteLimit: Int
  private var notes: [String: AwaitingNote] = [:]
  /// The bytes of the notes kept.
  private(set) var bytes = 0
  /// Whether a note had no room since the last `takeAll` (the links then
  /// resync, so that it is offered again).
  private(set) var overflowed = false

  init(limit: Int = 256, byteLimit: Int = 4 << 20) {
    self.limit = limit
    self.byteLimit = byteLimit
  }

  /// How many notes are kept.
  var count: Int { notes.count }

  /// Keeps `note` under `key`, in place of one kept there before; false
  /// when there is no room for it.
  mutating func keep(_ note: AwaitingNote, key: String) -> Bool {
    let replaced = notes[key]?.payload.content.count ?? 0
    let after = bytes - replaced + note.payload.content.count
    guard notes[key] != nil || notes.count < limit, after <= byteLimit else {
      overflowed = true
      return false
    }
    notes[key] = note
    bytes = after
    return true
  }

  /// Every note kept, and whether one had no room since the last call;
  /// leaves none kept.
  mutating func takeAll() -> (notes: [AwaitingNote], overflowed: Bool) {
    defer { self = AwaitingNotes(limit: limit, byteLimit: byteLimit) }
    return (Array(notes.values), overflowed)
  }
}

/// An incoming note kept while its folder's gate decides.
struct AwaitingNote {
  var payload: ActivityPayload
  /// Who handed it over: as in logs, and by name and device.
  var peerLabel: String
  var peerName: String
  var peerDevice: DeviceID
}
