import Testing

@testable import BatonHandoff

/// Three agents edit the same notes and sync in overlapping sessions; at the end
/// every folder is the same and no agent's final edit is lost.
@Suite struct HandoffConvergenceTests {
  @Test(arguments: Array(UInt64(1)...6))
  func threeAgentsConverge(seed: UInt64) async throws {
    var random = SplitMix64(seed: seed)
    let key = GroupKey.generate()
    let agents = try ["alice", "bob", "carol"].map { try HandoffTestAgent($0, key: key) }
    let paths = ["a.md", "b.md", "dir/c.md"]
    var lastRound: [String] = []
    for round in 0..<6 {
      lastRound = []
      for agent in agents {
        for path in paths where random.next() % 2 == 0 {
          let text = "\(agent.name) round \(round) \(path) \(random.next() % 1000)"
          await agent.save(path, text)
          lastRound.append(text)
        }
      }
      // All three pairs at once, in both roles, overlapping.
      async let ab = runSession(agents[0], agents[1])
      async let bc = runSession(agents[1], agents[2])
      async let ca = runSession(agents[2], agents[0])
      _ = await (ab, bc, ca)
    }
    for _ in 0..<2 {
      _ = await runSession(agents[0], agents[1])
      _ = await runSession(agents[1], agents[2])
      _ = await runSession(agents[2], agents[0])
    }
    let reference = agents[0].folder.contents
    for agent in agents {
      #expect(agent.folder.contents == reference, "\(agent.name) differs")
    }
    let texts = Set(reference.values)
    for text in lastRound {
      #expect(texts.contains(text), "lost: \(text)")
    }
    // Settled: the beacons agree, so nobody would connect again.
    let digests = await [
      agents[0].engine.beaconContent().indexDigest, agents[1].engine.beaconContent().indexDigest,
      agents[2].engine.beaconContent().indexDigest,
    ]
    #expect(Set(digests).count == 1)
  }
}
