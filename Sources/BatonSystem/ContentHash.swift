import CSodium

/// Calls `sodium_init()` once per process before any libsodium function.
public enum Sodium {
  private static let initialized: Bool = sodium_init() >= 0
  public static func ensureInitialized() {
    precondition(initialized, "libsodium failed to initialise (sodium_init)")
  }
}

/// The BLAKE2b-256 digest of a note's bytes (libsodium `crypto_generichash`),
/// used for the note index, change detection and expected-version checks.
public struct ContentHash: Hashable, Sendable, CustomStringConvertible, Codable {
  public static let byteCount = 32
  public let bytes: [UInt8]

  public init?(bytes: [UInt8]) {
    guard bytes.count == ContentHash.byteCount else { return nil }
    self.bytes = bytes
  }

  public init<C: Collection>(of content: C) where C.Element == UInt8 {
    Sodium.ensureInitialized()
    let input = Array(content)
    var out = [UInt8](repeating: 0, count: ContentHash.byteCount)
    _ = crypto_generichash(&out, out.count, input, UInt64(input.count), nil, 0)
    bytes = out
  }

  /// Lower-case hex, 64 characters.
  public var description: String { hex }
  public var hex: String {
    let digits = Array("0123456789abcdef".utf8)
    var out = [UInt8]()
    out.reserveCapacity(64)
    for b in bytes {
      out.append(digits[Int(b >> 4)])
      out.append(digits[Int(b & 15)])
    }
    return String(decoding: out, as: UTF8.self)
  }
  /// The first 8 hex digits, for log lines.
  public var short: String { String(hex.prefix(8)) }
}
