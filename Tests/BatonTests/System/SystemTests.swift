import Foundation
import Testing

@testable import BatonHandoff
@testable import BatonSystem

@Suite struct ContentHashTests {
  @Test func knownVector() {
    // BLAKE2b-256 of the empty input (RFC 7693 parameters, 32-byte output).
    #expect(
      ContentHash(of: [UInt8]()).hex
        == "0e5751c026e543b2e8ab2eb06099daa1d1e5df47778f7787faab45cdf12fe3a8")
    #expect(ContentHash(of: Array("a".utf8)) != ContentHash(of: Array("b".utf8)))
  }
}

@Suite struct GroupKeyTests {
  @Test func roundTripsThroughItsFileText() throws {
    let key = GroupKey.generate()
    #expect(try GroupKey(parsing: key.fileText, path: "k") == key)
    #expect(GroupKey.generate() != key)
  }

  @Test(arguments: ["", "# only a comment\n", "baton-key-1:abc\n", "nonsense\n"])
  func rejectsMalformedText(_ text: String) {
    #expect(throws: GroupKey.LoadError.self) { try GroupKey(parsing: text, path: "k") }
  }

  @Test func refusesAFileOthersCanRead() throws {
    let dir = try TestEnvironment.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: dir) }
    let path = dir.appendingPathComponent("key").path
    try GroupKey.generate().fileText.write(toFile: path, atomically: false, encoding: .utf8)
    chmod(path, 0o644)
    #expect(throws: GroupKey.LoadError.tooOpen(path: path, mode: 0o100644)) {
      try GroupKey(contentsOfFile: path)
    }
    chmod(path, 0o600)
    _ = try GroupKey(contentsOfFile: path)
  }

  /// A key file in a directory others may write: they could rename it
  /// away and put their key in its place. A sticky one (like /tmp) is not
  /// refused, as others may not replace a file there.
  @Test func refusesAKeyInADirectoryOthersCanWrite() throws {
    let dir = try TestEnvironment.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: dir) }
    let path = dir.appendingPathComponent("key").path
    try GroupKey.generate().fileText.write(toFile: path, atomically: false, encoding: .utf8)
    chmod(path, 0o600)
    chmod(dir.path, 0o777)
    #expect {
      try GroupKey(contentsOfFile: path)
    } throws: { error in
      "\(error)" == "key file \(path): its directory \(dir.path), where the key could be"
        + " replaced: it is writable by its group and others (mode 777); run 'chmod go-w \(dir.path)'"
    }
    chmod(dir.path, 0o1777)
    _ = try GroupKey(contentsOfFile: path)
    chmod(dir.path, 0o755)
    _ = try GroupKey(contentsOfFile: path)
  }

  /// A key file of another user's, who could replace the group's key.
  @Test(.enabled(if: getuid() == 0, "giving a file to another user needs root"))
  func refusesAFileOfAnotherUser() throws {
    let dir = try TestEnvironment.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: dir) }
    let path = dir.appendingPathComponent("key").path
    try GroupKey.generate().fileText.write(toFile: path, atomically: false, encoding: .utf8)
    chmod(path, 0o600)
    #expect(chown(path, 65534, 65534) == 0)
    #expect {
      try GroupKey(contentsOfFile: path)
    } throws: { error in
      "\(error)".contains("it belongs to user id 65534, not to you (0)")
    }
  }
}

@Suite struct SimulatedRadioTests {
  @Test func startsControllersOnTCPPorts() throws {
    let radio = try SimulatedRadio(controllers: 2)
    defer { radio.stop() }
    #expect(radio.ports.count == 2)
    #expect(radio.ports[0] != radio.ports[1])
  }
}
