/// What a member advertises while `baton pair` shows a code (PROTOCOL.md
/// 14.7): the flags AD and a manufacturer-specific AD (company 0xFFFF, as
/// the beacon) holding `"bp"`, the pairing version and the code's public
/// slot. It carries nothing secret and no device id: a newcomer that was
/// told the code connects to the advertiser showing its slot.
public enum PairingAdvertisement {
  /// `02 01 06 || 07 ff ff ff 'b' 'p' version slot`: 11 bytes.
  public static func make(slot: UInt8) -> [UInt8] {
    [0x02, 0x01, 0x06, 0x07, 0xFF, 0xFF, 0xFF, 0x62, 0x70, PairingMessage.version, slot]
  }

  /// The slot of a pairing advertisement of this version inside a list of
  /// AD structures (as a scanner reports it); nil for anything else
  /// (a beacon, a stranger's, another version's, a truncated list).
  public static func slot(in data: [UInt8]) -> UInt8? {
    var i = 0
    while i < data.count {
      let length = Int(data[i])
      guard length > 0, length <= data.count - i - 1 else { return nil }
      if length == 7, data[i + 1] == 0xFF, data[i + 2] == 0xFF, data[i + 3] == 0xFF,
        data[i + 4] == 0x62, data[i + 5] == 0x70, data[i + 6] == PairingMessage.version,
        UInt32(data[i + 7]) < PairingCode.slotCount
      {
        return data[i + 7]
      }
      i += 1 + length
    }
    return nil
  }
}
