import Foundation

/// The simulated radio's timing for a benchmark (`--radio instant|timed`
/// and the timed radio's parameters), the options that pass it on to
/// Tests/Radio/radio.py, and the model's arithmetic for floors: the same
/// model as Tests/Radio/timing.py (its docstring is the reference).
struct RadioTiming: Sendable {
  var timed = false
  /// The connection interval in microseconds.
  var intervalMicroseconds = 40_000
  var pdusPerEvent = 6
  var dataLength = 251
  var phy = "1m"
  /// Scan windows in microseconds (radio.py --scan-interval-ms and
  /// --scan-window-ms); 0: the radio hears all the time.
  var scanIntervalMicroseconds = 0
  var scanWindowMicroseconds = 0
  /// A link that was idle (`LinkPace`): its first events keep the idle
  /// interval until the update to the busy one takes effect at its
  /// instant. Nil: every event at `intervalMicroseconds`.
  var slowStart: (events: Int, intervalMicroseconds: Int)?

  /// The interval a save waits for its first event in.
  var firstIntervalMicroseconds: Int { slowStart?.intervalMicroseconds ?? intervalMicroseconds }

  /// Where event `k` (0: the first the carry may use) starts and how long
  /// it lasts, in microseconds.
  func event(_ k: Int) -> (start: Int, length: Int) {
    guard let slow = slowStart else { return (k * intervalMicroseconds, intervalMicroseconds) }
    if k < slow.events { return (k * slow.intervalMicroseconds, slow.intervalMicroseconds) }
    return (
      slow.events * slow.intervalMicroseconds + (k - slow.events) * intervalMicroseconds,
      intervalMicroseconds
    )
  }

  static let interframeSpace = 150
  static let pduOverhead = 14

  /// Takes `argument` (and its value from `rest`) if it is one of the radio
  /// options; returns false for any other.
  mutating func parse(_ argument: String, _ rest: inout ArraySlice<String>) throws -> Bool {
    func value() throws -> String {
      guard let next = rest.popFirst() else { throw BenchError.usage("\(argument) needs a value") }
      return next
    }
    switch argument {
    case "--radio":
      let mode = try value()
      guard mode == "instant" || mode == "timed" else {
        throw BenchError.usage("--radio \(mode): give instant or timed")
      }
      timed = mode == "timed"
    case "--conn-interval":
      let text = try value()
      guard let ms = Double(text), ms >= 7.5, ms <= 4000,
        Int((ms * 1000).rounded()) % 1250 == 0
      else {
        throw BenchError.usage(
          "--conn-interval \(text): give 7.5 to 4000 ms in steps of 1.25 (for example 7.5, 30, 40)")
      }
      intervalMicroseconds = Int((ms * 1000).rounded())
    case "--pdus-per-event":
      let text = try value()
      guard let n = Int(text), n >= 1, n <= 1000 else {
        throw BenchError.usage("--pdus-per-event \(text): give 1 to 1000 (default 6)")
      }
      pdusPerEvent = n
    case "--data-length":
      let text = try value()
      guard let n = Int(text), n == 27 || n == 251 else {
        throw BenchError.usage("--data-length \(text): give 27 or 251")
      }
      dataLength = n
    case "--phy":
      let text = try value().lowercased()
      guard text == "1m" || text == "2m" else {
        throw BenchError.usage("--phy \(text): give 1m or 2m")
      }
      phy = text
    case "--scan-interval-ms", "--scan-window-ms":
      let text = try value()
      guard let ms = Double(text), ms >= 2.5, ms <= 40_960 else {
        throw BenchError.usage("\(argument) \(text): give 2.5 to 40960 ms")
      }
      let micros = Int((ms * 1000).rounded())
      if argument == "--scan-interval-ms" {
        scanIntervalMicroseconds = micros
      } else {
        scanWindowMicroseconds = micros
      }
    default:
      return false
    }
    return true
  }

  /// Checks what one option alone cannot: scan windows come as a pair, the
  /// window no longer than the interval.
  func validate() throws {
    guard (scanIntervalMicroseconds == 0) == (scanWindowMicroseconds == 0),
      scanWindowMicroseconds <= scanIntervalMicroseconds
    else {
      throw BenchError.usage(
        "--scan-interval-ms and --scan-window-ms: give both, the window no longer than"
          + " the interval")
    }
  }

  /// What radio.py is given: nothing for the instant radio.
  var radioArguments: [String] {
    guard timed else { return [] }
    return [
      "--timing", "timed", "--conn-interval", String(Double(intervalMicroseconds) / 1000),
      "--pdus-per-event", String(pdusPerEvent), "--data-length", String(dataLength), "--phy", phy,
    ]
      + (scanIntervalMicroseconds == 0
        ? []
        : [
          "--scan-interval-ms", String(Double(scanIntervalMicroseconds) / 1000),
          "--scan-window-ms", String(Double(scanWindowMicroseconds) / 1000),
        ])
  }

  var summary: String {
    let interval = String(format: "%g", Double(intervalMicroseconds) / 1000)
    var text =
      "timed radio: connection interval \(interval) ms, \(pdusPerEvent) PDUs per event and"
      + " direction, data length \(dataLength), \(phy.uppercased()) PHY"
    if scanIntervalMicroseconds > 0 {
      text += String(
        format: ", scan windows of %g ms every %g ms", Double(scanWindowMicroseconds) / 1000,
        Double(scanIntervalMicroseconds) / 1000)
    }
    return text
  }

  /// Air time of a PDU with `payload` bytes, in microseconds.
  func airtime(_ payload: Int) -> Int {
    (payload + Self.pduOverhead) * (phy == "2m" ? 4 : 8)
  }

  /// How many PDUs of the full data length one direction can put in an
  /// event: the per-event limit, or fewer when they do not fit in the
  /// interval.
  var fullPDUsPerEvent: Int {
    var count = 1
    var used = airtime(dataLength)
    while count < pdusPerEvent,
      used + Self.interframeSpace + airtime(dataLength) <= intervalMicroseconds
    {
      used += Self.interframeSpace + airtime(dataLength)
      count += 1
    }
    return count
  }

  /// The airtime-limited throughput of one direction, in L2CAP bytes per
  /// second: full PDUs in every event.
  var airtimeLimitedBytesPerSecond: Double {
    Double(fullPDUsPerEvent * dataLength) * 1_000_000 / Double(intervalMicroseconds)
  }

  /// From the anchor of the first event they may use to the end of the last
  /// PDU, in microseconds: L2CAP packets of `lengths` bytes, all ready at
  /// that anchor, going one way over an otherwise idle link (at most
  /// `pdusPerEvent` PDUs per event, each ending within its event; events
  /// as `event(_:)` places them).
  func carryTime(_ lengths: [Int]) -> Int {
    var event = 0
    var used = 0  // air used in the current event, with the gaps
    var count = 0
    var end = 0
    for length in lengths {
      var left = max(0, length)
      repeat {
        let payload = min(left, dataLength)
        left -= payload
        let start = count == 0 ? 0 : used + Self.interframeSpace
        if count == pdusPerEvent || start + airtime(payload) > self.event(event).length {
          event += 1
          count = 0
          used = airtime(payload)
        } else {
          used = start + airtime(payload)
        }
        count += 1
        end = self.event(event).start + used
      } while left > 0
    }
    return end
  }
}
