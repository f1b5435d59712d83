import BatonHandoff
import BatonRadio
import BatonSystem
import Synchronization

/// The new device's side of `baton pair CODE` on the radio (PROTOCOL.md
/// 14.7): opens the controller, scans for the pairing advertisement that
/// shows the code's slot, connects to its advertiser and runs the pairing
/// over the handoff PSM; then releases the controller, whatever happened.
/// Nothing is committed here: the caller commits the enrolment returned.
enum PairingSeeker {
  /// How long to look for the member's advertisement.
  static let searchTime: Duration = .seconds(30)
  static let connectTimeout: Duration = .seconds(10)

  struct Failure: Error, CustomStringConvertible {
    let description: String
  }

  static func pair(
    code: PairingCode, me: PairingIdentity, configuration: AgentConfiguration,
    log: Logger
  ) async throws -> PairingOutcome {
    let host = try await RadioHostOpener.open(
      configuration.controller, hciLog: configuration.hciLog, address: .randomStatic())
    do {
      let outcome = try await pair(code: code, me: me, on: host, log: log)
      await host.close()
      return outcome
    } catch {
      await host.close()
      throw error
    }
  }

  private static func pair(
    code: PairingCode, me: PairingIdentity, on host: any RadioHost, log: Logger
  ) async throws -> PairingOutcome {
    let slot = code.slot
    let reports = try await host.startScanning(accepting: {
      PairingAdvertisement.slot(in: $0) == slot
    })
    try await host.setScanning(true, everyReport: false)
    log.notice("looking for the member showing a code that starts \(code.slotText)")
    let expired = Mutex(false)
    let found: AdvertisingReport? = await Timers.shared.withDeadline(
      searchTime,
      onExpiry: {
        expired.withLock { $0 = true }
        await host.close()
      }
    ) {
      for await report in reports { return report }
      return nil
    }
    guard let found else {
      throw Failure(
        description: expired.withLock({ $0 })
          ? "no member showing a code that starts \(code.slotText) was heard within"
            + " \(searchTime.components.seconds) s; is 'baton pair' still waiting there, and in"
            + " range? Its code is valid for 5 minutes"
          : "the controller closed while looking for the member")
    }
    try? await host.setScanning(false, everyReport: false)
    log.info("connecting to \(found.address), which shows the code's slot")
    let channel = try await host.openChannel(
      to: found.address, addressType: found.addressType, psm: HandoffAgent.psm,
      timeout: connectTimeout)
    do {
      return try await Pairing.run(over: channel, newcomer: code, me: me)
    } catch {
      throw Failure(description: "\(error)")
    }
  }
}

extension PairingCode {
  /// The public slot as the code starts, `07`.
  var slotText: String { String(description.prefix(2)) }
}
