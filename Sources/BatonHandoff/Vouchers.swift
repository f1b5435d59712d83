import BatonSystem

/// The signatures by which devices vouch for their counters in one note's
/// version (PROTOCOL.md section 7.5): device d's *voucher* for counter c of a
/// note is d's Ed25519 signature, by its device key, over
/// `"baton-vouch-1" || string type || string path || u64 d || u64 c`.
///
/// Only d can make it, so a key holder cannot raise another device's counter
/// for a note: a raise must carry the voucher of the device raised. A voucher
/// travels with its counter: a merge keeps the voucher of each larger counter.
///
/// Kept as one byte array of `(u64 device || signature[64])` records in
/// ascending device order, so a note's vouchers cost one heap block, and a
/// note with none costs nothing. Equality is that of the records.
public struct Vouchers: Hashable, Sendable {
  /// `u64` device, little-endian, then the 64-byte signature.
  private var records: [UInt8] = []
  static let recordBytes = 8 + DevicePublicKey.signatureBytes
  /// The most vouchers one entry carries on the wire (PROTOCOL.md section
  /// 9): two entries of 1024 devices each with this many still fit MOVED's
  /// 64 KiB.
  public static let maximumCount = 128

  public init() {}

  /// How many devices vouch.
  public var count: Int { records.count / Self.recordBytes }
  public var isEmpty: Bool { records.isEmpty }

  /// The devices that vouch, ascending.
  public var devices: [DeviceID] { (0..<count).map(device(at:)) }

  private func device(at i: Int) -> DeviceID {
    var value: UInt64 = 0
    for byte in records[(i * Self.recordBytes)..<(i * Self.recordBytes + 8)].reversed() {
      value = value << 8 | UInt64(byte)
    }
    return DeviceID(rawValue: value)
  }

  private func place(of device: DeviceID) -> (found: Bool, index: Int) {
    var (low, high) = (0, count)
    while low < high {
      let mid = (low + high) / 2
      let d = self.device(at: mid)
      if d == device { return (true, mid) }
      if d < device { low = mid + 1 } else { high = mid }
    }
    return (false, low)
  }

  /// `device`'s signature, or nil when it does not vouch here.
  public subscript(device: DeviceID) -> [UInt8]? {
    let (found, i) = place(of: device)
    guard found else { return nil }
    let start = i * Self.recordBytes + 8
    return Array(records[start..<(start + DevicePublicKey.signatureBytes)])
  }

  /// Sets (or, with nil, removes) `device`'s signature.
  public mutating func set(_ signature: [UInt8]?, for device: DeviceID) {
    let (found, i) = place(of: device)
    let start = i * Self.recordBytes
    if let signature {
      precondition(signature.count == DevicePublicKey.signatureBytes)
      var w = ByteWriter()
      w.u64(device.rawValue)
      w.raw(signature)
      if found {
        records.replaceSubrange(start..<(start + Self.recordBytes), with: w.bytes)
      } else {
        records.insert(contentsOf: w.bytes, at: start)
      }
    } else if found {
      records.removeSubrange(start..<(start + Self.recordBytes))
    }
  }

  /// The bytes device `device` signs to vouch for `counter` changes of the
  /// note `path` of folder type `type`.
  public static func message(type: String, path: String, device: DeviceID, counter: UInt64)
    -> [UInt8]
  {
    var w = ByteWriter()
    w.raw(Array("baton-vouch-1".utf8))
    w.string(type)
    w.string(path)
    w.u64(device.rawValue)
    w.u64(counter)
    return w.bytes
  }

  /// These vouchers with `key`'s own for its counter in `version`.
  public func signed(by key: DeviceKey, type: String, path: String, version: VersionVector)
    -> Vouchers
  {
    let device = key.deviceID
    var out = self
    let counter = version[device]
    guard counter > 0 else { return out }
    out.set(
      key.sign(Self.message(type: type, path: path, device: device, counter: counter)),
      for: device)
    return out
  }

  /// Whether `device`'s voucher here is a valid signature by `key` for
  /// `counter` changes of the note.
  public func verifies(
    _ device: DeviceID, counter: UInt64, key: DevicePublicKey, type: String, path: String
  ) -> Bool {
    guard key.deviceID == device, let signature = self[device] else { return false }
    return key.verifies(
      signature, of: Self.message(type: type, path: path, device: device, counter: counter))
  }

  /// The vouchers of merge(`a`, `b`): for each device, the voucher of the
  /// side whose counter is larger; of `a` first when they are equal.
  public static func merged(
    _ a: Vouchers, of av: VersionVector, _ b: Vouchers, of bv: VersionVector
  ) -> Vouchers {
    var out = Vouchers()
    for device in Set(a.devices).union(b.devices).sorted() {
      let (ca, cb) = (av[device], bv[device])
      let pick = ca >= cb ? (a[device] ?? (ca == cb ? b[device] : nil)) : b[device]
      out.set(pick, for: device)
    }
    return out
  }

  /// Only the vouchers of devices with a counter in `version` (a voucher is
  /// for the counter it was made with; merges never lower one).
  package func restricted(to version: VersionVector) -> Vouchers {
    var out = self
    for device in devices where version[device] == 0 { out.set(nil, for: device) }
    return out
  }

  /// `u16 k || k × (u64 device || signature[64])`, devices ascending; at
  /// most `maximumCount` (the first ones by device).
  func encode(into w: inout ByteWriter) {
    let n = min(count, Self.maximumCount)
    w.u16(UInt16(n))
    w.raw(Array(records[0..<(n * Self.recordBytes)]))
  }

  var encodedSize: Int { 2 + min(count, Self.maximumCount) * Self.recordBytes }

  /// Decodes the vouchers of `version`: devices strictly ascending, each with
  /// a counter in `version`, at most `maximumCount`.
  static func decode(from r: inout WireReader, for version: VersionVector) throws(WireError)
    -> Vouchers
  {
    let n = Int(try r.u16())
    guard n <= maximumCount, n <= version.deviceCount else {
      throw WireError("\(n) vouchers for a version of \(version.deviceCount) devices")
    }
    var out = Vouchers()
    out.records.reserveCapacity(n * recordBytes)
    var previous: UInt64?
    for _ in 0..<n {
      let device = try r.u64()
      if let previous, device <= previous {
        throw WireError("voucher devices not strictly ascending")
      }
      guard version[DeviceID(rawValue: device)] > 0 else {
        throw WireError("voucher of device \(DeviceID(rawValue: device)), not in the version")
      }
      previous = device
      var w = ByteWriter()
      w.u64(device)
      out.records += w.bytes
      out.records += try r.raw(DevicePublicKey.signatureBytes)
    }
    return out
  }

  /// As stored: the wire form without its count (nil when empty).
  package var storedBytes: [UInt8]? { records.isEmpty ? nil : records }

  /// From `storedBytes`; nil when they are not whole records.
  package init?(storedBytes bytes: [UInt8]) {
    guard bytes.count % Self.recordBytes == 0 else { return nil }
    records = bytes
  }
}
