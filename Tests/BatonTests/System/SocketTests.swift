import Foundation
import Testing

@testable import BatonSystem

#if canImport(Glibc)
  import Glibc
#endif

/// `Socket`'s wrappers for the calls the L2CAP and HCI sockets make, over a
/// UNIX socket (this kernel has no Bluetooth): each failure is an `Errno`.
@Suite struct SocketTests {
  static func address(_ path: String) -> sockaddr_un {
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { bytes in
      for (i, byte) in path.utf8.enumerated() { bytes[i] = byte }
    }
    return address
  }

  @Test func bindListenConnectAcceptAndOptions() throws {
    let dir = try TestEnvironment.temporaryDirectory("socket")
    defer { try? FileManager.default.removeItem(at: dir) }
    let path = dir.appendingPathComponent("s").path
    let stream = Int32(SOCK_STREAM.rawValue)
    let listener = try Socket.open(domain: AF_UNIX, type: stream, protocol: 0)
    defer { listener.closeIgnoringErrors() }
    try Socket.bind(listener, to: Self.address(path))
    #expect(throws: Errno(rawValue: EADDRINUSE)) {
      let other = try Socket.open(domain: AF_UNIX, type: stream, protocol: 0)
      defer { other.closeIgnoringErrors() }
      try Socket.bind(other, to: Self.address(path))
    }
    try Socket.listen(listener, backlog: 1)

    let client = try Socket.open(domain: AF_UNIX, type: stream, protocol: 0)
    defer { client.closeIgnoringErrors() }
    #expect(fcntl(client.rawValue, F_GETFD) & FD_CLOEXEC != 0)
    try Socket.connect(client, to: Self.address(path))
    #expect(Socket.pendingError(client) == nil)
    let (accepted, _) = try Socket.accept(listener, peer: sockaddr_un())
    defer { accepted.closeIgnoringErrors() }
    #expect(fcntl(accepted.rawValue, F_GETFD) & FD_CLOEXEC != 0)
    try client.writeAll([42])
    #expect(try accepted.read(upToCount: 4) == [42])

    try Socket.setOption(client, level: SOL_SOCKET, name: SO_KEEPALIVE, to: Int32(1))
    #expect(
      try Socket.option(client, level: SOL_SOCKET, name: SO_KEEPALIVE, initial: Int32(0)) == 1)
    #expect(throws: Errno.self) {
      try Socket.setOption(client, level: SOL_SOCKET, name: -1, to: Int32(1))
    }

    #expect(try client.setNonBlocking(true) == false)
    #expect(try client.setNonBlocking(false) == true)
  }

  @Test func connectingToNobodyIsRefusedOrMissing() throws {
    let dir = try TestEnvironment.temporaryDirectory("socket")
    defer { try? FileManager.default.removeItem(at: dir) }
    let client = try Socket.open(domain: AF_UNIX, type: Int32(SOCK_STREAM.rawValue), protocol: 0)
    defer { client.closeIgnoringErrors() }
    #expect(throws: Errno.noEntry) {
      try Socket.connect(client, to: Self.address(dir.appendingPathComponent("none").path))
    }
  }
}
