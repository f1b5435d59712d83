import Foundation

/// One first contact on the timed radio, read from the arriving agent's
/// btsnoop log (issue 29's target: within 1.2x its floor at the median):
/// when its controller started scanning, when it first heard an
/// advertisement, when its first connection was up (LE Connection
/// Complete) and whether it was the central there (it connected) or a peer
/// connected to it, and the last L2CAP packet
/// it received before its first note was on disk (the NOTE's frame: a note
/// of up to about 1.6 KB crosses as one L2CAP packet, and the benchmark
/// makes the one pushed first 200 B).
///
/// Each contact's floor splits the same way, from the model
/// (Tests/Radio/timing.py), for a radio that hears all the time:
/// - connected: hearing the other side, then its next advertising event
///   (a gap: the interval in 0.625 ms units plus advDelay's mean, 5 ms),
///   then one connection interval (the model makes the connection then).
///   Hearing counts as it fell when the arrival connected itself (from
///   scanning on to the first advertisement reported: the peers' random
///   phase, which no protocol moves), and as nothing when a peer connected
///   to it (its first advertising event goes out as it starts, and a peer
///   that scans hears it at once; one that scans in windows cannot: that
///   wait is the scan schedule's, issue 25's, and shows in the measured
///   figure);
/// - protocol: the turns nothing can remove, each one connection event
///   (the answer to what arrived in an event goes in the next): the
///   channel's request and response, the handshake's M1, M2 and M3, then
///   the NOTE from the event after M3, with its air time. So six intervals
///   and the NOTE's carry; the host learns of the connection at event 0,
///   so its request goes in event 1.
struct FirstContact {
  var scanning: Date
  /// The first advertisement reported after `scanning`.
  var heard: Date
  /// Whether this agent was the central of its first connection.
  var connected: Bool
  var up: Date
  var noted: Date
  /// The last L2CAP packet received between `up` and `noted`.
  var noteFrame: Int

  /// The instants and the NOTE's frame from `path`, the arrival's note on
  /// disk at `noted`; nil when the log lacks its scan or connection.
  init?(hciLog path: String, noted: Date) {
    var scanning: Date?
    var heard: Date?
    var central = false
    var up: Date?
    var noteFrame = 0
    for record in Bench.btsnoopRecords(path) where record.stamp <= noted {
      let bytes = record.packet
      let p = bytes.startIndex
      guard bytes.count >= 4 else { continue }
      switch (bytes[p], record.received) {
      case (0x01, false):
        // A command: opcode (little-endian), length, parameters.
        let opcode = Int(bytes[p + 1]) | Int(bytes[p + 2]) << 8
        let enable = bytes.count >= 5 && bytes[p + 4] == 1
        // LE Set Scan Enable, LE Set Extended Scan Enable.
        if scanning == nil, opcode == 0x200C || opcode == 0x2042, enable {
          scanning = record.stamp
        }
      case (0x04, true):
        // LE Meta: (Extended) Advertising Report.
        if scanning != nil, heard == nil, bytes[p + 1] == 0x3E,
          bytes[p + 3] == 0x02 || bytes[p + 3] == 0x0D
        {
          heard = record.stamp
        }
        // LE Meta: (Enhanced) Connection Complete, status 0; then the
        // handle (2 bytes) and the role (0: central).
        if scanning != nil, up == nil, bytes.count >= 8, bytes[p + 1] == 0x3E,
          bytes[p + 3] == 0x01 || bytes[p + 3] == 0x0A, bytes[p + 4] == 0
        {
          up = record.stamp
          central = bytes[p + 7] == 0
        }
      case (0x02, true):
        // ACL data: a start fragment's L2CAP length (continuations add no
        // new packet).
        if up != nil, bytes.count >= 7, (bytes[p + 2] >> 4) & 3 != 1 {
          noteFrame = Int(bytes[p + 5]) | Int(bytes[p + 6]) << 8
        }
      default:
        break
      }
    }
    guard let scanning, let up else { return nil }
    (self.scanning, self.heard, self.connected, self.up, self.noted, self.noteFrame) = (
      scanning, heard ?? scanning, central, up, noted, noteFrame
    )
  }

  /// Until connected, then the protocol, in milliseconds.
  var parts: [Double] {
    [up.timeIntervalSince(scanning), noted.timeIntervalSince(up)].map { $0 * 1000 }
  }

  /// The model's floor for both parts, in milliseconds (see the type's
  /// comment), for peers advertising every `units` of 0.625 ms.
  func floor(_ timing: RadioTiming, units: Int) -> [Double] {
    let gap = Double(units) * 0.625 + 5
    let interval = Double(timing.intervalMicroseconds) / 1000
    let hearing = connected ? heard.timeIntervalSince(scanning) * 1000 : 0
    let protocolTime = 6 * interval + Double(timing.carryTime([noteFrame])) / 1000
    return [hearing + gap + interval, protocolTime]
  }

  /// Prints each part's median beside its floor, and the whole first
  /// contact's median, floor and ratio, for `contacts` (at least one).
  static func report(
    _ contacts: [FirstContact], of kind: String, timing: RadioTiming, units: Int
  ) {
    func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
    let frames = contacts.map(\.noteFrame).sorted()
    let floors = contacts.map { $0.floor(timing, units: units) }
    let labels = [
      "connected (scanning on -> connection up)", "protocol (-> the first note on disk)",
    ]
    let own = contacts.filter(\.connected).count
    print(
      "first contact of \(kind) on the timed radio (\(contacts.count), \(own) of them connecting"
        + " themselves; floor: the model's, see"
        + " FirstContact.swift), median ms:")
    for (k, label) in labels.enumerated() {
      print(
        "  " + label.padding(toLength: 44, withPad: " ", startingAt: 0)
          + String(
            format: "measured %7.1f  floor %7.1f", median(contacts.map { $0.parts[k] }),
            median(floors.map { $0[k] })))
    }
    let whole = median(contacts.map { $0.parts.reduce(0, +) })
    let floorWhole = median(floors.map { $0.reduce(0, +) })
    print(
      String(
        format:
          "  whole first contact (scanning on -> note): measured %7.1f  floor %7.1f; measured/floor %.2f (target 1.2; NOTE frame %d B)",
        whole, floorWhole, whole / floorWhole, frames[frames.count / 2]))
  }
}
