import Testing

@testable import BatonHandoff
@testable import BatonNotes
@testable import BatonStore
@testable import BatonSystem

/// Ordinary text that once stopped sync (issue 13, bug 2).
@Suite struct HandoffTitleTests {
  let key = GroupKey.generate()

  @Test func currentActivityWithAHundredAndFiftyFlagsSyncs() async throws {
    let a = try HandoffTestAgent("alice", key: key)
    let b = try HandoffTestAgent("bob", key: key)
    let flags = String(repeating: "\u{1F1EB}\u{1F1F7}", count: 150)  // 1,200 bytes
    for i in 0..<6 { await a.save("n\(i).md", "note \(i)\n") }
    await a.save("flags.md", flags + "\nvive la France\n")  // the current activity
    let (rb, ra) = await runSession(b, a)
    #expect(rb.succeeded && ra.succeeded)
    #expect(b.folder.contents == a.folder.contents && b.folder.paths.count == 7)
    // A third agent joining later, in either role, gets all seven.
    let c = try HandoffTestAgent("carol", key: key)
    let (rc, rb2) = await runSession(c, b)
    #expect(rc.succeeded && rb2.succeeded)
    #expect(c.folder.contents == a.folder.contents)
    let d = try HandoffTestAgent("dave", key: key)
    let (ra2, rd) = await runSession(a, d)
    #expect(ra2.succeeded && rd.succeeded)
    #expect(d.folder.contents == a.folder.contents)
  }

  /// A local note whose path is over the wire's 1024 bytes (the folder allows
  /// 4096) is not offered, instead of making every peer reject the INDEX.
  @Test func noteOverAWireLimitIsNotOfferedAndTheRestSyncs() async throws {
    let a = try HandoffTestAgent("alice", key: key)
    let b = try HandoffTestAgent("bob", key: key)
    let long = String(repeating: "deep/", count: 220) + "n.md"  // 1,104 bytes
    await a.save("ok.md", "fine")
    await a.save(long, "too deep for the wire")  // also the current activity
    let (rb, ra) = await runSession(b, a)
    #expect(rb.succeeded && ra.succeeded)
    #expect(b.folder.contents == ["ok.md": "fine"])
    let (ra2, rb2) = await runSession(a, b)
    #expect(ra2.succeeded && rb2.succeeded)
  }
}
