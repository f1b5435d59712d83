// hci-probe: drives BatonHCI's HCIUserChannelTransport inside the VM (test
// infrastructure for Tests/VM/run.sh). Tests/VM/run.sh compiles it together
// with the transport's own source files, so the guest runs exactly baton's
// code for the kernel path: libbluetooth's lookup, the user channel bind,
// whole-packet send and receive, close.
//
//   hci-probe list
//   hci-probe open N                  reset + read BD_ADDR, then close
//   hci-probe until-gone N            receive() returns nil once the adapter is removed
//   hci-probe close-wakes N           close() wakes a receive() blocked on another thread
//   hci-probe advertise N SECONDS NAME
//   hci-probe scan N SECONDS NAME     exit 0 once an advertisement holding NAME is heard
//   hci-probe connect N SECONDS NAME  connect to NAME, exchange ATT MTU over ACL, disconnect
//   hci-probe peripheral N SECONDS    a device a central auto-connects to (a stand-in
//                                     for a mouse), driven by lines on stdin (below)
//
// Exit status: 0 success, 1 the transport's error (its message on stderr),
// 2 usage, 3 the expected traffic did not happen.

#if canImport(Glibc)
  import Glibc
#endif

func say(_ text: String) {
  let bytes = Array((text + "\n").utf8)
  bytes.withUnsafeBytes { _ = write(1, $0.baseAddress, $0.count) }
}

func complain(_ text: String) {
  let bytes = Array(("hci-probe: " + text + "\n").utf8)
  bytes.withUnsafeBytes { _ = write(2, $0.baseAddress, $0.count) }
}

