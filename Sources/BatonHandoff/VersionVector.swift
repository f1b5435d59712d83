import BatonSystem

/// An agent's identity in version vectors: 64 random bits chosen when its state
/// database is created (and chosen again when a damaged database is rebuilt).
public struct DeviceID: Hashable, Comparable, Sendable, CustomStringConvertible {
  public let rawValue: UInt64
  public init(rawValue: UInt64) { self.rawValue = rawValue }

  /// A new random id (libsodium `randombytes_buf`); never zero.
  public static func random() -> DeviceID {
    while true {
      let bytes = HandoffCrypto.random(8)
      let value = bytes.reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
      if value != 0 { return DeviceID(rawValue: value) }
    }
  }

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
public struct VersionVector: Hashable, Sendable, CustomStringConvertible {
  /// Device -> counter; counters are always >= 1 (absent means 0).
  public private(set) var counters: [DeviceID: UInt64]

  public init(_ counters: [DeviceID: UInt64] = [:]) {
    self.counters = counters.filter { $0.value > 0 }
  }

  public subscript(device: DeviceID) -> UInt64 { counters[device] ?? 0 }

  /// The most devices a vector may hold (PROTOCOL.md, "Limits").
  public static let maximumDevices = 4096

  /// This version plus one change by `device`, or nil when `device`'s counter
  /// is already `UInt64.max` (only a forged version gets there): no newer
  /// version can be expressed, and wrapping around would make it older.
  public func incremented(by device: DeviceID) -> VersionVector? {
    let (next, overflow) = self[device].addingReportingOverflow(1)
    guard !overflow else { return nil }
    var copy = self
    copy.counters[device] = next
    return copy
  }

  /// The least version that has seen both (element-wise maximum).
  public func merged(with other: VersionVector) -> VersionVector {
    VersionVector(counters.merging(other.counters) { max($0, $1) })
  }

  /// Compares `self` with `other`.
  public func compare(_ other: VersionVector) -> VersionOrder {
    var selfAhead = false
    var otherAhead = false
    for device in Set(counters.keys).union(other.counters.keys) {
      let a = self[device]
      let b = other[device]
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

  /// Canonical encoding: `u16` count, then (`u64` device, `u64` counter) pairs,
  /// little-endian, sorted by device id, no zero counters.
  func encode(into writer: inout ByteWriter) {
    let sorted = counters.sorted { $0.key < $1.key }
    writer.u16(UInt16(clamping: sorted.count))
    for (device, counter) in sorted.prefix(Int(UInt16.max)) {
      writer.u64(device.rawValue)
      writer.u64(counter)
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
    var counters: [DeviceID: UInt64] = [:]
    var previous: UInt64?
    for _ in 0..<count {
      let device = try reader.u64()
      let counter = try reader.u64()
      if let previous, device <= previous {
        throw WireError("version vector devices not strictly ascending")
      }
      guard counter > 0 else { throw WireError("version vector with a zero counter") }
      previous = device
      counters[DeviceID(rawValue: device)] = counter
    }
    return VersionVector(counters)
  }

  package static func decode(_ bytes: [UInt8]) throws(WireError) -> VersionVector {
    var reader = WireReader(bytes)
    let vector = try decode(from: &reader)
    try reader.expectEnd()
    return vector
  }

  /// `{device:counter, ...}` sorted by device.
  public var description: String {
    "{" + counters.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }.joined(separator: ",")
      + "}"
  }
}
