import BatonRadio
import BatonSystem

/// Failures of the HCI layer and the LE host above it.
public enum HCIError: Error, CustomStringConvertible {
  /// The controller answered a command with a non-zero status.
  case commandFailed(command: String, status: HCIStatus)
  /// No Command Complete or Command Status within the timeout.
  case commandTimedOut(command: String, seconds: Double)
  /// A command's return parameters could not be decoded.
  case badReturnParameters(command: String, reason: String)
  /// The transport closed or failed; everything pending fails with this.
  case transportLost(reason: String)
  /// The host was closed by its owner.
  case closed
  /// The controller cannot do what bring-up needs.
  case unsupportedController(reason: String)
  /// A connection attempt did not complete in time.
  case connectionTimedOut(peer: BluetoothAddress, seconds: Double)
  /// The controller reported a failed connection.
  case connectionFailed(peer: BluetoothAddress, status: HCIStatus)
  /// An earlier timed-out attempt is still pending in the controller.
  case connectionAttemptPending(peer: BluetoothAddress)
  /// Bad argument from the caller.
  case invalidArgument(String)
  /// The btsnoop log could not be written.
  case logFailed(path: String, reason: String)
  /// The connection is gone.
  case notConnected(handle: UInt16)

  public var description: String {
    switch self {
    case .commandFailed(let command, let status):
      "HCI \(command) failed: \(status)"
    case .commandTimedOut(let command, let seconds):
      "HCI \(command) got no answer from the controller within \(seconds) s; "
        + "the controller may not support it or may be hung (reopen it)"
    case .badReturnParameters(let command, let reason):
      "HCI \(command) returned malformed parameters: \(reason)"
    case .transportLost(let reason):
      "the controller transport was lost (\(reason)); reopen the controller"
    case .closed:
      "the Bluetooth host was closed"
    case .unsupportedController(let reason):
      "the controller cannot be used: \(reason)"
    case .connectionTimedOut(let peer, let seconds):
      "connecting to \(peer) timed out after \(seconds) s; is it advertising and in range?"
    case .connectionFailed(let peer, let status):
      "connecting to \(peer) failed: \(status)"
    case .connectionAttemptPending(let peer):
      "an earlier connection attempt to \(peer) is still pending in the controller "
        + "(it did not confirm the cancel); wait for it or reopen the controller"
    case .invalidArgument(let text):
      "invalid argument: \(text)"
    case .logFailed(let path, let reason):
      "cannot write the HCI log \(path): \(reason)"
    case .notConnected(let handle):
      "connection 0x\(hex(handle)) is not connected"
    }
  }
}
