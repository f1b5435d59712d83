import Foundation
import Testing

@testable import BatonHCI
@testable import BatonHost
@testable import BatonL2CAP
@testable import BatonRadio

/// Command and ACL flow control against a scripted controller.
@Suite("HCI controller")
struct HCIControllerTests {
  @Test func unansweredCommandTimesOutAndTheNextOneStillGoes() async throws {
    let fake = FakeController()
    let controller = HCIController(transport: fake, commandTimeout: .milliseconds(200))
    controller.start(events: { _ in }, data: { _, _ in }, closed: { _ in })
    defer { controller.close() }
    fake.neverAnswer(0x2025)  // LE Read Local P-256 Public Key: bumble never answers
    fake.neverAnswer(0x200E)
    do {
      try await controller.send(.leCreateConnectionCancel)
      Issue.record("an unanswered command must time out")
    } catch let error as HCIError {
      guard case .commandTimedOut(let name, _) = error else {
        Issue.record("wrong error \(error)")
        return
      }
      #expect(name == "LE Create Connection Cancel")
      #expect(error.description.contains("no answer"))
    }
    #expect(try await controller.send(.reset) == [])
  }

  @Test func aStalledTransportParksOnlyTheWriterThread() async throws {
    let fake = FakeController()
    let controller = HCIController(transport: fake, commandTimeout: .milliseconds(300))
    controller.start(events: { _ in }, data: { _, _ in }, closed: { _ in })
    defer {
      fake.stallWrites(false)
      controller.close()
    }
    controller.setACLBuffers(length: 27, count: 8)
    fake.stallWrites(true)
    let pdu = L2CAPFrame.encode(cid: 0x40, payload: Array(repeating: 7, count: 100))
    let fragments = ACLPacket.fragments(of: pdu, handle: 1, maximumLength: 27).count
    let returned = LockedBox(false)
    Task {
      try controller.sendACL(handle: 1, pdu: pdu)
      returned.mutex.withLock { $0 = true }
    }
    // The caller returns while the first fragment's write is stuck, and the
    // thread stuck in it is the writer.
    #expect(await eventually(20, "sendACL returned") { returned.mutex.withLock { $0 } })
    #expect(await eventually(20, "a write stalled") { fake.stalledWriters == ["hci-writer"] })
    // A command queued behind the stuck write times out on time.
    let error = await #expect(throws: HCIError.self) { try await controller.send(.reset) }
    if case .commandTimedOut(let command, _) = error {
      #expect(command == "Reset")
    } else {
      Issue.record("expected a timeout, got \(String(describing: error))")
    }
    #expect(fake.sent.isEmpty)
    // Once the controller takes bytes again, every fragment goes out.
    fake.stallWrites(false)
    #expect(await eventually(20, "the fragments were written") { fake.sent.count == fragments })
  }

  /// The ACL packets the host has written to the fake.
  static func aclWritten(_ fake: FakeController) -> Int { fake.sent.filter { $0.first == 0x02 }.count }

  /// Packets lost on the way to the controller (a UART without a CRC) hold
  /// its buffers in our count for ever. Once none is left and none has
  /// completed for `lostPacketAge`, one packet goes out beyond the count; its
  /// completion shows the ones before it lost, and their buffers are used
  /// again, where the connection would otherwise stay stuck.
  /// With `lost` 3, the first probe is lost too, and a second follows.
  @Test(arguments: [2, 3])
  func aProbeShowsPacketsLostBeforeTheControllerAndFreesTheirBuffers(lost: Int) async throws {
    let fake = FakeController()
    let controller = HCIController(transport: fake)
    controller.start(events: { _ in }, data: { _, _ in }, closed: { _ in })
    defer { controller.close() }
    controller.setACLBuffers(length: 27, count: 2)
    fake.loseNextACL(lost)
    // Four fragments: the first two are lost, which leaves no buffer.
    let pdu = L2CAPFrame.encode(cid: 0x40, payload: Array(repeating: 7, count: 90))
    #expect(ACLPacket.fragments(of: pdu, handle: 1, maximumLength: 27).count == 4)
    try controller.sendACL(handle: 1, pdu: pdu)
    #expect(await eventually(20, "every fragment written") { Self.aclWritten(fake) == 4 })
    #expect(await eventually(20, "counted lost") { controller.statistics.aclPacketsPresumedLost == lost })
    #expect(await eventually(20, "nothing outstanding") { controller.aclStall(handle: 1) == nil })
    // Both buffers are back: two more fragments go out with no probe.
    try controller.sendACL(
      handle: 1, pdu: L2CAPFrame.encode(cid: 0x40, payload: Array(repeating: 8, count: 40)))
    #expect(await eventually(20, "two more written") { Self.aclWritten(fake) == 6 })
    #expect(controller.statistics.aclPacketsPresumedLost == lost)
  }

