import BatonSystem

/// An agent's identity in version vectors: 64 bits derived from its device key
/// (`DevicePublicKey.deviceID`), which is made with its state database (and
/// made again when a damaged database is rebuilt).
public struct DeviceID: Hashable, Comparable, Sendable, CustomStringConvertible {
  public let rawValue: UInt64
  public init(rawValue: UInt64) { self.rawValue = rawValue }

  public static func < (a: DeviceID, b: DeviceID) -> Bool { a.rawValue < b.rawValue }
  /// 16 lower-case hex digits.
  public var description: String {
    let hex = String(rawValue, radix: 16)
    return String(repeating: "0", count: 16 - hex.count) + hex
  }
}

/// How two version vectors relate.
public enum VersionOrder: Sendable, Equatable {
  case equal
  /// The left side has seen everything the right side has, and more.
  case newer
  /// The right side has seen everything the left side has, and more.
  case older
  /// Each has seen something the other has not: concurrent edits.
  case concurrent
}

/// A note's version history, as in Syncthing: for each device that changed the
/// note, how many changes of it this version includes (PROTOCOL.md, "Versions").
///
/// Stored as (device, counter) pairs sorted by device, the first one inline
/// and the others in an array: almost every note's version names one device,
/// and an empty array costs no allocation, so an index of 100,000 notes
/// holds no heap block for its versions (a dictionary per version cost
/// about 100 bytes each).
public struct VersionVector: Hashable, Sendable, CustomStringConvertible {
  /// One device's counter; a counter of 0 in `first` means an empty vector.
  struct Pair: Hashable, Sendable {
    var device: DeviceID
    var counter: UInt64
  }
  private var first = Pair(device: DeviceID(rawValue: 0), counter: 0)
  /// The pairs after `first`, in ascending device order.
  private var rest: [Pair] = []

  /// Device -> counter; counters are always >= 1 (absent means 0).
  public init(_ counters: [DeviceID: UInt64] = [:]) {
    self.init(sorted: counters.filter { $0.value > 0 }.sorted { $0.key < $1.key }.map {
      Pair(device: $0.key, counter: $0.value)
    })
  }

  /// From pairs already in ascending device order, with no zero counter.
  private init(sorted pairs: [Pair]) {
    guard let head = pairs.first else { return }
    first = head
    rest = Array(pairs.dropFirst())
  }

  /// How many devices have a counter.
  public var deviceCount: Int { first.counter == 0 ? 0 : 1 + rest.count }

  /// The pairs in ascending device order.
  var pairs: [Pair] { first.counter == 0 ? [] : [first] + rest }

  /// The devices that have a counter.
  public var devices: [DeviceID] { pairs.map(\.device) }

  /// Device -> counter, as a dictionary.
  public var counters: [DeviceID: UInt64] {
    Dictionary(uniqueKeysWithValues: pairs.map { ($0.device, $0.counter) })
  }

  public subscript(device: DeviceID) -> UInt64 {
    if first.counter == 0 { return 0 }
    if first.device == device { return first.counter }
    for pair in rest where pair.device == device { return pair.counter }
    return 0
  }

  /// The most devices a vector may hold (PROTOCOL.md, "Limits").
  public static let maximumDevices = 4096

  /// This version plus one change by `device`, or nil when `device`'s counter
  /// is already `UInt64.max` (only a forged version gets there): no newer
  /// version can be expressed, and wrapping around would make it older.
  public func incremented(by device: DeviceID) -> VersionVector? {
    let (next, overflow) = self[device].addingReportingOverflow(1)
    guard !overflow else { return nil }
    var out = pairs.filter { $0.device != device }
    let at = out.firstIndex { $0.device > device } ?? out.count
    out.insert(Pair(device: device, counter: next), at: at)
    return VersionVector(sorted: out)
  }

  /// The least version that has seen both (element-wise maximum).
  public func merged(with other: VersionVector) -> VersionVector {
    var out: [Pair] = []
    Self.walk(self, other) { device, a, b in out.append(Pair(device: device, counter: max(a, b))) }
    return VersionVector(sorted: out)
  }

  /// Compares `self` with `other`.
  public func compare(_ other: VersionVector) -> VersionOrder {
    var selfAhead = false
    var otherAhead = false
    Self.walk(self, other) { _, a, b in
      if a > b { selfAhead = true }
      if b > a { otherAhead = true }
    }
    switch (selfAhead, otherAhead) {
    case (false, false): return .equal
    case (true, false): return .newer
    case (false, true): return .older
    case (true, true): return .concurrent
    }
  }

  /// Calls `body` for every device of either vector, in ascending order,
  /// with its counter in each (0 where absent).
  private static func walk(
    _ x: VersionVector, _ y: VersionVector, _ body: (DeviceID, UInt64, UInt64) -> Void
  ) {
    let (xn, yn) = (x.deviceCount, y.deviceCount)
    var i = 0
    var j = 0
    while i < xn || j < yn {
      let a = i < xn ? x.pair(i) : nil
      let b = j < yn ? y.pair(j) : nil
      if let a, let b, a.device == b.device {
        body(a.device, a.counter, b.counter)
        i += 1
        j += 1
      } else if let a, b.map({ a.device < $0.device }) ?? true {
        body(a.device, a.counter, 0)
        i += 1
      } else if let b {
        body(b.device, 0, b.counter)
        j += 1
      }
    }
  }

  /// The `i`th pair in device order (0 ..< deviceCount), without building
  /// the array `pairs` does: comparisons run for every entry a peer offers.
  private func pair(_ i: Int) -> Pair { i == 0 ? first : rest[i - 1] }

  /// Canonical encoding: `u16` count, then (`u64` device, `u64` counter) pairs,
  /// little-endian, sorted by device id, no zero counters.
  func encode(into writer: inout ByteWriter) {
    let sorted = pairs
    writer.u16(UInt16(clamping: sorted.count))
    for pair in sorted.prefix(Int(UInt16.max)) {
      writer.u64(pair.device.rawValue)
      writer.u64(pair.counter)
    }
  }

  package var encoded: [UInt8] {
    var w = ByteWriter()
    encode(into: &w)
    return w.bytes
  }

  /// Decodes the canonical form; rejects unsorted or duplicate devices and zero counters.
  static func decode(from reader: inout WireReader) throws(WireError) -> VersionVector {
    let count = Int(try reader.u16())
    guard count <= maximumDevices else {
      throw WireError("version vector with \(count) devices")
    }
    var pairs: [Pair] = []
    pairs.reserveCapacity(count)
    var previous: UInt64?
    for _ in 0..<count {
      let device = try reader.u64()
      let counter = try reader.u64()
      if let previous, device <= previous {
        throw WireError("version vector devices not strictly ascending")
      }
      guard counter > 0 else { throw WireError("version vector with a zero counter") }
      previous = device
      pairs.append(Pair(device: DeviceID(rawValue: device), counter: counter))
    }
    return VersionVector(sorted: pairs)
  }

  package static func decode(_ bytes: [UInt8]) throws(WireError) -> VersionVector {
    var reader = WireReader(bytes)
    let vector = try decode(from: &reader)
    try reader.expectEnd()
    return vector
  }

  /// `{device:counter, ...}` sorted by device.
  public var description: String {
    "{" + pairs.map { "\($0.device):\($0.counter)" }.joined(separator: ",") + "}"
  }
}
