import BatonHCI
import BatonL2CAP
import BatonRadio
import BatonSystem
import Synchronization

/// One LE connection (central or peripheral role). Open L2CAP channels on it
/// with `BLEHost.openChannel(_:psm:)`; it ends with `BLEHost.disconnect(_:)`,
/// the peer disconnecting, or the host closing.
public final class LEConnection: Sendable, Hashable, CustomStringConvertible {
  /// Which side started the connection.
  public enum Role: UInt8, Sendable, CustomStringConvertible {
    case central = 0
    case peripheral = 1
    public var description: String { self == .central ? "central" : "peripheral" }
  }

  public let handle: UInt16
  public let peerAddress: BluetoothAddress
  public let peerAddressType: AddressType
  /// Our role.
  public let role: Role
  let link: L2CAPLink
  /// When we are central: how often its events come (`LinkPace`).
  private let pace: Mutex<LinkPace?>

  private struct State {
    var reason: HCIStatus?
    /// 1.25 ms units, as the controller last reported.
    var interval: UInt16
    var waiters: [CheckedContinuation<HCIStatus, Never>] = []
  }
  private let state: Mutex<State>

  init(
    handle: UInt16, peerAddress: BluetoothAddress, peerAddressType: AddressType, role: Role,
    interval: UInt16, pace: LinkPace.Schedule, controller: HCIController,
    acceptor: @escaping @Sendable (UInt16) -> (@Sendable (L2CAPChannel) -> Void)?
  ) {
    self.handle = handle
    self.peerAddress = peerAddress
    self.peerAddressType = peerAddressType
    self.role = role
    state = Mutex(State(interval: interval))
    self.pace = Mutex(role == .central ? LinkPace(schedule: pace, madeAt: .now) : nil)
    link = L2CAPLink(
      handle: handle, peerAddress: peerAddress, description: "connection 0x\(hex(handle)) to \(peerAddress)", controller: controller,
      acceptor: acceptor)
  }

  public var description: String {
    "connection 0x\(hex(handle)) to \(peerAddress) (we are \(role))"
  }

  /// Whether the connection is still up.
  public var isConnected: Bool { state.withLock { $0.reason == nil } }

  /// Why it ended (nil while connected).
  public var disconnectReason: HCIStatus? { state.withLock { $0.reason } }

  /// The connection interval, as the controller last reported it (LE
  /// Connection Complete, then each LE Connection Update Complete).
  public var interval: Duration {
    .microseconds(Int(state.withLock { $0.interval }) * 1250)
  }

  func intervalChanged(to units: UInt16) { state.withLock { $0.interval = units } }

  /// The pace asked for last; nil when we are peripheral.
  var wantedPace: LinkPace.Pace? { pace.withLock { $0?.pace } }

  /// Runs `body` on the pace (none when we are peripheral).
  func withPace(_ body: (inout LinkPace) -> [LinkPace.Action]) -> [LinkPace.Action] {
    pace.withLock { p in
      guard var value = p else { return [] }
      defer { p = value }
      return body(&value)
    }
  }

  /// Waits until the connection ends; returns the reason.
  public func waitForDisconnection() async -> HCIStatus {
    await withCheckedContinuation { continuation in
      let reason = state.withLock { s -> HCIStatus? in
        if let reason = s.reason { return reason }
        s.waiters.append(continuation)
        return nil
      }
      if let reason { continuation.resume(returning: reason) }
    }
  }

  /// The connection ended: channels close, waiters wake.
  func markDisconnected(_ reason: HCIStatus) {
    let waiters = state.withLock { s -> [CheckedContinuation<HCIStatus, Never>] in
      guard s.reason == nil else { return [] }
      s.reason = reason
      defer { s.waiters.removeAll() }
      return s.waiters
    }
    link.terminate("connection ended: \(reason)", byPeer: reason == .remoteUserTerminated)
    for waiter in waiters { waiter.resume(returning: reason) }
  }

  public static func == (a: LEConnection, b: LEConnection) -> Bool { a === b }
  public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