func now() -> Double {
  var ts = timespec()
  clock_gettime(CLOCK_MONOTONIC, &ts)
  return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// Sends one command and waits for its Command Complete; returns its return
/// parameters (status first).
func command(
  _ transport: HCIUserChannelTransport, _ opcode: UInt16, _ parameters: [UInt8] = []
) throws -> [UInt8] {
  try transport.send(
    [0x01, UInt8(opcode & 0xFF), UInt8(opcode >> 8), UInt8(parameters.count)] + parameters)
  while let packet = try transport.receive() {
    // 04 0e len ncmd opcode(2) params / 04 0f len status ncmd opcode(2)
    if packet.count >= 6, packet[0] == 0x04, packet[1] == 0x0E,
      UInt16(packet[4]) | UInt16(packet[5]) << 8 == opcode
    {
      return Array(packet[6...])
    }
    if packet.count >= 7, packet[0] == 0x04, packet[1] == 0x0F,
      UInt16(packet[5]) | UInt16(packet[6]) << 8 == opcode
    {
      return [packet[3]]
    }
  }
  throw Errno(rawValue: EPIPE)
}

func expectSuccess(_ name: String, _ result: [UInt8]) {
  if result.first != 0 {
    complain("\(name) failed: status \(result.first.map { String($0) } ?? "none")")
    exit(3)
  }
}

func bringUp(_ transport: HCIUserChannelTransport) throws {
  expectSuccess("Reset", try command(transport, 0x0C03))
  // bumble's Reset leaves scanning and advertising on: turn them off (status ignored).
  _ = try command(transport, 0x200C, [0, 0])
  _ = try command(transport, 0x200A, [0])
  // Set Event Mask (all), LE Set Event Mask (all), random static address.
  expectSuccess(
    "Set Event Mask", try command(transport, 0x0C01, [UInt8](repeating: 0xFF, count: 8)))
  expectSuccess(
    "LE Set Event Mask", try command(transport, 0x2001, [UInt8](repeating: 0xFF, count: 8)))
  var address = [UInt8](repeating: 0, count: 6)
  for i in 0..<6 { address[i] = UInt8.random(in: 0...255) }
  address[5] |= 0xC0
  expectSuccess("LE Set Random Address", try command(transport, 0x2005, address))
}

// Code that runs on other threads or in signal handlers must not be written
// in main.swift's top-level code: Swift 6 makes that @MainActor, and the
// isolation check traps (SIGILL) when another thread runs it.
nonisolated func receiveOnce(_ argument: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? {
  let transport = Unmanaged<HCIUserChannelTransport>.fromOpaque(argument!).takeRetainedValue()
  let packet = try? transport.receive()
  return UnsafeMutableRawPointer(bitPattern: packet == nil ? 1 : 2)
}

nonisolated func closeTimedOut(_ signal: Int32) {
  let text = Array("hci-probe: receive() still blocked 3 s after close()\n".utf8)
  text.withUnsafeBytes { _ = write(2, $0.baseAddress, $0.count) }
  _exit(3)
}

nonisolated func peripheralTimedOut(_ signal: Int32) {
  let text = Array("hci-probe: peripheral: no central connected in time\n".utf8)
  text.withUnsafeBytes { _ = write(2, $0.baseAddress, $0.count) }
  _exit(3)
}

nonisolated func connectTimedOut(_ signal: Int32) {
  let text = Array("hci-probe: connect: no connection and ATT exchange in time\n".utf8)
  text.withUnsafeBytes { _ = write(2, $0.baseAddress, $0.count) }
  _exit(3)
}

/// `aa:bb:cc:dd:ee:ff` as HCI sends it (least significant byte first).
func parseAddress(_ text: Substring) -> [UInt8]? {
  let parts = text.split(separator: ":")
  guard parts.count == 6 else { return nil }
  let bytes = parts.compactMap { UInt8($0, radix: 16) }
  return bytes.count == 6 ? Array(bytes.reversed()) : nil
}

/// An address as HCI sends it, printed `AA:BB:CC:DD:EE:FF`.
func printAddress<C: Collection>(_ bytes: C) -> String where C.Element == UInt8 {
  bytes.reversed().map { ($0 < 16 ? "0" : "") + String($0, radix: 16, uppercase: true) }
    .joined(separator: ":")
}

/// Seconds with four decimals (no Foundation here).
func fixed(_ seconds: Double) -> String {
  let units = Int((max(0, seconds) * 10_000).rounded())
  let fraction = String(units % 10_000)
  return "\(units / 10_000)." + String(repeating: "0", count: 4 - fraction.count) + fraction
}

/// Whether `needle` occurs in `haystack`.
func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
  guard !needle.isEmpty, haystack.count >= needle.count else { return false }
  return (0...(haystack.count - needle.count)).contains {
    Array(haystack[$0..<$0 + needle.count]) == needle
  }
}

/// Advertising reports seen by `scan`, for its timeout message. Written by
/// the main thread only; the SIGALRM handler that reads it runs on the main
/// thread too (the only thread `scan` has), so a torn read cannot happen.
nonisolated(unsafe) var reportsSeen = 0

nonisolated func scanTimedOut(_ signal: Int32) {
  let text = Array(
    "hci-probe: no advertisement with that name heard in time (\(reportsSeen) reports)\n".utf8)
  text.withUnsafeBytes { _ = write(2, $0.baseAddress, $0.count) }
  _exit(3)
}

let arguments = Array(CommandLine.arguments.dropFirst())
guard let verb = arguments.first else {
  complain(
    "usage: hci-probe list | open N | advertise N SECONDS NAME | scan N SECONDS NAME"
      + " | connect N SECONDS NAME | peripheral N SECONDS")
  exit(2)
}
if verb == "list" {
  for adapter in HCIUserChannelTransport.adapters() { say(adapter.description) }
  exit(0)
}
guard arguments.count >= 2, let index = Int(arguments[1]) else {
  complain("missing adapter index")
  exit(2)
}

let transport: HCIUserChannelTransport
do {
  transport = try HCIUserChannelTransport(index: index)
} catch {
  complain("\(error)")
  exit(1)
}

do {
  switch verb {
  case "open":
    expectSuccess("Reset", try command(transport, 0x0C03))
    let address = try command(transport, 0x1009)
    expectSuccess("Read BD_ADDR", address)
    let printed = address.dropFirst().reversed().map { byte in
      (byte < 16 ? "0" : "") + String(byte, radix: 16, uppercase: true)
    }.joined(separator: ":")
    say("hci\(index) open: reset ok, address \(printed), adapter \(transport.adapter)")
  case "until-gone":
    // Blocks in receive() until the adapter disappears: it must return nil.
    say("hci\(index) waiting for the adapter to go away")
    while let packet = try transport.receive() {
      say("hci\(index) packet of \(packet.count) bytes")
    }
    say("hci\(index) receive() returned nil: adapter gone")
  case "close-wakes":
    // A receive() blocked on another thread returns nil once close() is called.
    signal(SIGALRM, closeTimedOut)
    var thread = pthread_t()
    let context = Unmanaged.passRetained(transport).toOpaque()
    let created = pthread_create(&thread, nil, receiveOnce, context)
    guard created == 0 else {
      complain("pthread_create failed")
      exit(3)
    }
    usleep(300_000)
    let start = now()
    transport.close()
    alarm(3)
    var result: UnsafeMutableRawPointer?
    pthread_join(thread, &result)
    guard result == UnsafeMutableRawPointer(bitPattern: 1) else {
      complain("receive() returned a packet instead of nil after close()")
      exit(3)
    }
    try? transport.send([0x01, 0x03, 0x0C, 0x00])
    say(
      "hci\(index): receive() returned nil \(Int((now() - start) * 1000)) ms after close()")
    exit(0)
  case "advertise":
    guard arguments.count >= 4, let seconds = Double(arguments[2]) else { exit(2) }
    let name = Array(arguments[3].utf8.prefix(26))
    try bringUp(transport)
    // LE Set Advertising Parameters: 0x20..0x20, ADV_IND, random own address.
    expectSuccess(
      "LE Set Advertising Parameters",
      try command(transport, 0x2006, [0x20, 0, 0x20, 0, 0x00, 0x01, 0, 0, 0, 0, 0, 0, 0, 0x07, 0]))
    var data: [UInt8] = [2, 0x01, 0x06, UInt8(name.count + 1), 0x09] + name
    let length = UInt8(data.count)
    data += [UInt8](repeating: 0, count: 31 - data.count)
    expectSuccess("LE Set Advertising Data", try command(transport, 0x2008, [length] + data))
    expectSuccess("LE Set Advertising Enable", try command(transport, 0x200A, [1]))
    say("hci\(index) advertising \(arguments[3])")
    let end = now() + seconds
    while now() < end { usleep(100_000) }
  case "connect":
    // Scan for NAME, connect to it as central, exchange ATT MTU over ACL
    // (the peer's GATT server answers), disconnect.
    guard arguments.count >= 4, let seconds = Double(arguments[2]) else { exit(2) }
    signal(SIGALRM, connectTimedOut)
    alarm(UInt32(max(1, seconds.rounded(.up))))
    let name = Array(arguments[3].utf8)
    try bringUp(transport)
    expectSuccess(
      "LE Set Scan Parameters", try command(transport, 0x200B, [0x00, 0x10, 0, 0x10, 0, 0x01, 0]))
    expectSuccess("LE Set Scan Enable", try command(transport, 0x200C, [1, 0]))
    var peer: (type: UInt8, address: [UInt8])?
    while peer == nil, let packet = try transport.receive() {
      guard packet.count > 14, packet[0] == 0x04, packet[1] == 0x3E, contains(packet, name)
      else { continue }
      if packet[3] == 0x02 {
        peer = (packet[6], Array(packet[7..<13]))
      } else if packet[3] == 0x0D {
        peer = (packet[7], Array(packet[8..<14]))
      }
    }
    guard let peer else { exit(3) }
    expectSuccess("LE Set Scan Disable", try command(transport, 0x200C, [0, 0]))
    let connect: [UInt8] =
      [0x10, 0, 0x10, 0, 0x00, peer.type] + peer.address
      + [0x01, 0x18, 0, 0x28, 0, 0, 0, 0xF4, 0x01, 0, 0, 0, 0]
    expectSuccess("LE Create Connection", try command(transport, 0x200D, connect))
    var handle: UInt16?
    while handle == nil, let packet = try transport.receive() {
      // LE Connection Complete (0x01) or Enhanced (0x0A): status, handle.
      guard packet.count > 6, packet[0] == 0x04, packet[1] == 0x3E,
        packet[3] == 0x01 || packet[3] == 0x0A
      else { continue }
      guard packet[4] == 0 else {
        complain("connection failed: status \(packet[4])")
        exit(3)
      }
      handle = UInt16(packet[5]) | UInt16(packet[6] & 0x0F) << 8
    }
    guard let handle else { exit(3) }
    // ACL, first packet: L2CAP length 3, CID 4 (ATT), Exchange MTU Request (0x02), MTU 256.
    let att: [UInt8] = [0x03, 0x00, 0x04, 0x00, 0x02, 0x00, 0x01]
    try transport.send(
      [0x02, UInt8(handle & 0xFF), UInt8(handle >> 8) | 0x20, UInt8(att.count), 0] + att)
    while let packet = try transport.receive() {
      // ACL on our handle, CID 4, opcode 0x03: Exchange MTU Response.
      guard packet.count >= 12, packet[0] == 0x02,
        UInt16(packet[1]) | UInt16(packet[2] & 0x0F) << 8 == handle,
        packet[7] == 0x04, packet[8] == 0x00, packet[9] == 0x03
      else { continue }
      let mtu = Int(packet[10]) | Int(packet[11]) << 8
      say("hci\(index) connected to \(arguments[3]) (handle \(handle)), ATT MTU exchanged: \(mtu)")
      break
    }
    // Disconnect (reason 0x13) and wait for Disconnection Complete.
    try transport.send([0x01, 0x06, 0x04, 3, UInt8(handle & 0xFF), UInt8(handle >> 8), 0x13])
    while let packet = try transport.receive() {
      if packet.count >= 4, packet[0] == 0x04, packet[1] == 0x05 {
        say("hci\(index) disconnected")
        break
      }
    }
  case "peripheral":
    // A device the central's kernel auto-connects to (`btmgmt add-device -a 2`),
    // on its public address, with the extended advertising commands (btvirt's
    // controllers report and connect a legacy set only to a central that
    // uses the legacy commands). Each line on stdin is one reconnection:
    //   undirected          advertise connectably (ADV_IND)
    //   directed ADDRESS    advertise directed at ADDRESS, a public address
    //                       (ADV_DIRECT_IND, low duty cycle)
    // until a central connects, then serve its GATT discovery (below) and
    // disconnect (at most SECONDS in all):
    //   ADVERTISING                   (the enable's Command Complete)
    //   CONNECTED MODE SECONDS PEER   from the advertising enable sent to the
    //                                 connection (LE Connection Complete)
    //   DISCONNECTED
    //   hold ADDRESS        connect to ADDRESS and keep the link (below): HELD
    // It starts with READY ADDRESS (its own). End of input ends it.
    guard arguments.count >= 3, let seconds = UInt32(arguments[2]) else { exit(2) }
    signal(SIGALRM, peripheralTimedOut)
    expectSuccess("Reset", try command(transport, 0x0C03))
    expectSuccess(
      "Set Event Mask", try command(transport, 0x0C01, [UInt8](repeating: 0xFF, count: 8)))
    expectSuccess(
      "LE Set Event Mask", try command(transport, 0x2001, [UInt8](repeating: 0xFF, count: 8)))
    let own = try command(transport, 0x1009)
    expectSuccess("Read BD_ADDR", own)
    say("READY \(printAddress(own.dropFirst()))")
    while let line = readLine() {
      let words = line.split(separator: " ")
      if words.first == "hold" {
        // Connect, as central, to a peer advertising connectably on public
        // address ADDRESS, and keep that link: btvirt (5.66) numbers each
        // controller's links on its own (the first free from 42), tells both
        // ends the central's number and forwards data under the sender's,
        // so a link carries data only where both ends have as many others.
        guard words.count == 2, let address = parseAddress(words[1]) else {
          complain("peripheral: hold needs an address, as AA:BB:CC:DD:EE:FF")
          exit(2)
        }
        alarm(seconds)
        // LE Extended Create Connection: no accept list, own and peer
        // public, 1M: scan 60/60 ms, interval 30-50 ms, timeout 420 ms.
        let create: [UInt8] =
          [0x00, 0x00, 0x00] + address
          + [0x01, 0x60, 0, 0x60, 0, 0x18, 0, 0x28, 0, 0, 0, 0x2A, 0, 0, 0, 0, 0]
        try transport.send([0x01, 0x43, 0x20, UInt8(create.count)] + create)
        while let packet = try transport.receive() {
          if packet.count >= 7, packet[0] == 0x04, packet[1] == 0x0F, packet[5] == 0x43,
            packet[6] == 0x20, packet[3] != 0
          {
            complain("peripheral: LE Extended Create Connection failed: status \(packet[3])")
            exit(3)
          }
          guard packet.count >= 7, packet[0] == 0x04, packet[1] == 0x3E,
            packet[3] == 0x01 || packet[3] == 0x0A
          else { continue }
          guard packet[4] == 0 else {
            complain("peripheral: hold: connection failed: status \(packet[4])")
            exit(3)
          }
          say("HELD \(UInt16(packet[5]) | UInt16(packet[6] & 0x0F) << 8)")
          break
        }
        alarm(0)
        continue
      }
      guard let mode = words.first, mode == "undirected" || mode == "directed" else {
        complain("peripheral: unknown line \"\(line)\"")
        exit(2)
      }
      var target = [UInt8](repeating: 0, count: 6)
      var properties: UInt16 = 0x0013  // legacy, connectable, scannable: ADV_IND
      if mode == "directed" {
        guard words.count == 2, let address = parseAddress(words[1]) else {
          complain("peripheral: directed needs an address, as AA:BB:CC:DD:EE:FF")
          exit(2)
        }
        target = address
        properties = 0x0015  // legacy, connectable, directed: ADV_DIRECT_IND (low duty)
      }
      // LE Set Extended Advertising Parameters, set 1: 20 ms, all channels,
      // own address public, peer public (the directed target), 1M PHY.
      let parameters: [UInt8] =
        [0x01, UInt8(properties & 0xFF), UInt8(properties >> 8), 0x20, 0, 0, 0x20, 0, 0,
         0x07, 0x00, 0x00] + target + [0x00, 0x7F, 0x01, 0x00, 0x01, 0x00, 0x00]
      expectSuccess(
        "LE Set Extended Advertising Parameters", try command(transport, 0x2036, parameters))
      if mode == "undirected" {
        let data: [UInt8] = [2, 0x01, 0x06, 6, 0x09] + Array("mouse".utf8)
        expectSuccess(
          "LE Set Extended Advertising Data",
          try command(transport, 0x2037, [0x01, 0x03, 0x01, UInt8(data.count)] + data))
      }
      alarm(seconds)
      let enable: [UInt8] = [0x01, 0x01, 0x01, 0, 0, 0]
      let start = now()
      try transport.send([0x01, 0x39, 0x20, UInt8(enable.count)] + enable)
      var handle: UInt16?
      var enabled = false
      while handle == nil || !enabled, let packet = try transport.receive() {
        // Command Complete for LE Set Extended Advertising Enable: its status.
        if packet.count >= 7, packet[0] == 0x04, packet[1] == 0x0E, packet[4] == 0x39,
          packet[5] == 0x20
        {
          expectSuccess("LE Set Extended Advertising Enable", [packet[6]])
          enabled = true
          say("ADVERTISING")
        }
        // LE Connection Complete (0x01) or Enhanced (0x0A): status, handle,
        // role, peer address type, peer address.
        guard packet.count >= 15, packet[0] == 0x04, packet[1] == 0x3E,
          packet[3] == 0x01 || packet[3] == 0x0A
        else { continue }
        let took = now() - start
        guard packet[4] == 0 else {
          complain("peripheral: connection failed: status \(packet[4])")
          exit(3)
        }
        handle = UInt16(packet[5]) | UInt16(packet[6] & 0x0F) << 8
        let peer = printAddress(packet[9..<15])
        say("CONNECTED \(mode) \(fixed(took)) \(peer)")
      }
      guard let handle else { exit(3) }
      // Stay until the central's bluetoothd has done its GATT discovery, as
      // a device that reconnects stays: a link that ended before (while
      // bluetoothd waited for an answer, or had no GATT client) hit a kernel
      // BUG in 3 of 5 runs (6.1: list_del corruption in hci_chan_del,
      // bluetoothd killed). An empty GATT server: MTU 23, every other
      // request refused; leave once Discover All Primary Services (Read By
      // Group Type) has its answer (Attribute Not Found: nothing to find).
      var gone = false
      while let packet = try transport.receive() {
        if packet.count >= 6, packet[0] == 0x04, packet[1] == 0x05,
          UInt16(packet[4]) | UInt16(packet[5] & 0x0F) << 8 == handle
        {
          gone = true  // the central disconnected first
          break
        }
        // ACL on our handle, L2CAP CID 4 (ATT): handle(2) length(2) l2cap length(2) cid(2) pdu.
        guard packet.count >= 10, packet[0] == 0x02,
          UInt16(packet[1]) | UInt16(packet[2] & 0x0F) << 8 == handle,
          packet[7] == 0x04, packet[8] == 0x00
        else { continue }
        let opcode = packet[9]
        let requests: Set<UInt8> = [0x04, 0x06, 0x08, 0x0A, 0x0C, 0x0E, 0x10, 0x12, 0x16, 0x18, 0x20]
        var pdu: [UInt8]
        if opcode == 0x02 {
          pdu = [0x03, 23, 0]  // Exchange MTU Response
        } else if requests.contains(opcode) {
          // Error Response: the request, its (first) handle, Attribute Not
          // Found for the searches, Request Not Supported for the rest.
          let attribute: [UInt8] = packet.count >= 12 ? [packet[10], packet[11]] : [0, 0]
          let searches: Set<UInt8> = [0x04, 0x06, 0x08, 0x10]
          pdu = [0x01, opcode] + attribute + [searches.contains(opcode) ? 0x0A : 0x06]
        } else {
          continue  // a command, a response or a confirmation: nothing to answer
        }
        let l2cap: [UInt8] = [UInt8(pdu.count), 0, 0x04, 0x00] + pdu
        try transport.send(
          [0x02, UInt8(handle & 0xFF), UInt8(handle >> 8) | 0x20, UInt8(l2cap.count), 0] + l2cap)
        if opcode == 0x10 { break }
      }
      if !gone {
        // Disconnect (reason 0x13) and wait for Disconnection Complete.
        try transport.send([0x01, 0x06, 0x04, 3, UInt8(handle & 0xFF), UInt8(handle >> 8), 0x13])
        while let packet = try transport.receive() {
          if packet.count >= 6, packet[0] == 0x04, packet[1] == 0x05,
            UInt16(packet[4]) | UInt16(packet[5] & 0x0F) << 8 == handle
          {
            break
          }
        }
      }
      alarm(0)
      say("DISCONNECTED")
    }
  case "scan":
    guard arguments.count >= 4, let seconds = Double(arguments[2]) else { exit(2) }
    let name = Array(arguments[3].utf8)
    try bringUp(transport)
    // LE Set Scan Parameters: passive, 10 ms / 10 ms, random own address.
    expectSuccess(
      "LE Set Scan Parameters", try command(transport, 0x200B, [0x00, 0x10, 0, 0x10, 0, 0x01, 0]))
    expectSuccess("LE Set Scan Enable", try command(transport, 0x200C, [1, 0]))
    let end = now() + seconds
    var reports = 0
    // receive() blocks: SIGALRM ends the process at the deadline.
    signal(SIGALRM, scanTimedOut)
    alarm(UInt32(max(1, (end - now()).rounded(.up))))
    while let packet = try transport.receive() {
      // LE Meta event: Advertising Report (0x02) or Extended Advertising Report (0x0D).
      guard packet.count > 3, packet[0] == 0x04, packet[1] == 0x3E,
        packet[3] == 0x02 || packet[3] == 0x0D
      else { continue }
      reports += 1
      reportsSeen = reports
      let bytes = Array(packet)
      if bytes.count >= name.count,
        (0...(bytes.count - name.count)).contains(where: {
          Array(bytes[$0..<$0 + name.count]) == name
        })
      {
        say("hci\(index) heard \(arguments[3]) (\(reports) reports, subevent \(packet[3]))")
        exit(0)
      }
    }
    complain("hci\(index) heard \(reports) advertising reports, none from \(arguments[3])")
    exit(3)
  default:
    complain("unknown verb \(verb)")
    exit(2)
  }
} catch {
  complain("\(error)")
  exit(1)
}
transport.close()
exit(0)
