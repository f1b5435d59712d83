import BatonBlueZ
import BatonHCI
import BatonHost
import BatonRadio
import BatonSystem
/// Opens the `RadioHost` a controller spec names: `BlueZHost` for `bluez`
/// and `bluez:hciN`, our own `BLEHost` on an exclusive controller otherwise.
enum RadioHostOpener {
  static func open(_ spec: ControllerSpec, hciLog: String?, address: BluetoothAddress?)
    async throws -> any RadioHost
  {
    switch spec {
    case .bluez(let index):
      if hciLog != nil {
        Logger(label: "radio").warning(
          "hci-log applies to exclusive controllers only; with bluez, record with btmon -w FILE")
      }
      if let privacy = BluetoothdPrivacy.current(), !BluetoothdPrivacy.isPrivate(privacy) {
        Logger(label: "radio").notice(BluetoothdPrivacy.advice(privacy))
      }
      return try await BlueZHost.open(adapter: index.map { "hci\($0)" })
    case .exclusive(let transport):
      return try await BLEHost.open(
        controller: transport.description, hciLog: hciLog, address: address)
    }
  }

  /// Whether a failed open is worth another try with back-off even at the
  /// first start: the controller was reached but a bring-up command went
  /// unanswered, was refused or answered garbled, or the transport was lost
  /// meanwhile (a glitch on a UART, a controller still resetting). What cannot
  /// get better by waiting (no such controller, no permission, a controller
  /// without LE, an HCI log that cannot be written) ends the first start.
  static func mayRetry(_ error: any Error) -> Bool {
    switch error as? HCIError {
    case .commandFailed, .commandTimedOut, .badReturnParameters, .transportLost: true
    default: false
    }
  }
}
