import BatonRadio
import BatonSystem

/// H4 over a UART (`serial:/dev/ttyX[:BAUD]`): nRF52 or Zephyr `hci_uart`
/// dongles. Raw 8N1, RTS/CTS hardware flow control, 1000000 baud by default.
public final class SerialTransport: H4StreamTransport, @unchecked Sendable {
  // @unchecked: no state of its own beyond H4StreamTransport's.

  /// The baud rate used when the spec names none.
  public static let defaultBaud = HCITransportSpec.defaultBaud

  /// Opens `path` and configures the line.
  public init(
    path: String, baud: Int = SerialTransport.defaultBaud, hardwareFlowControl: Bool = true
  )
    throws
  {
    let spec = "serial:\(path):\(baud)"
    let fd: FileDescriptor
    do {
      fd = try FileDescriptor.open(path, [.readWrite, .noControllingTerminal])
    } catch let error as Errno {
      let hint =
        switch error {
        case .noEntry: "no such device; is the dongle plugged in?"
        case .permissionDenied: "permission denied; add the user to the dialout group"
        case .busy: "the device is busy; is another program using it?"
        default: "\(error)"
        }
      throw TransportError.openFailed(spec: spec, reason: hint)
    }
    do {
      try SerialLine.configure(fd, baud: baud, hardwareFlowControl: hardwareFlowControl)
    } catch {
      fd.closeIgnoringErrors()
      throw TransportError.openFailed(
        spec: spec, reason: "cannot set up the line (termios): \(error); is it a tty?")
    }
    do {
      try super.init(fd: fd, name: spec)
    } catch {
      fd.closeIgnoringErrors()
      throw error
    }
  }
}
