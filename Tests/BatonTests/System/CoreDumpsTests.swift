import Testing

@testable import BatonSystem

/// The agent keeps its keys out of core files (issue 31). The test turns
/// this test process non-dumpable too, which nothing else here needs.
@Suite struct CoreDumpsTests {
  @Test func disablingMakesTheProcessNotDumpable() throws {
    try CoreDumps.disable()
    #expect(!CoreDumps.enabled)
  }
}
