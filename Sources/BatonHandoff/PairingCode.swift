import BatonSystem
import CSodium

/// What `baton pair` prints on a member and `baton pair CODE` takes on the
/// new machine: `NN-NNN-NNN`, eight decimal digits (PROTOCOL.md section 14).
///
/// The first two digits are the public *slot* (0...99): the member shows it
/// in its pairing advertisement so that the newcomer connects to the right
/// member, and it is the CPace channel identifier's last byte; it says
/// nothing about the secret. The other six are the *secret* (the CPace
/// password, sent nowhere): one online guess per code is a chance of one in
/// a million, and a code allows one attempt.
///
/// Digits rather than words: they read aloud in any language the users
/// share, need no word list on both sides (nor its version), and a typed
/// digit has no spelling to get wrong; eight digits in three groups are as
/// long as a telephone number.
public struct PairingCode: Hashable, Sendable, CustomStringConvertible {
  public static let slotCount: UInt32 = 100
  public static let secretCount: UInt32 = 1_000_000
  /// The slot, 0...99: public.
  public let slot: UInt8
  /// The secret, 0...999999: the CPace password as six ASCII digits.
  public let secret: UInt32

  /// nil unless `slot` < 100 and `secret` < 1,000,000.
  public init?(slot: UInt8, secret: UInt32) {
    guard UInt32(slot) < Self.slotCount, secret < Self.secretCount else { return nil }
    self.slot = slot
    self.secret = secret
  }

  /// A new code, each part uniform from libsodium (`randombytes_uniform`).
  public static func generate() -> PairingCode {
    Sodium.ensureInitialized()
    let slot = UInt8(truncatingIfNeeded: randombytes_uniform(slotCount))
    let secret = randombytes_uniform(secretCount)
    return PairingCode(slot: slot, secret: secret)!
  }

  /// The six secret digits in ASCII: CPace's `PRS`.
  public var password: [UInt8] { Array(Self.digits(secret, count: 6).utf8) }

  /// `NN-NNN-NNN`, for example `07-042-913`.
  public var description: String {
    let s = Self.digits(secret, count: 6)
    return Self.digits(UInt32(slot), count: 2) + "-" + s.prefix(3) + "-" + s.suffix(3)
  }

  private static func digits(_ value: UInt32, count: Int) -> String {
    let text = String(value)
    return String(repeating: "0", count: max(0, count - text.count)) + text
  }

  /// Why a typed code is not one.
  public struct ParseError: Error, CustomStringConvertible, Equatable, Sendable {
    public let input: String
    public let problem: String
    public var description: String {
      "'\(shown)' is not a pairing code: \(problem); expected eight digits as NN-NNN-NNN"
        + " (for example 07-042-913), as 'baton pair' printed it on the other machine"
    }

    /// The input as quoted: at most 40 characters, control characters
    /// (a terminal's escape sequences) written as `\u{..}`.
    var shown: String {
      let cut = input.count > 40 ? String(input.prefix(40)) + "..." : input
      return String(
        cut.unicodeScalars.map {
          $0.properties.generalCategory == .control
            ? "\\u{\(String($0.value, radix: 16))}" : String($0)
        }.joined())
    }
  }

  /// Reads what a user typed: the eight digits, with any spaces and dashes
  /// between or around them (`07-042-913`, `07 042 913`, `07042913`,
  /// `07--042-913 `); anything else is refused with the input named.
  public init(parsing input: String) throws(ParseError) {
    var digits: [UInt32] = []
    for scalar in input.unicodeScalars {
      switch scalar {
      case "0"..."9": digits.append(scalar.value &- 48)
      case " ", "-", "\t": continue
      default:
        throw ParseError(input: input, problem: "'\(scalar)' is neither a digit nor a dash")
      }
      if digits.count > 8 { break }
    }
    guard digits.count == 8 else {
      throw ParseError(
        input: input,
        problem: digits.count > 8
          ? "it has more than eight digits" : "it has \(digits.count) digits")
    }
    let slot = digits[0] &* 10 &+ digits[1]
    let secret = digits[2...].reduce(UInt32(0)) { $0 &* 10 &+ $1 }
    self.init(slot: UInt8(slot), secret: secret)!
  }
}
