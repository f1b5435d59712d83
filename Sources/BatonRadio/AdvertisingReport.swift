/// One advertisement heard while scanning, whichever backend heard it (HCI
/// decodes it from an LE Advertising Report; BlueZ from bluetoothd's
/// device properties).
public struct AdvertisingReport: Equatable, Sendable, CustomStringConvertible {
  public var address: BluetoothAddress
  public var addressType: AddressType
  /// The advertising (or scan response) data.
  public var data: [UInt8]
  public var rssi: Int
  /// The report's event type (legacy: 1 byte; extended: the 2-byte bit field).
  public var eventType: UInt16
  /// Whether it came as an LE Extended Advertising Report.
  public var extended: Bool

  public init(
    address: BluetoothAddress, addressType: AddressType, data: [UInt8], rssi: Int,
    eventType: UInt16 = 0,
    extended: Bool = false
  ) {
    self.address = address
    self.addressType = addressType
    self.data = data
    self.rssi = rssi
    self.eventType = eventType
    self.extended = extended
  }

  public var description: String {
    "\(address) (\(addressType)) rssi \(rssi) data \(data.count) bytes"
  }
}