  /// The peer's data arriving shows the link alive: our packets that the
  /// controller has not completed for `lostPacketAge` meanwhile count as
  /// lost, and their buffers come back, with nothing queued to probe with.
  @Test func thePeersDataShowsOurStuckPacketsLost() async throws {
    let fake = FakeController()
    let controller = HCIController(transport: fake)
    controller.start(events: { _ in }, data: { _, _ in }, closed: { _ in })
    defer { controller.close() }
    controller.setACLBuffers(length: 27, count: 8)
    fake.loseNextACL(1)
    try controller.sendACL(handle: 1, pdu: L2CAPFrame.encode(cid: 0x40, payload: [1, 2, 3]))
    #expect(await eventually(20, "written") { Self.aclWritten(fake) == 1 })
    #expect(
      await eventually(20, "stuck for lostPacketAge") {
        (controller.aclStall(handle: 1) ?? .zero) >= HCIController.lostPacketAge
      })
    fake.inject(FakeController.acl(handle: 1, cid: 0x40, [9]))
    #expect(await eventually(20, "counted lost") { controller.aclStall(handle: 1) == nil })
    #expect(controller.statistics.aclPacketsPresumedLost == 1)
  }

  /// An LE Advertising Report event with one report, of RSSI -`number`.
  static func advertisingReport(_ number: UInt8) -> [UInt8] {
    let data: [UInt8] = [0x02, 0x01, 0x06]
    let body: [UInt8] =
      [0x02, 1, 0x00, 0x01, number, 0, 0, 0, 0, 0xC0, UInt8(data.count)] + data
      + [UInt8(bitPattern: -Int8(number))]
    return [0x04, 0x3E, UInt8(body.count)] + body
  }

  /// Reports that arrive together are taken in one go, and the reader
  /// waits once, after the last (nothing more buffered), before it blocks
  /// again; not after any other packet, and never with coalescing off.
  @Test(arguments: [true, false])
  func theReaderWaitsOnceAfterABurstOfReports(coalescing: Bool) async throws {
    let fake = FakeController()
    let seen = LockedBox<[String]>([])
    let controller = HCIController(
      transport: fake, reportCoalescing: coalescing ? .milliseconds(20) : .zero,
      linkTrafficHold: .seconds(3600),
      pause: { duration in
        seen.mutex.withLock { $0.append("pause \(duration.components.attoseconds / 1_000_000_000_000_000) ms") }
      })
    for last in 1...3 as ClosedRange<UInt8> { fake.inject(Self.advertisingReport(last)) }
    controller.start(
      events: { event in
        let name: String
        if case .leAdvertisingReports(let reports) = event {
          name = "report \(-(reports.first?.rssi ?? 0))"
        } else {
          name = "other"
        }
        seen.mutex.withLock { $0.append(name) }
      }, data: { _, _ in }, closed: { _ in })
    defer { controller.close() }
    let burst = ["report 1", "report 2", "report 3"] + (coalescing ? ["pause 20 ms"] : [])
    #expect(await eventually(20, "the burst") { seen.mutex.withLock { $0.count } == burst.count })
    // Another event (a Command Complete for no command: credits), then one
    // more report.
    fake.inject(
      HCIEvent.commandComplete(numCommandPackets: 1, opcode: 0x0000, returnParameters: []).encoded)
    #expect(await eventually(20, "the other event") { seen.mutex.withLock { $0.count } == burst.count + 1 })
    fake.inject(Self.advertisingReport(4))
    let all = burst + ["other", "report 4"] + (coalescing ? ["pause 20 ms"] : [])
    #expect(await eventually(20, "the last report") { seen.mutex.withLock { $0.count } == all.count })
    #expect(seen.mutex.withLock { $0 } == all)
    // Link traffic (a Number Of Completed Packets: our data went out):
    // within the hold, reports are not waited after.
    guard coalescing else { return }
    fake.inject(HCIEvent.numberOfCompletedPackets([(1, 0)]).encoded)
    fake.inject(Self.advertisingReport(5))
    let held = all + ["other", "report 5"]
    #expect(await eventually(20, "the held report") { seen.mutex.withLock { $0.count } >= held.count })
    fake.inject(Self.advertisingReport(6))
    #expect(await eventually(20, "one more") { seen.mutex.withLock { $0.count } >= held.count + 1 })
    #expect(seen.mutex.withLock { $0 } == held + ["report 6"])
  }

  @Test func failedCommandCarriesTheStatusName() async throws {
    let fake = FakeController()
    let controller = HCIController(transport: fake)
    controller.start(events: { _ in }, data: { _, _ in }, closed: { _ in })
    defer { controller.close() }
    fake.fail(0x2005, with: .commandDisallowed)
    do {
      try await controller.send(.leSetRandomAddress(.randomStatic()))
      Issue.record("expected a failure")
    } catch {
      #expect("\(error)" == "HCI LE Set Random Address failed: Command Disallowed (0x0C)")
    }
  }

  @Test func aclFlowControlKeepsAtMostTheBufferCountInTheController() async throws {
    let fake = FakeController()
    let host = try await BLEHost.open(transport: fake)  // the fake reports 8 buffers of 27
    defer { Task { await host.close() } }
    #expect(host.controller.aclBuffers == (27, 8))
    fake.holdACLCompletions(true)
    // 40 fragments' worth of PDU.
    try host.controller.sendACL(
      handle: 1, pdu: L2CAPFrame.encode(cid: 0x40, payload: Array(repeating: 1, count: 1000)))
    #expect(await eventually { fake.outstandingACL == 8 })
    // A command queued after the PDU is written after what flow control
    // let through: once it is answered, no more fragments went out.
    try await host.controller.send(.readBufferSize)
    #expect(fake.outstandingACL == 8)
    let aclSent = { fake.sent.filter { $0.first == 0x02 }.count }
    #expect(aclSent() == 8)
    fake.completeHeld()
    #expect(await eventually { fake.outstandingACL == 8 && aclSent() == 16 })
    fake.holdACLCompletions(false)
    #expect(await eventually { aclSent() == (1004 + 26) / 27 })
    let fragments = fake.sent.filter { $0.first == 0x02 }
    #expect(fragments.allSatisfy { $0.count <= 5 + 27 })
  }

  /// A rotation installs the new address and beacon before advertising
  /// resumes: no advertisement goes out with the old data under the new address.
  @Test func rotationInstallsTheNewDataBeforeAdvertisingResumes() async throws {
    let fake = FakeController()
    let host = try await BLEHost.open(transport: fake)
    defer { Task { await host.close() } }
    let old = [UInt8](repeating: 1, count: 31)
    let new = [UInt8](repeating: 2, count: 31)
    try await host.startAdvertising(data: old, intervalMilliseconds: 100)
    let before = fake.sent.count
    let address = BluetoothAddress(littleEndian: [1, 2, 3, 4, 5, 0x45])!
    #expect(try await host.rotateAddress(to: address, advertisingData: new) == address)
    let commands = fake.sent[before...].compactMap { try? HCICommand.decode($0) }
    let order = commands.compactMap { command -> String? in
      switch command {
      case .leSetAdvertisingEnable(let on): on ? "on" : "off"
      case .leSetRandomAddress(let a): a == address ? "address" : "other address"
      case .leSetAdvertisingData(let d): d == new ? "new data" : "old data"
      default: nil
      }
    }
    #expect(order == ["off", "address", "new data", "on"])
    #expect(host.address == address)
  }

  @Test func closingEndsEverythingWithoutSpinning() async throws {
    let fake = FakeController()
    let host = try await BLEHost.open(transport: fake)
    let scan = try await host.startScanning()
    fake.close()  // the "dongle" is unplugged
    let reason = await host.waitUntilClosed()
    #expect(reason is HCIError)
    for await _ in scan {}
    await #expect(throws: HCIError.self) {
      _ = try await host.connect(to: .randomStatic(), timeout: .seconds(1))
    }
  }
}
