import Foundation
import Testing

@testable import BatonAgent
@testable import BatonBlueZ
@testable import BatonHCI
@testable import BatonHandoff
@testable import BatonHost
@testable import BatonL2CAP
@testable import BatonRadio
@testable import BatonSystem

#if canImport(Glibc)
  import Glibc
#endif

/// The socket channel over a UNIX seqpacket pair (same message boundaries as
/// an L2CAP SEQPACKET socket; this kernel has no Bluetooth).
@Suite("L2CAPSocketChannel")
struct L2CAPSocketChannelTests {
  static let peer = BluetoothAddress("C0:11:22:33:44:55")!

  func pair(mtu: Int = 4096) throws -> (L2CAPSocketChannel, L2CAPSocketChannel) {
    var fds: [Int32] = [0, 0]
    guard
      socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds)
        == 0
    else { throw Errno.current }
    let a = try L2CAPSocketChannel(
      socket: FileDescriptor(rawValue: fds[0]), peerAddress: Self.peer, maximumMessageSize: mtu,
      receiveLimit: mtu)
    let b = try L2CAPSocketChannel(
      socket: FileDescriptor(rawValue: fds[1]), peerAddress: Self.peer, maximumMessageSize: mtu,
      receiveLimit: mtu)
    return (a, b)
  }

  @Test func messagesKeepTheirBoundariesBothWays() async throws {
    let (a, b) = try pair()
    let messages: [[UInt8]] = [[1], Array(repeating: 7, count: 4096), [], [1, 2, 3]].filter {
      !$0.isEmpty
    }
    for m in messages { try await a.send(m) }
    for m in messages { #expect(try await b.receive() == m) }
    try await b.send([9, 9])
    #expect(try await a.receive() == [9, 9])
    await #expect(throws: L2CAPError.self) { try await a.send(Array(repeating: 0, count: 4097)) }
    await a.close()
    #expect(try await b.receive() == nil)
    await #expect(throws: L2CAPError.self) { try await a.send([1]) }
    await b.close()
  }

  @Test func aBlockedReceiveEndsWhenClosed() async throws {
    let (a, b) = try pair()
    async let pending = a.receive()
    await a.close()
    #expect(try await pending == nil)
    await b.close()
  }

  /// More than the socket buffer and our inbox hold: the sender waits for
  /// the socket (POLLOUT), every message arrives whole and in order.
  @Test func moreThanTheBuffersHoldArrivesInOrder() async throws {
    let (a, b) = try pair(mtu: 65536)
    let count = 200
    let message = { (i: Int) in [UInt8(i & 0xFF)] + Array(repeating: UInt8(7), count: 60000) }
    let sender = Task {
      for i in 0..<count { try await a.send(message(i)) }
    }
    for i in 0..<count {
      let got = try #require(try await b.receive())
      #expect(got.count == 60001 && got[0] == UInt8(i & 0xFF))
    }
    try await sender.value
    await a.close()
    await b.close()
  }
}
