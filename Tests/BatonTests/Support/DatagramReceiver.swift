import Foundation
import Testing

/// A `SOCK_DGRAM` socket bound to a path, or to "@name" in Linux's abstract
/// namespace, standing in for systemd's notification socket. A receive gives
/// up after 10 s and returns "".
final class DatagramReceiver {
  let descriptor: Int32

  init(_ address: String) {
    descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
    #expect(descriptor >= 0)
    var bytes = Array(address.utf8)
    var length = socklen_t(MemoryLayout<sockaddr_un>.size)
    if bytes.first == UInt8(ascii: "@") {
      bytes[0] = 0
      length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count)
    }
    var name = sockaddr_un()
    name.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &name.sun_path) { raw in
      for (index, byte) in bytes.enumerated() { raw[index] = byte }
    }
    let bound = withUnsafePointer(to: &name) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
    }
    #expect(bound == 0, "bind \(address): errno \(errno)")
    var timeout = timeval(tv_sec: 10, tv_usec: 0)
    setsockopt(
      descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
  }

  deinit { close(descriptor) }

  /// The next datagram as text.
  func receive() -> String {
    var buffer = [UInt8](repeating: 0, count: 4096)
    let count = recv(descriptor, &buffer, buffer.count, 0)
    return count > 0 ? String(decoding: buffer[..<count], as: UTF8.self) : ""
  }
}
