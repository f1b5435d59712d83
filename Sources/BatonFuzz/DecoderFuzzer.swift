import FoundationEssentials
import BatonAgent
import BatonHCI
import BatonHandoff
import BatonHost
import BatonL2CAP
import BatonNotes
import BatonSystem

/// Generated and mutated inputs for every decoder that takes outside bytes
/// (issue 13, "Fuzzing at scale"). Each target is seeded from valid encodings;
/// each input is a seed mutated (bytes flipped, set to extremes, truncated,
/// extended, spliced with another seed, lengths and counts made extreme) or
/// random bytes. `baton-bench fuzz` runs one target per child process so that
/// a trap is caught and reported with its input (see `run`'s `record`).
public struct FuzzTarget: Sendable {
  public let name: String
  public let seeds: [[UInt8]]
  let body: @Sendable ([UInt8]) -> Void

  /// Decodes `input` the way the product does; returns normally whatever the
  /// outcome (a thrown error is a fine outcome, a trap is a crash).
  public func decode(_ input: [UInt8]) { body(input) }
}

/// A small seeded generator (SplitMix64), so that a run is reproducible.
public struct FuzzRandom: RandomNumberGenerator, Sendable {
  var state: UInt64
  public init(seed: UInt64) { state = seed }
  public mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
  mutating func below(_ n: Int) -> Int { n <= 1 ? 0 : Int(next() % UInt64(n)) }
}

public enum DecoderFuzzer {
  /// Every target, in a fixed order.
  public static var targets: [FuzzTarget] { FuzzTargets.all }

  public static func target(named name: String) -> FuzzTarget? {
    targets.first { $0.name == name }
  }

  /// Runs `count` inputs through `target`. Before each input, `record` (if
  /// given) receives it, so that a caller can keep the last one where it
  /// survives a trap (a shared memory mapping of a file). Returns the seconds
  /// taken.
  public static func run(
    _ target: FuzzTarget, count: Int, seed: UInt64,
    record: ((UnsafeRawBufferPointer) -> Void)? = nil
  ) -> Double {
    var rng = FuzzRandom(seed: seed)
    for c in target.name.utf8 { rng.state = rng.state &* 31 &+ UInt64(c) }
    let start = ContinuousClock.now
    for i in 0..<count {
      let input = i < target.seeds.count ? target.seeds[i] : mutate(target.seeds, &rng)
      if let record { input.withUnsafeBytes { record($0) } }
      target.decode(input)
    }
    return (ContinuousClock.now - start).secondsValue
  }

  /// One input from the seeds.
  static func mutate(_ seeds: [[UInt8]], _ rng: inout FuzzRandom) -> [UInt8] {
    var b = seeds[rng.below(seeds.count)]
    if rng.below(20) == 0 {
      return (0..<rng.below(300)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
    }
    let rounds = 1 + rng.below(4)
    for _ in 0..<rounds {
      switch rng.below(10) {
      case 0, 1:  // flip bits
        if !b.isEmpty { b[rng.below(b.count)] ^= UInt8(1) << UInt8(rng.below(8)) }
      case 2:  // a random or extreme byte
        if !b.isEmpty {
          let extremes: [UInt8] = [0, 1, 0x7F, 0x80, 0xFE, 0xFF, UInt8(truncatingIfNeeded: rng.next())]
          b[rng.below(b.count)] = extremes[rng.below(extremes.count)]
        }
      case 3:  // truncate
        if !b.isEmpty { b.removeLast(1 + rng.below(b.count)) }
      case 4:  // extend
        let n = rng.below(4) == 0 ? rng.below(3000) : 1 + rng.below(16)
        let byte = UInt8(truncatingIfNeeded: rng.next())
        b += rng.below(2) == 0
          ? [UInt8](repeating: byte, count: n)
          : (0..<n).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
      case 5:  // splice with another seed
        let other = seeds[rng.below(seeds.count)]
        let cut = rng.below(b.count + 1)
        let from = rng.below(other.count + 1)
        b = Array(b[..<cut]) + Array(other[from...])
      case 6, 7:  // an extreme length or count field (u8, u16, u32 or u64, either order)
        guard !b.isEmpty else { break }
        let widths = [1, 2, 4, 8]
        let width = widths[rng.below(widths.count)]
        let at = rng.below(b.count)
        let values: [UInt64] = [0, 1, 0xFF, 0xFFFF, 0xFFFF_FFFF, .max, .max - 1, 1 << 31, 1 << 63,
          UInt64(rng.below(4096))]
        let v = values[rng.below(values.count)]
        let bigEndian = rng.below(2) == 0
        for k in 0..<width where at + k < b.count {
          let shift = UInt64(bigEndian ? (width - 1 - k) * 8 : k * 8)
          b[at + k] = UInt8(truncatingIfNeeded: v >> shift)
        }
      case 8:  // insert or delete a chunk
        if rng.below(2) == 0, !b.isEmpty {
          let at = rng.below(b.count)
          b.removeSubrange(at..<min(b.count, at + 1 + rng.below(8)))
        } else {
          let at = rng.below(b.count + 1)
          b.insert(contentsOf: (0..<(1 + rng.below(8))).map { _ in UInt8(truncatingIfNeeded: rng.next()) }, at: at)
        }
      default:  // duplicate a chunk (repeated records)
        guard !b.isEmpty else { break }
        let at = rng.below(b.count)
        let chunk = Array(b[at..<min(b.count, at + 1 + rng.below(64))])
        for _ in 0..<(1 + rng.below(8)) { b.insert(contentsOf: chunk, at: at) }
      }
    }
    return b
  }
}
