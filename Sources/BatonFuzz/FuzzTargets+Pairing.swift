import BatonHandoff

/// The pairing exchange (PROTOCOL.md section 14): every state of both
/// machines is fed the input, since each state decodes other messages.
extension FuzzTargets {
  static let pairingCode = PairingCode(slot: 7, secret: 42913)!
  static let pairingMember = PairingIdentity(
    name: "alice", key: DeviceKey(seed: [UInt8](repeating: 1, count: 32))!.publicKey)
  static let pairingNewcomer = PairingIdentity(
    name: "carol", key: DeviceKey(seed: [UInt8](repeating: 2, count: 32))!.publicKey)

  /// Two machines of one exchange advanced to each step; `messages` are
  /// what they sent (P1 to P5).
  struct PairingRun {
    var member = PairingMember(code: FuzzTargets.pairingCode, me: FuzzTargets.pairingMember)
    var newcomer: PairingNewcomer
    var messages: [[UInt8]] = []

    init?() {
      guard
        let n = try? PairingNewcomer(code: FuzzTargets.pairingCode, me: FuzzTargets.pairingNewcomer)
      else { return nil }
      newcomer = n
      messages.append(n.hello)
    }

    /// One step further; false when the exchange is over.
    mutating func advance() -> Bool {
      let last = messages[messages.count - 1]
      let step: PairingStep
      switch messages.count {
      case 1, 3, 5: step = member.receive(last)
      default: step = newcomer.receive(last)
      }
      switch step {
      case .send(let out) where !out.isEmpty: messages += out
      case .enrol:
        guard
          case .send(let out) = member.enrol(Array(repeating: 0x5A, count: 60), messageSize: 200)
        else { return false }
        messages += out
      case .finished(let out, _) where !out.isEmpty: messages += out
      default: return false
      }
      return true
    }
  }

  static let pairingSeeds: [[UInt8]] = {
    guard var run = PairingRun() else { return [] }
    while run.messages.count < 5, run.advance() {}
    return run.messages
  }()

  static let pairing = FuzzTarget(name: "pairing", seeds: pairingSeeds) { input in
    guard var run = PairingRun() else { return }
    // The member awaiting P1, P3, P5; the newcomer awaiting P2, P4.
    for _ in 0..<5 {
      var member = run.member
      _ = member.receive(input)
      if run.messages.count <= 2 {
        // Awaiting P2, a copy would share (and spend) the run's CPace value.
        var fresh = try? PairingNewcomer(code: pairingCode, me: pairingNewcomer)
        _ = fresh?.receive(input)
      } else {
        var newcomer = run.newcomer
        _ = newcomer.receive(input)
      }
      _ = "\(PairingError.malformed(step: "P1", reason: "fuzz", .member))"
      guard run.advance() else { break }
    }
    _ = try? PairingCode(parsing: String(decoding: input, as: UTF8.self))
  }
}
