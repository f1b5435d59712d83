import Foundation

@testable import BatonHCI
@testable import BatonL2CAP
@testable import BatonRadio

/// A scripted controller for tests that need exact control of what the host
/// receives: answers every command with success (and plausible return
/// parameters), answers every ACL packet with Number Of Completed Packets,
/// records what the host sent, and lets the test inject any packet.
final class FakeController: HCITransport, @unchecked Sendable {
  // @unchecked: every stored property is guarded by `condition`.
  private let condition = NSCondition()
  private var queue: [[UInt8]] = []
  private var sentPackets: [[UInt8]] = []
  private var closed = false
  private var silent: Set<UInt16> = []
  private var failing: [UInt16: HCIStatus] = [:]
  private var holdCompletions = false
  private var heldCompletions = 0
  private var stalling = false
  private var losing = 0
  private var stalledNames: [String] = []

  /// Opcodes that get no answer at all (as bumble does for some).
  func neverAnswer(_ opcode: UInt16) { _ = locked { silent.insert(opcode) } }
  /// Opcodes answered with a failure status.
  func fail(_ opcode: UInt16, with status: HCIStatus) { locked { failing[opcode] = status } }
  /// Stops (true) or resumes (false) Number Of Completed Packets; resuming
  /// completes everything held.
  func holdACLCompletions(_ hold: Bool, handle: UInt16 = 1) {
    locked {
      holdCompletions = hold
      if !hold && heldCompletions > 0 {
        queue.append(HCIEvent.numberOfCompletedPackets([(handle, UInt16(heldCompletions))]).encoded)
        heldCompletions = 0
        condition.broadcast()
      }
    }
  }
  /// Completes every held ACL packet but keeps holding later ones.
  func completeHeld(handle: UInt16 = 1) {
    locked {
      guard heldCompletions > 0 else { return }
      queue.append(HCIEvent.numberOfCompletedPackets([(handle, UInt16(heldCompletions))]).encoded)
      heldCompletions = 0
      condition.broadcast()
    }
  }
  /// The next `count` ACL packets the host writes never reach the
  /// controller (a UART that lost them): neither completed nor held.
  func loseNextACL(_ count: Int) { locked { losing = count } }
  /// Makes every write block (true) until released (false), as a UART whose
  /// controller holds CTS does.
  func stallWrites(_ stall: Bool) {
    locked {
      stalling = stall
      condition.broadcast()
    }
  }
  /// The names of the threads blocked in a stalled write now.
  var stalledWriters: [String] { locked { stalledNames } }

  /// ACL packets the host has sent and the controller has not completed.
  var outstandingACL: Int { locked { heldCompletions } }

  private func locked<T>(_ body: () -> T) -> T {
    condition.lock()
    defer { condition.unlock() }
    return body()
  }

  var description: String { "fake controller" }

  func send(_ packet: [UInt8]) throws {
    condition.lock()
    defer { condition.unlock() }
    if stalling && !closed {
      let name = Threads.currentName
      stalledNames.append(name)
      while stalling && !closed { condition.wait() }
      stalledNames.remove(at: stalledNames.firstIndex(of: name)!)
    }
    if closed { throw TransportError.writeFailed(transport: description, reason: "closed") }
    sentPackets.append(packet)
    if packet.first == 0x01, packet.count >= 3 {
      let opcode = UInt16(packet[1]) | UInt16(packet[2]) << 8
      if silent.contains(opcode) { return }
      if let status = failing[opcode] {
        queue.append(
          HCIEvent.commandComplete(
            numCommandPackets: 1, opcode: opcode, returnParameters: [status.rawValue]
          ).encoded)
        condition.broadcast()
        return
      }
      switch opcode {
      case 0x200D, 0x0406:
        queue.append(
          HCIEvent.commandStatus(status: .success, numCommandPackets: 1, opcode: opcode).encoded)
      default:
        let returned: [UInt8] =
          switch opcode {
          case 0x2002: [0, 27, 0, 8]
          case 0x1001: [0, 9, 0, 0, 9, 0xFF, 0xFF, 0, 0]
          default: [0]
          }
        queue.append(
          HCIEvent.commandComplete(numCommandPackets: 1, opcode: opcode, returnParameters: returned)
            .encoded)
      }
    } else if packet.first == 0x02, packet.count >= 3 {
      let handle = (UInt16(packet[1]) | UInt16(packet[2]) << 8) & 0x0FFF
      if losing > 0 {
        losing -= 1
        return
      }
      if holdCompletions {
        heldCompletions += 1
        return
      }
      queue.append(HCIEvent.numberOfCompletedPackets([(handle, 1)]).encoded)
    }
    condition.broadcast()
  }

  func receive() throws -> [UInt8]? {
    condition.lock()
    defer { condition.unlock() }
    while queue.isEmpty && !closed { condition.wait() }
    if closed { return nil }
    return queue.removeFirst()
  }

  var hasBufferedBytes: Bool {
    condition.lock()
    defer { condition.unlock() }
    return !queue.isEmpty
  }

  func close() {
    condition.lock()
    closed = true
    condition.broadcast()
    condition.unlock()
  }

  /// Queues a packet for the host to receive.
  func inject(_ packet: [UInt8]) {
    condition.lock()
    queue.append(packet)
    condition.broadcast()
    condition.unlock()
  }

  /// Everything the host sent so far.
  var sent: [[UInt8]] {
    condition.lock()
    defer { condition.unlock() }
    return sentPackets
  }

  /// The L2CAP signalling commands the host sent on `handle` (whole PDUs only).
  func sentSignals(handle: UInt16) -> [L2CAPSignal] {
    sent.compactMap { packet -> L2CAPSignal? in
      guard let acl = try? ACLPacket.decode(packet), acl.handle == handle,
        let frame = try? L2CAPFrame.decode(acl.data), frame.cid == 5
      else { return nil }
      return try? L2CAPSignal.decode(frame.payload)
    }
  }

  /// One ACL packet carrying a whole L2CAP PDU from the peer.
  static func acl(handle: UInt16, cid: UInt16, _ payload: [UInt8]) -> [UInt8] {
    ACLPacket(
      handle: handle, boundary: .firstFlushable, data: L2CAPFrame.encode(cid: cid, payload: payload)
    ).encoded
  }

  /// LE Connection Complete making us peripheral on `handle`.
  static func connectionComplete(handle: UInt16, role: UInt8 = 1) -> [UInt8] {
    HCIEvent.leConnectionComplete(
      .init(
        enhanced: false, status: .success, handle: handle, role: role, peerAddressType: .random,
        peerAddress: BluetoothAddress("D1:22:33:44:55:66")!, interval: 24, latency: 0,
        supervisionTimeout: 400,
        clockAccuracy: 0)
    ).encoded
  }
}
