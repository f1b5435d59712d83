import Testing

@testable import BatonHCI
@testable import BatonHandoff
@testable import BatonSystem

/// BatonSystem's one byte codec, and the errors each layer makes of it.
@Suite struct ByteCodingTests {
  @Test func whatTheWriterWritesTheReaderReads() throws {
    var w = ByteWriter()
    w.u8(0xAB)
    w.u16(0x1234)
    w.u32(0xDEAD_BEEF)
    w.u64(0x0102_0304_0506_0708)
    w.raw([9, 9])
    #expect(
      w.bytes == [
        0xAB, 0x34, 0x12, 0xEF, 0xBE, 0xAD, 0xDE, 8, 7, 6, 5, 4, 3, 2, 1, 9, 9,
      ])
    var r = ByteReader<WireError>(w.bytes)
    #expect(try r.u8() == 0xAB)
    #expect(try r.u16() == 0x1234)
    #expect(try r.u32() == 0xDEAD_BEEF)
    #expect(try r.u64() == 0x0102_0304_0506_0708)
    #expect(try r.take(2) == [9, 9])
    try r.expectEnd()
  }

  @Test func runningOutThrowsEachLayersError() {
    var hci = ByteReader(Array([1, 2, 3]), decoding: "HCI event")
    #expect(throws: HCIDecodeError.truncated("HCI event", needed: 4, got: 3)) { try hci.u32() }
    #expect(throws: HCIDecodeError.truncated("HCI event", needed: 0, got: 3)) {
      try hci.take(-1)
    }
    _ = try? hci.u8()
    #expect(throws: HCIDecodeError.oversized("HCI event", expected: 1, got: 3)) {
      try hci.expectEnd()
    }
    var wire = WireReader([1, 2, 3])
    #expect(throws: WireError("needed 8 bytes at offset 0, have 3")) { try wire.u64() }
    _ = try? wire.u16()
    #expect(throws: WireError("1 unexpected trailing bytes")) { try wire.expectEnd() }
  }
}
