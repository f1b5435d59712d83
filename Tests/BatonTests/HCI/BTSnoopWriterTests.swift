import Foundation
import Testing

@testable import BatonHCI

#if canImport(Glibc)
  import Glibc
#endif

/// The HCI log's file: created 0600 or truncated, never through a
/// symbolic link (issue 31: `hci-log` followed one and truncated its
/// target) and never a FIFO or device.
@Suite struct BTSnoopWriterTests {
  @Test func createsOrTruncatesAFileAndRefusesLinksAndSpecialFiles() throws {
    let dir = try TestEnvironment.temporaryDirectory("baton-snoop")
    defer { try? FileManager.default.removeItem(at: dir) }
    let log = dir.appendingPathComponent("hci.log").path
    try "old contents, longer than a header".write(toFile: log, atomically: false, encoding: .utf8)
    _ = try BTSnoopWriter(path: log)
    let header = try Data(contentsOf: URL(fileURLWithPath: log))
    #expect(header.count == 16 && header.prefix(7) == Data("btsnoop".utf8))

    let victim = dir.appendingPathComponent("precious").path
    try "keep me".write(toFile: victim, atomically: false, encoding: .utf8)
    let link = dir.appendingPathComponent("link.log").path
    #expect(symlink(victim, link) == 0)
    #expect {
      _ = try BTSnoopWriter(path: link)
    } throws: { error in
      "\(error)".contains("it is a symbolic link, which the log does not follow")
    }
    #expect(try String(contentsOfFile: victim, encoding: .utf8) == "keep me")

    let fifo = dir.appendingPathComponent("fifo").path
    #expect(mkfifo(fifo, 0o600) == 0)
    #expect {
      _ = try BTSnoopWriter(path: fifo)
    } throws: { error in
      "\(error)".contains("it is not a regular file")
    }
  }
}
