import Testing

@testable import BatonHCI
@testable import BatonHandoff
@testable import BatonRadio

/// PROTOCOL.md 3.1: resolvable addresses keyed with the group key and device id.
@Suite struct ResolvableAddressTests {
  let keys = HandoffKeys(groupKey: GroupKey.generate())
  let alice = DeviceID(rawValue: 0x0102_0304_0506_0708)
  let bob = DeviceID(rawValue: 0x1112_1314_1516_1718)

  @Test func freshAddressesResolveToTheirDeviceOnly() {
    var seen: Set<[UInt8]> = []
    for _ in 0..<200 {
      let address = ResolvableAddress(device: alice, keys: keys).bytes
      #expect(address.count == 6)
      #expect(address[5] & 0xC0 == 0x40, "resolvable private address marker")
      #expect(ResolvableAddress.resolves(address, to: alice, keys: keys))
      #expect(!ResolvableAddress.resolves(address, to: bob, keys: keys))
      seen.insert(address)
    }
    #expect(seen.count > 190, "the random part changes at every draw")
  }

  @Test func anotherGroupOrAnyChangedBitDoesNotResolve() {
    let address = ResolvableAddress(device: alice, keys: keys).bytes
    let stranger = HandoffKeys(groupKey: GroupKey.generate())
    #expect(!ResolvableAddress.resolves(address, to: alice, keys: stranger))
    for bit in 0..<46 {
      var flipped = address
      flipped[bit / 8] ^= 1 << UInt8(bit % 8)
      #expect(!ResolvableAddress.resolves(flipped, to: alice, keys: keys), "bit \(bit)")
    }
    #expect(!ResolvableAddress.resolves(BluetoothAddress.randomStatic().bytes, to: alice, keys: keys))
    #expect(!ResolvableAddress.resolves([1, 2, 3], to: alice, keys: keys))
  }

  @Test func theEngineNamesAPeerFromItsNextAddress() async throws {
    let key = GroupKey.generate()
    let a = try HandoffTestAgent("alice", key: key)
    let b = try HandoffTestAgent("bob", key: key)
    // Before any session bob cannot tell who alice is.
    #expect(await b.engine.peerName(resolving: a.engine.newAddress()) == nil)
    _ = await runSession(b, a)
    // After one, every new address of alice's resolves, and nobody else's does.
    for _ in 0..<5 { #expect(await b.engine.peerName(resolving: a.engine.newAddress()) == "alice") }
    #expect(await b.engine.peerName(resolving: b.engine.newAddress()) == nil)
    let carol = try HandoffTestAgent("carol", key: key)
    #expect(await b.engine.peerName(resolving: carol.engine.newAddress()) == nil)
  }
}
