import BatonSystem
import CBluetooth
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// A kernel Bluetooth adapter (`hciN`) reached through the kernel's HCI user
/// channel: exclusive, raw access to the controller, with the kernel's own
/// Bluetooth host stack (and bluetoothd) kept out of the way.
///
/// Opening looks the adapter up with libbluetooth (`hci_devinfo`), then binds
/// a `socket(AF_BLUETOOTH, SOCK_RAW, BTPROTO_HCI)` with
/// `hci_channel = HCI_CHANNEL_USER`. The kernel then powers the controller for
/// us and hands over every packet: each `read(2)` returns exactly one H4
/// packet with its type byte, and each `write(2)` must be one.
///
/// Requirements, each with its own `HCIUserChannelError` when unmet: a kernel
/// with Bluetooth support, an adapter with that index, the adapter down and not
/// used by bluetoothd, and `CAP_NET_ADMIN`.
public final class HCIUserChannelTransport: HCITransport {
  /// The adapter index (the N of `hciN`).
  public let index: Int
  /// What `hci_devinfo` said about the adapter when it was opened.
  public let adapter: HCIAdapterInfo

  private struct State {
    var closed = false
    var receivers = 0
    var descriptorsClosed = false
  }

  private let socket: FileDescriptor
  /// Where `receive()` waits for the socket; `close()` stops it, which
  /// ends a `receive()` blocked in poll(2).
  private let pollLoop: PollLoop
  private let state = Mutex(State())
  private let log = Logger(label: "transport")

  /// The largest H4 packet we accept from the kernel: type byte, a 4-byte ACL
  /// header and the largest ACL payload the length field allows.
  static let maximumPacketSize = 1 + 4 + 65535

  /// Opens adapter `hci<index>` on the HCI user channel.
  ///
  /// - Throws: `HCIUserChannelError`, saying what is missing and what to do.
  public init(index: Int) throws {
    guard (0...0xFFFE).contains(index) else {
      throw HCIUserChannelError.noSuchAdapter(index: index, available: [])
    }
    self.index = index
    let socket: FileDescriptor
    do throws(Errno) {
      socket = try Socket.open(
        domain: AF_BLUETOOTH, type: Int32(SOCK_RAW.rawValue), protocol: BTPROTO_HCI)
    } catch {
      throw HCIUserChannelError(opening: index, errno: error, available: [])
    }
    do {
      adapter = try HCIUserChannelTransport.lookUp(index: index, socket: socket)
      try HCIUserChannelTransport.bindUserChannel(socket, index: index)
      do throws(Errno) {
        pollLoop = try PollLoop()
      } catch {
        throw HCIUserChannelError.failed(index: index, operation: "pipe", errno: error)
      }
    } catch {
      socket.closeIgnoringErrors()
      throw error
    }
    self.socket = socket
    log.info("hci\(index): user channel open (\(adapter.address), bus \(adapter.type))")
  }

  deinit { close() }

  public var description: String { "hci\(index)" }

  /// The adapters the kernel knows about, from HCIGETDEVLIST and `hci_devinfo`.
  /// Empty when there are none or the kernel has no Bluetooth.
  public static func adapters() -> [HCIAdapterInfo] {
    guard
      let socket = try? Socket.open(
        domain: AF_BLUETOOTH, type: Int32(SOCK_RAW.rawValue), protocol: BTPROTO_HCI)
    else { return [] }
    defer { socket.closeIgnoringErrors() }
    return listAdapters(socket)
  }

  // MARK: HCITransport

  public func send(_ packet: [UInt8]) throws {
    guard !packet.isEmpty else { return }
    try state.withLock { state in
      if state.closed { throw HCIUserChannelError.closed(index: index) }
      // One write(2) per packet: the user channel takes whole packets only.
      let written = try packet.withUnsafeBytes { try socket.write($0) }
      if written != packet.count {
        throw HCIUserChannelError.failed(
          index: index, operation: "write", errno: Errno(rawValue: EIO))
      }
    }
  }

  public func receive() throws -> [UInt8]? {
    let open = state.withLock { state -> Bool in
      if state.closed { return false }
      state.receivers += 1
      return true
    }
    guard open else { return nil }
    defer {
      state.withLock { state in
        state.receivers -= 1
        if state.closed && state.receivers == 0 { closeDescriptors(&state) }
      }
    }
    // Set by a handler: the packet, nil for the end, or the failure.
    var outcome: Result<[UInt8]?, HCIUserChannelError>?
    do throws(Errno) {
      try pollLoop.run { () -> PollLoop.Turn? in
        if outcome != nil || state.withLock({ $0.closed }) { return nil }
        return PollLoop.Turn([
          PollLoop.Source(
            socket,
            onReadable: { [self] in
              if state.withLock({ $0.closed }) {
                outcome = .success(nil)
              } else {
                outcome = readPacket()
              }
            },
            onHangUp: { [self] events in
              // POLLHUP/POLLERR without data: the adapter went away (unplugged).
              let flags = events.contains(.error) ? "POLLERR" : "POLLHUP"
              log.warning("hci\(index): adapter gone (\(flags) on the user channel)")
              outcome = .success(nil)
            })
        ])
      }
    } catch {
      throw HCIUserChannelError.failed(index: index, operation: "poll", errno: error)
    }
    // No outcome: `close()` stopped the loop.
    return try outcome?.get() ?? nil
  }

