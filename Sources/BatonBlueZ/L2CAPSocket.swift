import BatonRadio
import BatonSystem
import CBatonShims
import CBluetooth
import FoundationEssentials
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Thin wrappers for kernel L2CAP sockets on LE (`AF_BLUETOOTH`,
/// `SOCK_SEQPACKET`, `BTPROTO_L2CAP`, `struct sockaddr_l2` with an LE address
/// type): the kernel makes the LE connection on `connect(2)` and runs the
/// credit-based channel. Security level low (no pairing), our MTU set with
/// `BT_RCVMTU`.
enum L2CAPSocket {
  /// The MTU we announce: the largest SDU we accept.
  static let receiveMTU = 65535

  /// A `connect` under way, which another thread may cut short: `cancel`
  /// shuts its socket down, so the connect's `poll` wakes at once (a
  /// stopping agent must not wait for a peer that went away).
  final class Attempt: Sendable {
    private struct State {
      var socket: FileDescriptor?
      var cancelled = false
    }
    private let state = Mutex(State())

    /// Registers the attempt's socket; false when it was cancelled already.
    fileprivate func started(_ socket: FileDescriptor) -> Bool {
      state.withLock { s in
        if s.cancelled { return false }
        s.socket = socket
        return true
      }
    }

    /// The socket is no longer the attempt's (returned, or about to be
    /// closed): `cancel` must not touch it.
    fileprivate func finished() {
      state.withLock { $0.socket = nil }
    }

    var isCancelled: Bool { state.withLock { $0.cancelled } }

    func cancel() {
      state.withLock { s in
        s.cancelled = true
        if let socket = s.socket { Socket.shutdownBoth(socket) }
      }
    }
  }

  /// A new socket with security level low (no pairing), close-on-exec.
  static func make() throws(BlueZError) -> FileDescriptor {
    let socket: FileDescriptor
    do {
      socket = try Socket.open(
        domain: AF_BLUETOOTH, type: Int32(SOCK_SEQPACKET.rawValue), protocol: BTPROTO_L2CAP)
    } catch {
      throw BlueZError.socket(operation: "socket", errno: error)
    }
    let security = bt_security(level: UInt8(BT_SECURITY_LOW), key_size: 0)
    do {
      try Socket.setOption(socket, level: SOL_BLUETOOTH, name: BT_SECURITY, to: security)
    } catch {
      socket.closeIgnoringErrors()
      throw BlueZError.socket(operation: "setsockopt BT_SECURITY", errno: error)
    }
    return socket
  }

  /// Sets our MTU (`BT_RCVMTU`). Only after `bind` to an LE address: the
  /// kernel refuses it (EINVAL) on a socket whose source type is BR/EDR,
  /// the default before binding. Without it the kernel's default MTU holds
  /// and the session simply uses smaller messages, so a refusal is logged.
  static func setReceiveMTU(_ socket: FileDescriptor) {
    do {
      try Socket.setOption(socket, level: SOL_BLUETOOTH, name: BT_RCVMTU, to: UInt16(receiveMTU))
    } catch {
      Logger(label: "l2cap").warning(
        "cannot set the L2CAP receive MTU to \(receiveMTU): \(error); using the kernel's")
    }
  }

  /// `struct sockaddr_l2` for an LE address.
  static func address(_ address: BluetoothAddress, type: AddressType, psm: UInt16) -> sockaddr_l2 {
    var a = sockaddr_l2()
    a.l2_family = sa_family_t(AF_BLUETOOTH)
    a.l2_psm = psm.littleEndian
    let b = address.bytes
    a.l2_bdaddr = bdaddr_t(b: (b[0], b[1], b[2], b[3], b[4], b[5]))
    a.l2_bdaddr_type = UInt8(
      type == .public || type == .publicIdentity ? BDADDR_LE_PUBLIC : BDADDR_LE_RANDOM)
    return a
  }

  static func bind(_ socket: FileDescriptor, to local: sockaddr_l2) throws(BlueZError) {
    do {
      try Socket.bind(socket, to: local)
    } catch {
      throw BlueZError.socket(operation: "bind", errno: error)
    }
  }

  /// A listening socket for `psm` on the adapter with address `local`.
  static func listen(on local: BluetoothAddress, type: AddressType, psm: UInt16) throws(BlueZError)
    -> FileDescriptor
  {
    let socket = try make()
    do throws(BlueZError) {
      try bind(socket, to: address(local, type: type, psm: psm))
      setReceiveMTU(socket)  // accepted sockets inherit it
      do {
        try Socket.listen(socket, backlog: 8)
      } catch {
        throw BlueZError.socket(operation: "listen", errno: error)
      }
    } catch {
      socket.closeIgnoringErrors()
      throw error
    }
    return socket
  }

  /// Accepts one channel: the connected socket and the peer's address.
  static func accept(_ listener: FileDescriptor) throws(BlueZError) -> (
    FileDescriptor, BluetoothAddress
  ) {
    let (socket, peer): (FileDescriptor, sockaddr_l2)
    do {
      (socket, peer) = try Socket.accept(listener, peer: sockaddr_l2())
    } catch {
      throw BlueZError.socket(operation: "accept", errno: error)
    }
    let b = peer.l2_bdaddr.b
    return (socket, BluetoothAddress(littleEndian: [b.0, b.1, b.2, b.3, b.4, b.5])!)
  }

  /// Connects from the adapter `local` to `psm` on `peer`, at most `timeout`
  /// or until `attempt` is cancelled; blocks the calling thread (run it on
  /// one we own).
  static func connect(
    from local: BluetoothAddress, localType: AddressType, to peer: BluetoothAddress,
    type: AddressType, psm: UInt16, timeout: Duration, attempt: Attempt? = nil
  ) throws(BlueZError) -> FileDescriptor {
    let socket = try make()
    guard attempt?.started(socket) ?? true else {
      socket.closeIgnoringErrors()
      throw BlueZError.connect(peer: peer, errno: Errno(rawValue: ECANCELED))
    }
    do throws(BlueZError) {
      try bind(socket, to: address(local, type: localType, psm: 0))
      setReceiveMTU(socket)
      let wasNonBlocking = (try? socket.setNonBlocking(true)) ?? false
      var inProgress = false
      do {
        try Socket.connect(socket, to: address(peer, type: type, psm: psm))
      } catch {
        guard error.rawValue == EINPROGRESS || error == .wouldBlock else {
          throw BlueZError.connect(peer: peer, errno: error)
        }
        inProgress = true
      }
      if inProgress {
        let ms = Int32(clamping: timeout.wholeMilliseconds)
        let ready: [Int]
        do {
          ready = try Socket.poll([(socket, Int16(POLLOUT))], timeoutMilliseconds: ms)
        } catch {
          throw BlueZError.connect(peer: peer, errno: error as? Errno ?? Errno(rawValue: EIO))
        }
        if attempt?.isCancelled ?? false {
          throw BlueZError.connect(peer: peer, errno: Errno(rawValue: ECANCELED))
        }
        if ready.isEmpty { throw BlueZError.connect(peer: peer, errno: Errno(rawValue: ETIMEDOUT)) }
        if let failure = Socket.pendingError(socket) {
          throw BlueZError.connect(peer: peer, errno: failure)
        }
      }
      _ = try? socket.setNonBlocking(wasNonBlocking)
    } catch {
      attempt?.finished()
      socket.closeIgnoringErrors()
      throw error
    }
    attempt?.finished()
    return socket
  }

  /// The peer's MTU on a connected socket (`BT_SNDMTU`); 23 if unknown.
  static func sendMTU(_ socket: FileDescriptor) -> Int {
    let mtu = try? Socket.option(socket, level: SOL_BLUETOOTH, name: BT_SNDMTU, initial: UInt16(0))
    guard let mtu, mtu > 0 else { return 23 }
    return Int(mtu)
  }

  /// Wraps a connected socket as a channel.
  static func channel(_ socket: FileDescriptor, peer: BluetoothAddress) throws -> L2CAPSocketChannel
  {
    do {
      return try L2CAPSocketChannel(
        socket: socket, peerAddress: peer, maximumMessageSize: sendMTU(socket),
        receiveLimit: receiveMTU)
    } catch {
      socket.closeIgnoringErrors()
      throw error
    }
  }
}
