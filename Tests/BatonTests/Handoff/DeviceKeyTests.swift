import Testing

@testable import BatonHandoff

/// Device keys (PROTOCOL.md section 2, "Device keys"): the id follows from the
/// public key, signatures verify only with their key and message, and a
/// secret sealed to a device opens only with that device's key.
@Suite struct DeviceKeyTests {
  @Test func theIdAndFingerprintFollowFromThePublicKey() throws {
    let key = try #require(DeviceKey(seed: [UInt8](repeating: 7, count: 32)))
    let again = try #require(DeviceKey(seed: [UInt8](repeating: 7, count: 32)))
    #expect(key.publicKey == again.publicKey)
    #expect(key.deviceID == again.deviceID)
    #expect(key.deviceID.rawValue != 0)
    let other = DeviceKey.generate()
    #expect(other.deviceID != key.deviceID)
    #expect(key.publicKey.fingerprint.count == 19)
    #expect(key.publicKey.fingerprint != other.publicKey.fingerprint)
    #expect(DevicePublicKey(bytes: key.publicKey.bytes)?.deviceID == key.deviceID)
    #expect(DevicePublicKey(bytes: [1, 2, 3]) == nil)
    #expect(DeviceKey(seed: [1, 2, 3]) == nil)
  }

  @Test func aSignatureVerifiesOnlyWithItsKeyAndMessage() {
    let key = DeviceKey.generate()
    let other = DeviceKey.generate()
    let message = Array("baton".utf8)
    let signature = key.sign(message)
    #expect(signature.count == 64)
    #expect(key.publicKey.verifies(signature, of: message))
    #expect(!other.publicKey.verifies(signature, of: message))
    #expect(!key.publicKey.verifies(signature, of: message + [0]))
    var bent = signature
    bent[10] ^= 1
    #expect(!key.publicKey.verifies(bent, of: message))
    #expect(!key.publicKey.verifies(Array(signature.prefix(63)), of: message))
  }

  @Test func aSealedSecretOpensOnlyForItsDevice() throws {
    let key = DeviceKey.generate()
    let other = DeviceKey.generate()
    let secret = Array(0..<32).map { UInt8($0) }
    let sealed = try #require(key.publicKey.seal(secret))
    #expect(sealed.count == secret.count + DevicePublicKey.sealOverhead)
    #expect(key.openSealed(sealed) == secret)
    #expect(other.openSealed(sealed) == nil)
    var bent = sealed
    bent[bent.count - 1] ^= 1
    #expect(key.openSealed(bent) == nil)
    #expect(key.openSealed([1, 2]) == nil)
  }
}