  /// Reads one packet from the socket: the packet, nil at the end (the
  /// adapter is gone), or no result when nothing was there after all.
  private func readPacket() -> Result<[UInt8]?, HCIUserChannelError>? {
    withUnsafeTemporaryAllocation(byteCount: Self.maximumPacketSize, alignment: 1) {
      buffer -> Result<[UInt8]?, HCIUserChannelError>? in
      let n: Int
      do {
        n = try socket.read(into: buffer)
      } catch let error as Errno where error == .wouldBlock {
        return nil
      } catch let error as Errno where [ENODEV, EPIPE, ENETDOWN].contains(error.rawValue) {
        // The kernel unregistered the adapter (unplugged, driver unloaded).
        log.warning("hci\(index): adapter gone (\(error.name))")
        return .success(nil)
      } catch {
        let failure = error as? Errno ?? Errno(rawValue: EIO)
        return .failure(.failed(index: index, operation: "read", errno: failure))
      }
      return .success(n == 0 ? nil : Array(buffer[..<n]))
    }
  }

  public func close() {
    state.withLock { state in
      guard !state.closed else { return }
      state.closed = true
      if state.receivers > 0 {
        // The reader closes the descriptors when it wakes up.
        pollLoop.stop()
      } else {
        closeDescriptors(&state)
      }
    }
  }

  private func closeDescriptors(_ state: inout State) {
    guard !state.descriptorsClosed else { return }
    state.descriptorsClosed = true
    // Closing the user channel socket gives the adapter back to the kernel.
    socket.closeIgnoringErrors()
    log.info("hci\(index): user channel closed")
  }

  // MARK: Opening

  /// `hci_devinfo`: does the adapter exist? Lists the ones that do when not.
  static func lookUp(index: Int, socket: FileDescriptor) throws -> HCIAdapterInfo {
    var info = hci_dev_info()
    do throws(Errno) {
      try checked { hci_devinfo(Int32(index), &info) }
    } catch {
      throw HCIUserChannelError(opening: index, errno: error, available: listAdapters(socket))
    }
    return HCIAdapterInfo(info)
  }

  /// Binds `socket` to adapter `index` on HCI_CHANNEL_USER.
  static func bindUserChannel(_ socket: FileDescriptor, index: Int) throws {
    var address = sockaddr_hci()
    address.hci_family = sa_family_t(AF_BLUETOOTH)
    address.hci_dev = UInt16(index)
    address.hci_channel = UInt16(HCI_CHANNEL_USER)
    do throws(Errno) {
      try Socket.bind(socket, to: address)
    } catch {
      let available = error == .noDevice ? listAdapters(socket) : []
      throw HCIUserChannelError(opening: index, errno: error, available: available)
    }
  }

  /// HCIGETDEVLIST on an HCI socket, then `hci_devinfo` for each adapter.
  static func listAdapters(_ socket: FileDescriptor) -> [HCIAdapterInfo] {
    // struct hci_dev_list_req { uint16_t dev_num; struct hci_dev_req dev_req[]; }
    // with struct hci_dev_req { uint16_t dev_id; uint32_t dev_opt; } (8 bytes).
    let maximum = 64
    let stride = MemoryLayout<hci_dev_req>.stride
    let headerSize = MemoryLayout<hci_dev_req>.alignment  // dev_num, padded
    var request = [UInt8](repeating: 0, count: headerSize + maximum * stride)
    request.withUnsafeMutableBytes { $0.storeBytes(of: UInt16(maximum), as: UInt16.self) }
    let result = request.withUnsafeMutableBytes {
      ioctl(socket.rawValue, HCIUserChannelTransport.getDeviceList, $0.baseAddress!)
    }
    guard result >= 0 else { return [] }
    return request.withUnsafeBytes { bytes -> [HCIAdapterInfo] in
      let count = min(Int(bytes.load(as: UInt16.self)), maximum)
      return (0..<count).compactMap { i -> HCIAdapterInfo? in
        let id = bytes.load(fromByteOffset: headerSize + i * stride, as: UInt16.self)
        var info = hci_dev_info()
        guard hci_devinfo(Int32(id), &info) == 0 else { return nil }
        return HCIAdapterInfo(info)
      }.sorted { $0.index < $1.index }
    }
  }

  /// `_IOR('H', 210, int)`: the C macro is not imported.
  static let getDeviceList: UInt = (2 << 30) | (4 << 16) | (0x48 << 8) | 210
}

/// One kernel Bluetooth adapter as `hci_devinfo` describes it.
public struct HCIAdapterInfo: Sendable, Equatable, CustomStringConvertible {
  /// The adapter index (N of hciN).
  public let index: Int
  /// The kernel's name, `hciN`.
  public let name: String
  /// The controller's public address as printed (`00:11:22:33:44:55`).
  public let address: String
  /// Whether the kernel has the adapter up (HCI_UP).
  public let isUp: Bool
  /// The bus (`VIRTUAL`, `USB`, `UART`, ...).
  public let type: String

  public init(index: Int, name: String, address: String, isUp: Bool, type: String) {
    self.index = index
    self.name = name
    self.address = address
    self.isUp = isUp
    self.type = type
  }

  init(_ info: hci_dev_info) {
    var info = info
    index = Int(info.dev_id)
    name = withUnsafeBytes(of: &info.name) { bytes in
      String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
    }
    address = withUnsafeBytes(of: &info.bdaddr) { bytes in
      bytes.reversed().map { byte in
        let hex = String(byte, radix: 16, uppercase: true)
        return hex.count == 1 ? "0" + hex : hex
      }.joined(separator: ":")
    }
    isUp = info.flags & 1 != 0  // 1 << HCI_UP
    let buses = ["VIRTUAL", "USB", "PCCARD", "UART", "RS232", "PCI", "SDIO", "SPI", "I2C", "SMD"]
    let bus = Int(info.type & 0x0F)
    type = bus < buses.count ? buses[bus] : "bus \(bus)"
  }

  public var description: String { "\(name) \(address)\(isUp ? " (up)" : "")" }
}
