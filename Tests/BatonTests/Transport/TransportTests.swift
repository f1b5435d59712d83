import Foundation
import Testing

@testable import BatonHCI
@testable import BatonRadio
@testable import BatonSystem

#if canImport(Glibc)
  import Glibc
#endif

@Suite("Transports")
struct TransportTests {
  @Test func controllerSpecsParse() throws {
    #expect(try ControllerSpec("hci0") == .exclusive(.kernel(index: 0)))
    #expect(try ControllerSpec("bluez") == .bluez(adapter: nil))
    #expect(try ControllerSpec("bluez:hci2") == .bluez(adapter: 2))
    #expect(try ControllerSpec("bluez:hci2").description == "bluez:hci2")
    #expect(ControllerSpec.defaultSpec == .bluez(adapter: nil))
    #expect(try ControllerSpec("hci12") == .exclusive(.kernel(index: 12)))
    #expect(
      try ControllerSpec("tcp:127.0.0.1:1234") == .exclusive(.tcp(host: "127.0.0.1", port: 1234)))
    #expect(try ControllerSpec("tcp:[::1]:9") == .exclusive(.tcp(host: "::1", port: 9)))
    #expect(try ControllerSpec("tcp:localhost:9").description == "tcp:localhost:9")
    #expect(
      try ControllerSpec("serial:/dev/ttyACM0")
        == .exclusive(.serial(path: "/dev/ttyACM0", baud: 1_000_000)))
    #expect(
      try ControllerSpec("serial:/dev/ttyUSB1:115200")
        == .exclusive(.serial(path: "/dev/ttyUSB1", baud: 115200)))
    for bad in [
      "", "hci", "hcix", "hci-1", "tcp:", "tcp:host", "tcp::80", "tcp:h:0", "tcp:h:70000",
      "serial:", "serial:ttyS0", "serial:/dev/ttyS0:fast", "serial:/dev/ttyS0:12345", "usb:0",
      "bluez:", "bluez:0", "bluez:hci", "bluez:hcix", "bluez:hci-1", "bluezhci0",
    ] {
      #expect(throws: ControllerSpecError.self, "\(bad)") { try ControllerSpec(bad) }
    }
    do {
      _ = try ControllerSpec("tcp:host")
    } catch {
      #expect(error.description.contains("tcp:HOST:PORT"))
    }
    // This kernel has no Bluetooth: a kernel adapter cannot be opened
    // (HCIUserChannelTransportTests checks the message).
    #expect(throws: (any Error).self) { _ = try HCITransportSpec.kernel(index: 0).open() }
  }

  @Test func framerCutsByteStreamsAnywhere() throws {
    let packets: [[UInt8]] = [
      HCIEvent.commandComplete(numCommandPackets: 1, opcode: 0x0C03, returnParameters: [0]).encoded,
      ACLPacket(handle: 1, boundary: .firstFlushable, data: Array(repeating: 5, count: 300))
        .encoded,
      HCICommand.reset.encoded,
      [0x05, 0x01, 0x00, 0x02, 0x00, 0xAA, 0xBB],
      [0x03, 0x01, 0x00, 0x01, 0x42],
    ]
    let stream = packets.flatMap { $0 }
    for chunk in [1, 2, 3, 7, 64, stream.count] {
      var framer = H4Framer()
      var out: [[UInt8]] = []
      var offset = 0
      while offset < stream.count {
        framer.append(stream[offset..<min(stream.count, offset + chunk)])
        offset += chunk
        while let packet = try framer.next() { out.append(packet) }
      }
      #expect(out == packets)
      #expect(framer.pendingByteCount == 0)
    }
    var framer = H4Framer()
    framer.append([0x09, 0x00])
    #expect(throws: TransportError.framing(type: 0x09)) { try framer.next() }
  }

  /// A serial transport through a pseudo-terminal pair: H4 both ways.
  @Test func serialTransportOverAPty() throws {
    // posix_openpt/grantpt/unlockpt/ptsname by hand (Swift does not import them):
    // open the multiplexer, unlock (TIOCSPTLCK), ask the number (TIOCGPTN).
    let master = open("/dev/ptmx", O_RDWR | O_NOCTTY)
    #expect(master >= 0)
    defer { close(master) }
    var unlock: Int32 = 0
    #expect(ioctl(master, 0x4004_5431, &unlock) == 0)
    var number: UInt32 = 0
    #expect(ioctl(master, 0x8004_5430, &number) == 0)
    let path = "/dev/pts/\(number)"
    let transport = try SerialTransport(path: path, baud: 1_000_000)
    defer { transport.close() }
    // Put the master side in raw mode too, so bytes pass unchanged.
    try SerialLine.configure(
      FileDescriptor(rawValue: master), baud: 1_000_000, hardwareFlowControl: false)
    let reset = HCICommand.reset.encoded
    try transport.send(reset)
    var got: [UInt8] = []
    while got.count < reset.count {
      var buffer = [UInt8](repeating: 0, count: 64)
      let n = read(master, &buffer, 64)
      #expect(n > 0)
      if n <= 0 { break }
      got += buffer[0..<n]
    }
    #expect(got == reset)
    let event = HCIEvent.commandComplete(
      numCommandPackets: 1, opcode: 0x0C03, returnParameters: [0]
    ).encoded
    for byte in event { _ = write(master, [byte], 1) }
    #expect(try transport.receive() == event)
    #expect(throws: TransportError.self) { _ = try SerialTransport(path: "/dev/does-not-exist") }
  }

  @Test func tcpTransportClosesCleanly() async throws {
    let radio = try SimulatedRadio(controllers: 1)
    defer { radio.stop() }
    let transport = try HCITransportSpec(radio.spec(0)).open()
    try transport.send(HCICommand.reset.encoded)
    let answer = try #require(try transport.receive())
    guard case .commandComplete(_, let opcode, let returned) = try HCIEvent.decode(answer) else {
      Issue.record("expected Command Complete")
      return
    }
    #expect(opcode == 0x0C03 && returned == [0])
    // close() from another thread ends a blocked receive().
    let done = Thread { transport.close() }
    done.start()
    #expect(try transport.receive() == nil)
    #expect(throws: TransportError.self) { try transport.send(HCICommand.reset.encoded) }
  }
}
