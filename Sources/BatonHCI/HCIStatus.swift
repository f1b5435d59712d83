import BatonSystem

/// An HCI error code (Core spec Vol 1 Part F), with its name.
public struct HCIStatus: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
  public let rawValue: UInt8
  public init(rawValue: UInt8) { self.rawValue = rawValue }

  public static let success = HCIStatus(rawValue: 0x00)
  public static let unknownConnectionIdentifier = HCIStatus(rawValue: 0x02)
  public static let memoryCapacityExceeded = HCIStatus(rawValue: 0x07)
  public static let connectionLimitExceeded = HCIStatus(rawValue: 0x09)
  public static let commandDisallowed = HCIStatus(rawValue: 0x0C)
  public static let remoteUserTerminated = HCIStatus(rawValue: 0x13)
  public static let localHostTerminated = HCIStatus(rawValue: 0x16)

  /// The spec's name, e.g. "Command Disallowed".
  public var name: String { HCIStatus.names[rawValue] ?? "Unknown HCI Error" }

  /// "Command Disallowed (0x0C)".
  public var description: String { "\(name) (0x\(hex(rawValue)))" }

  private static let names: [UInt8: String] = [
    0x00: "Success", 0x01: "Unknown HCI Command", 0x02: "Unknown Connection Identifier",
    0x03: "Hardware Failure", 0x04: "Page Timeout", 0x05: "Authentication Failure",
    0x06: "PIN or Key Missing", 0x07: "Memory Capacity Exceeded", 0x08: "Connection Timeout",
    0x09: "Connection Limit Exceeded", 0x0A: "Synchronous Connection Limit Exceeded",
    0x0B: "Connection Already Exists", 0x0C: "Command Disallowed",
    0x0D: "Connection Rejected due to Limited Resources",
    0x0E: "Connection Rejected due to Security Reasons",
    0x0F: "Connection Rejected due to Unacceptable BD_ADDR",
    0x10: "Connection Accept Timeout Exceeded", 0x11: "Unsupported Feature or Parameter Value",
    0x12: "Invalid HCI Command Parameters", 0x13: "Remote User Terminated Connection",
    0x14: "Remote Device Terminated Connection due to Low Resources",
    0x15: "Remote Device Terminated Connection due to Power Off",
    0x16: "Connection Terminated by Local Host", 0x17: "Repeated Attempts",
    0x18: "Pairing Not Allowed", 0x19: "Unknown LMP PDU",
    0x1A: "Unsupported Remote Feature", 0x1E: "Invalid LMP Parameters",
    0x1F: "Unspecified Error", 0x20: "Unsupported LMP Parameter Value",
    0x21: "Role Change Not Allowed", 0x22: "LMP Response Timeout",
    0x23: "LMP Error Transaction Collision", 0x24: "LMP PDU Not Allowed",
    0x25: "Encryption Mode Not Acceptable", 0x28: "Instant Passed",
    0x29: "Pairing With Unit Key Not Supported", 0x2A: "Different Transaction Collision",
    0x3A: "Controller Busy", 0x3B: "Unacceptable Connection Parameters",
    0x3C: "Advertising Timeout", 0x3D: "Connection Terminated due to MIC Failure",
    0x3E: "Connection Failed to be Established", 0x3F: "MAC Connection Failed",
    0x40: "Coarse Clock Adjustment Rejected", 0x41: "Type0 Submap Not Defined",
    0x42: "Unknown Advertising Identifier", 0x43: "Limit Reached",
    0x44: "Operation Cancelled by Host", 0x45: "Packet Too Long",
  ]
}
