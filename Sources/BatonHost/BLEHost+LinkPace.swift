import BatonHCI
import BatonSystem

/// The driver of each central connection's `LinkPace`: it hears every L2CAP
/// PDU that crosses (sent: `HCIController.onSend`; received: the data
/// handler), keeps one timer per connection while it is busy, and sends LE
/// Connection Update when the pace changes.
extension BLEHost {
  /// A PDU was queued for `handle` (any thread).
  func trafficCrossed(handle: UInt16) {
    guard let connection = state.withLock({ $0.connections[handle] }) else { return }
    trafficCrossed(on: connection)
  }

  /// A PDU crossed on `connection`, or it was made.
  func trafficCrossed(on connection: LEConnection) {
    perform(connection.withPace { $0.traffic(at: .now) }, on: connection)
  }

  private func perform(_ actions: [LinkPace.Action], on connection: LEConnection) {
    for action in actions {
      switch action {
      case .askForPace:
        Task { await askForPace(on: connection) }
      case .check(let time):
        Timers.shared.schedule(after: time - .now) { [weak self, weak connection] in
          guard let self, let connection, connection.isConnected else { return }
          perform(connection.withPace { $0.check(at: .now) }, on: connection)
        }
      }
    }
  }

  /// Asks the controller for the pace `connection` should have now (so two
  /// asks that overtake each other still end on the latest).
  private func askForPace(on connection: LEConnection) async {
    guard let wanted = connection.wantedPace, connection.isConnected else { return }
    let parameters = paceSchedule.parameters(for: wanted)
    do {
      _ = try await controller.send(.leConnectionUpdate(handle: connection.handle, parameters))
      log.debug(
        "\(connection): asked for the \(wanted) pace (\(Self.milliseconds(parameters.intervalMin))"
          + " to \(Self.milliseconds(parameters.intervalMax)) ms)")
    } catch {
      // The link works at any pace; the next change asks again.
      log.info("\(connection): the controller refused the \(wanted) pace: \(error)")
    }
  }

  /// LE Connection Update Complete: the interval the connection now has.
  func connectionUpdated(_ update: HCIEvent.ConnectionUpdateComplete) {
    guard update.status == .success,
      let connection = state.withLock({ $0.connections[update.handle] })
    else { return }
    connection.intervalChanged(to: update.interval)
    log.debug("\(connection): events every \(Self.milliseconds(update.interval)) ms")
  }

  private static func milliseconds(_ units: UInt16) -> String {
    let micros = Int(units) * 1250
    return micros % 1000 == 0 ? "\(micros / 1000)" : "\(Double(micros) / 1000)"
  }
}
