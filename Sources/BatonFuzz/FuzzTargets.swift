import FoundationEssentials
import BatonAgent
import BatonBlueZ
import BatonDBus
import BatonHCI
import BatonHandoff
import BatonHost
import BatonL2CAP
import BatonNotes
import BatonRadio
import BatonSystem

/// The decoders `DecoderFuzzer` runs, each with seeds from valid encodings.
enum FuzzTargets {
  static let key = GroupKey(bytes: [UInt8](repeating: 0x5A, count: GroupKey.byteCount))!
  static let keys = HandoffKeys(groupKey: key)
  static let maxNoteSize = 1 << 20

  static let all: [FuzzTarget] = [
    h4, hciEvent, acl, l2capSignal, advertisingReports, beacon, handshake, frame, frameRecovery,
    handoffMessage, linkMessage, versionVector, membership, keyFile, configuration, noteNames,
    dbusProperties, pairing,
  ]

  // MARK: HCI and L2CAP

  static let eventSeeds: [[UInt8]] = [
    [0x04, 0x05, 0x04, 0x00, 0x40, 0x00, 0x13],  // Disconnection Complete
    [0x04, 0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00],  // Command Complete (Reset)
    [0x04, 0x0F, 0x04, 0x00, 0x01, 0x0D, 0x20],  // Command Status
    [0x04, 0x13, 0x05, 0x01, 0x40, 0x00, 0x02, 0x00],  // Number Of Completed Packets
    [0x04, 0x3E, 0x13, 0x01, 0x00, 0x40, 0x00, 0x00, 0x01, 0x11, 0x22, 0x33, 0x44, 0x55, 0xC6,
      0x18, 0x00, 0x00, 0x00, 0xC8, 0x00, 0x00],  // LE Connection Complete
    [0x04, 0x3E, 0x1F, 0x0A, 0x00, 0x40, 0x00, 0x00, 0x01, 0x11, 0x22, 0x33, 0x44, 0x55, 0xC6]
      + [UInt8](repeating: 0, count: 12) + [0x18, 0x00, 0x00, 0x00, 0xC8, 0x00, 0x00],  // Enhanced
    [0x04, 0x3E, 0x0A, 0x03, 0x00, 0x40, 0x00, 0xA0, 0x00, 0x00, 0x00, 0x90, 0x01],  // Update
    advertisingEvent(extended: false), advertisingEvent(extended: true),
  ]

  static func advertisingEvent(extended: Bool) -> [UInt8] {
    let data = Beacon.seal(BeaconContent(activityHash: 0x123456, indexDigest: 0xABCDEF01), keys: keys)
    var p: [UInt8] = [extended ? 0x0D : 0x02, 0x01]
    if extended {
      p += [0x13, 0x00, 0x01, 0x11, 0x22, 0x33, 0x44, 0x55, 0x46, 0x01, 0x00, 0xFF, 0x7F, 0xC4]
      p += [UInt8](repeating: 0, count: 9) + [UInt8(data.count)] + data
    } else {
      p += [0x00, 0x01, 0x11, 0x22, 0x33, 0x44, 0x55, 0x46, UInt8(data.count)] + data + [0xC4]
    }
    return [0x04, 0x3E, UInt8(p.count)] + p
  }

  static let signalSeeds: [[UInt8]] = [
    L2CAPSignal(identifier: 1, body: .connectionRequest(psm: 0x80, sourceCID: 0x40, mtu: 512, mps: 247, credits: 8)).encoded,
    L2CAPSignal(identifier: 2, body: .connectionResponse(destinationCID: 0x41, mtu: 512, mps: 247, credits: 8, result: 0)).encoded,
    L2CAPSignal(identifier: 3, body: .flowControlCredit(cid: 0x40, credits: 4)).encoded,
    L2CAPSignal(identifier: 4, body: .disconnectionRequest(destinationCID: 0x40, sourceCID: 0x41)).encoded,
    L2CAPSignal(identifier: 5, body: .commandReject(reason: 0, data: [])).encoded,
  ]

  static let aclSeeds: [[UInt8]] = signalSeeds.map {
    ACLPacket(handle: 0x40, boundary: .firstFlushable, data: L2CAPFrame.encode(cid: 0x05, payload: $0)).encoded
  } + [
    ACLPacket(handle: 0x40, boundary: .firstFlushable, data: L2CAPFrame.encode(cid: 0x40, payload: [0x20, 0x00] + [UInt8](repeating: 0x41, count: 32))).encoded,
    ACLPacket(handle: 0x40, boundary: .continuing, data: [UInt8](repeating: 0x42, count: 20)).encoded,
  ]

  static func decodeACL(_ input: [UInt8]) {
    var reassembler = ACLReassembler()
    // The input may hold several ACL packets back to back (fragments).
    var rest = input[...]
    for _ in 0..<8 {
      guard rest.count >= 5 else { break }
      let length = Int(rest[rest.startIndex + 3]) | Int(rest[rest.startIndex + 4]) << 8
      let end = min(rest.endIndex, rest.startIndex + 5 + length)
      let packet = Array(rest[..<end])
      rest = rest[end...]
      guard let acl = try? ACLPacket.decode(packet) else { continue }
      if let pdu = try? reassembler.feed(acl), let (cid, payload) = try? L2CAPFrame.decode(pdu),
        cid == 0x05
      {
        _ = try? L2CAPSignal.decode(payload)
      }
    }
  }

  static let h4 = FuzzTarget(
    name: "h4", seeds: eventSeeds + aclSeeds.map { [0x02] + $0 } + [[0x01, 0x03, 0x0C, 0x00]]
  ) { input in
    var framer = H4Framer()
    // Fed in two pieces, as a stream delivers it.
    let cut = input.isEmpty ? 0 : Int(input[input.count / 2]) % (input.count + 1)
    framer.append(input[..<cut])
    framer.append(input[cut...])
    for _ in 0..<64 {
      guard let packet = try? framer.next() else { break }
      switch packet.first {
      case 0x04: _ = try? HCIEvent.decode(packet)
      case 0x02: decodeACL(Array(packet.dropFirst()))
      default: break
      }
    }
  }

  static let hciEvent = FuzzTarget(name: "hci-event", seeds: eventSeeds) { input in
    if let event = try? HCIEvent.decode(input) { _ = event.encoded; _ = "\(event)" }
  }

  static let acl = FuzzTarget(name: "acl", seeds: aclSeeds) { decodeACL($0) }

  static let l2capSignal = FuzzTarget(name: "l2cap-signal", seeds: signalSeeds) { input in
    if let signal = try? L2CAPSignal.decode(input) { _ = signal.encoded }
    _ = try? L2CAPFrame.decode(input)
  }

  static let advertisingReports = FuzzTarget(
    name: "advertising-report",
    seeds: [advertisingEvent(extended: false), advertisingEvent(extended: true)]
  ) { input in
    guard case .leAdvertisingReports(let reports)? = try? HCIEvent.decode(input) else { return }
    for report in reports {
      _ = Beacon.open(advertisingData: report.data, keys: keys)
      _ = "\(report)"
    }
  }

  // MARK: Handoff

  static let beacon = FuzzTarget(
    name: "beacon",
    seeds: [
      Beacon.seal(BeaconContent(activityHash: 1, indexDigest: 2), keys: keys),
      [0x05, 0x09, 0x61, 0x62, 0x63, 0x64] + Array(
        Beacon.seal(BeaconContent(activityHash: 1, indexDigest: 2), keys: keys).dropFirst(3)),
      PairingAdvertisement.make(slot: 7),
    ]
  ) { input in
    _ = Beacon.open(advertisingData: input, keys: keys)
    if input.count >= 8 { _ = BeaconContent(plaintext: Array(input.prefix(8))) }
    // A pairing advertisement comes in the same reports (PROTOCOL.md 14.7).
    _ = PairingAdvertisement.slot(in: input)
  }

  static let me = LocalIdentity(key: DeviceKey(seed: [UInt8](repeating: 42, count: 32))!, name: "fuzz")
  /// The two sides' ephemeral secrets, fixed so that the seeds are the same on
  /// every run.
  static let initiatorSecret = [UInt8](repeating: 5, count: 32)
  static let responderSecret = [UInt8](repeating: 6, count: 32)
  static let hello = SecureChannel.makeHello(
    ephemeral: HandoffCrypto.x25519PublicKey(secret: initiatorSecret))
  static let shared = HandoffCrypto.x25519(
    secret: initiatorSecret, peerPublic: HandoffCrypto.x25519PublicKey(secret: responderSecret))!
  static let challengeResponse = SecureChannel.makeChallengeResponse(
    hello: hello, ephemeral: HandoffCrypto.x25519PublicKey(secret: responderSecret),
    nonce: [UInt8](repeating: 3, count: 24), shared: shared, me: me, keys: keys)
  static let response = SecureChannel.makeResponse(
    hello: hello, challengeResponse: challengeResponse, nonce: [UInt8](repeating: 4, count: 24),
    shared: shared, me: me, keys: keys)

  /// The responder checks M1's shape and makes the X25519 secret of its key;
  /// the initiator makes it from M2's key and opens M2; the responder opens M3.
  static let handshake = FuzzTarget(
    name: "handshake", seeds: [hello, challengeResponse, response]
  ) { input in
    if input.count == SecureChannel.helloBytes, input[0] == SecureChannel.hello,
      input[1] == SecureChannel.handshakeVersion
    {
      _ = HandoffCrypto.x25519(
        secret: responderSecret, peerPublic: Array(input[SecureChannel.initiatorEphemeralRange]))
    }
    _ = SecureChannel.openChallengeResponse(
      input, hello: hello, ephemeralSecret: initiatorSecret, keys: keys)
    _ = SecureChannel.openResponse(
      input, hello: hello, challengeResponse: challengeResponse, shared: shared, keys: keys)
  }

  static let frameKey = [UInt8](repeating: 9, count: 32)
  static let frame = FuzzTarget(
    name: "frame",
    // Plaintext `kind || more || body`, as `SecureChannel` sends a message.
    seeds: messageSeeds.prefix(6).map {
      SecureChannel.sealFrame([$0[0], 0] + $0.dropFirst(), counter: 0, key: frameKey)
    }
  ) { input in
    if let plain = SecureChannel.openFrame(input, counter: 0, key: frameKey), plain.count >= 2 {
      _ = try? HandoffMessage.decode(
        kind: plain[0], body: Array(plain[2...]), maxNoteSize: maxNoteSize)
    }
  }

  /// A key holder's frames driving the frame layer's state machine
  /// (PROTOCOL.md section 5): each record `u8 op || u8 number || u8 ack ||
  /// u8 flags || u8 n || n bytes` is sealed with the peer's key as a data
  /// frame (op 0), a control frame (1) or a part (2), or taken as it is (3);
  /// op 4 seals a frame of ours of those bytes, then lets `number` × 10 ms
  /// pass (flags bit 0: our flow control holds frames back; bit 1: hours,
  /// not 10 ms). The op byte's two high bits are the key phase to seal in.
  static let frameRecovery = FuzzTarget(name: "frame-recovery", seeds: frameRecoverySeeds) { input in
    let none = FlowReport(framesSent: 0, creditsGranted: 0)
    var machine = FrameRecovery(sendKey: ourFrameKey, receiveKey: frameKey, messageSize: 256)
    var now = ContinuousClock.now
    var rest = input[...]
    while rest.count >= 5 {
      let raw = rest.removeFirst()
      let (op, phase) = ((raw & 0x3F) % 5, raw >> 6)
      let (number, ack, flags) = (rest.removeFirst(), rest.removeFirst(), rest.removeFirst())
      let n = min(Int(rest.removeFirst()), rest.count)
      let bytes = Array(rest.prefix(n))
      rest = rest.dropFirst(n)
      let actions: FrameRecovery.Actions
      switch op {
      case 4:
        _ = machine.sealData(Array(bytes.prefix(machine.largestPayload)), report: none, now: now)
        now += flags & 2 == 0 ? .milliseconds(10 * Int(number)) : .seconds(3600 * Int(number))
        actions = machine.expire(report: none, canSend: flags & 1 == 0, now: now)
      case 3:
        actions = machine.receive(bytes, report: none, now: now)
      default:
        let marker = [FrameRecovery.dataMarker, FrameRecovery.controlMarker, FrameRecovery.partMarker][
          Int(op)]
        let header = FrameRecovery.Header(
          marker: marker, phase: phase, number: UInt64(number), ack: UInt64(ack), report: none,
          flags: flags)
        actions = machine.receive(
          FrameRecovery.seal(bytes, header: header, key: phaseKeys[Int(phase)]), report: none,
          now: now)
      }
      if actions.failure != nil { return }
    }
  }
  static let ourFrameKey = [UInt8](repeating: 8, count: 32)
  /// The peer's keys of key phases 0 to 3 (PROTOCOL.md section 5, "Key updates").
  static let phaseKeys: [[UInt8]] = {
    var keys = [frameKey]
    for _ in 1...3 { keys.append(FrameRecovery.nextKey(keys.last!)) }
    return keys
  }()

  /// Frames in order; a frame lost and asked for, sent again in parts; a
  /// control frame showing frames and parts held; a damaged frame.
  static let frameRecoverySeeds: [[UInt8]] = {
    func record(_ op: UInt8, _ number: UInt8, ack: UInt8 = 0, flags: UInt8 = 0, _ bytes: [UInt8])
      -> [UInt8]
    { [op, number, ack, flags, UInt8(bytes.count)] + bytes }
    let note = [UInt8](repeating: 0x61, count: 120)
    return [
      record(0, 0, [6, 0, 1, 2]) + record(0, 1, [14, 0]) + record(4, 5, [15, 0]),
      record(4, 0, note) + record(4, 0, [14, 0]) + record(1, 0, flags: 1, [1, 2])
        + record(4, 160, [14, 0]) + record(1, 1, ack: 2, []),
      record(0, 1, [14, 0]) + record(2, 0, flags: 1, [3] + note.prefix(47))
        + record(2, 0, flags: 0, [3] + note.prefix(47)) + record(2, 0, flags: 2, [3] + note.prefix(26)),
      record(4, 0, note) + record(1, 0, flags: 1, [1, 0, 0, 0, 1, 5]) + record(4, 75, [14, 0]),
      record(3, 0, [0x11] + [UInt8](repeating: 0, count: 60)) + record(0, 0, [14, 0]),
      // An hour passes; we seal in phase 1; the peer's frame of phase 1.
      record(4, 1, flags: 2, [14, 0]) + record(4, 0, [15, 0]) + record(0x40, 0, [14, 0]),
    ]
  }()

  static let sampleVersion = VersionVector([
    DeviceID(rawValue: 1): 3, DeviceID(rawValue: 2): .max, DeviceID(rawValue: 0xFFFF_FFFF): 1,
  ])
  /// Two devices' vouchers (PROTOCOL.md section 7.5); a decoder reads any
  /// 64 bytes as a signature.
  static let sampleVouchers: Vouchers = {
    var v = Vouchers()
    v.set([UInt8](repeating: 7, count: 64), for: DeviceID(rawValue: 1))
    v.set([UInt8](repeating: 9, count: 64), for: DeviceID(rawValue: 0xFFFF_FFFF))
    return v
  }()
  static let sampleEntry = HandoffIndexEntry(
    activityType: "org.baton.note", path: "dir/a.md", hash: ContentHash(of: Array("x".utf8)),
    size: 1, version: sampleVersion, vouchers: sampleVouchers, origin: DeviceID(rawValue: 1))

  /// `kind || body` of every message.
  static let messageSeeds: [[UInt8]] = {
    let payload = ActivityPayload(
      activityType: "org.baton.note", title: "A title", path: "dir/a.md", version: sampleVersion,
      vouchers: sampleVouchers, origin: DeviceID(rawValue: 1), originName: "alice",
      hash: ContentHash(of: Array("x".utf8)),
      content: Array("# A title\nbody\n".utf8))
    let messages: [HandoffMessage] = [
      .getActivity, .getIndex, .activity(sampleEntry, title: "t", indexDigest: [UInt8](repeating: 7, count: 32)),
      .activity(nil, title: "", indexDigest: [UInt8](repeating: 7, count: 32)),
      .index([sampleEntry, sampleEntry]), .turn(indexDigest: 3, [sampleEntry]),
      .getNodes([.init(depth: 0, prefix: 0, wantsEntries: false), .init(depth: 2, prefix: 0xAB, wantsEntries: true)]),
      .nodes([.children(Array(repeating: .init(count: 2, fingerprint: 9), count: 16)), .entries([sampleEntry])]),
      .getNote(activityType: "org.baton.note", path: "dir/a.md"), .note(payload),
      .noteUnavailable(activityType: "org.baton.note", path: "a.md", reason: .unknown),
      .done(activityHash: 1, indexDigest: 2), .error(code: 1, text: "no"),
    ] + linkMessages
    return messages.map { [$0.kind.rawValue] + $0.body }
  }()

  /// The messages only a link carries (PROTOCOL.md section 6.2).
  static let linkMessages: [HandoffMessage] = [
    .link(maxNoteSize: 1 << 20, root: .entries([sampleEntry])),
    .link(
      maxNoteSize: 1 << 20,
      root: .children(Array(repeating: .init(count: 1, fingerprint: 2), count: 16))),
    .ping, .pong, .have([sampleEntry]), .gone([sampleEntry]),
    .moved(from: sampleEntry, to: sampleEntry),
  ]
  static let firstLinkKind = HandoffMessage.Kind.link.rawValue
  static let linkKinds = UInt8(HandoffMessage.Kind.moved.rawValue - firstLinkKind + 1)

  /// `index || body`, the kind being the index-th link kind (any byte picks one).
  static let linkMessage = FuzzTarget(
    name: "link-message",
    seeds: linkMessages.map { [$0.kind.rawValue - firstLinkKind] + $0.body }
  ) { input in
    guard let first = input.first else { return }
    if let message = try? HandoffMessage.decode(
      kind: firstLinkKind + first % linkKinds, body: Array(input.dropFirst()),
      maxNoteSize: maxNoteSize)
    {
      _ = message.body
    }
  }

  static let handoffMessage = FuzzTarget(name: "handoff-message", seeds: messageSeeds) { input in
    guard let kind = input.first else { return }
    if let message = try? HandoffMessage.decode(
      kind: kind, body: Array(input.dropFirst()), maxNoteSize: maxNoteSize)
    {
      _ = message.body
    }
  }

  static let versionVector = FuzzTarget(
    name: "version-vector", seeds: [sampleVersion.encoded, VersionVector().encoded]
  ) { input in
    if let v = try? VersionVector.decode(input) {
      _ = v.merged(with: sampleVersion)
      _ = v.compare(sampleVersion)
      _ = v.encoded
    }
  }

  // MARK: Membership (PROTOCOL.md section 13)

  static let memberKeys = (0x41...0x43).map {
    DeviceKey(seed: [UInt8](repeating: UInt8($0), count: 32))!
  }
  /// A small group's records (the rekey's seals are stand-ins of the right
  /// size, so the seeds are the same on every run).
  static let memberRecords: [MembershipRecord] = {
    let (alice, bob, carol) = (memberKeys[0], memberKeys[1], memberKeys[2])
    let ids = [alice.deviceID, bob.deviceID].sorted()
    return [
      .signed(.found(subject: alice.publicKey, name: "alice", wallTime: 1), by: alice),
      .signed(
        .add(subject: bob.publicKey, name: "bob", sponsor: alice.deviceID, epoch: 0, wallTime: 2),
        by: alice),
      .signed(
        .add(subject: carol.publicKey, name: "carol", sponsor: bob.deviceID, epoch: 0, wallTime: 3),
        by: bob),
      .signed(
        .remove(subject: carol.deviceID, signer: alice.deviceID, epoch: 0, wallTime: 4), by: alice),
      .signed(
        .rekey(
          epoch: 1, signer: alice.deviceID,
          secrets: ids.map { .init(device: $0, sealed: [UInt8](repeating: 0xE0, count: 80)) }),
        by: alice),
    ]
  }()

  /// A set of records (`u32 count || blobs`) or one record, merged into a
  /// device's membership as an agent would merge what a peer sent.
  static let membership = FuzzTarget(
    name: "membership",
    seeds: memberRecords.map(\.encoded) + [
      {
        var m = Membership(device: memberKeys[1])
        _ = m.insert(memberRecords)
        return m.encodedRecords
      }()
    ]
  ) { input in
    var view = Membership(device: memberKeys[1])
    if let records = try? Membership.decodeRecords(input) {
      _ = view.insert(records)
    } else {
      _ = view.insert(encoded: input)
    }
    _ = view.members
    _ = view.needsRekey
    _ = view.digest
    // The same bytes as a pairing's enrolment for this device (14.8).
    _ = try? Enrolment.open(input, device: memberKeys[1])
  }

  // MARK: Text

  static let keyFile = FuzzTarget(
    name: "key-file",
    seeds: [Array(key.fileText.utf8), Array(("# comment\n" + key.fileText).utf8)]
  ) { input in
    _ = try? GroupKey(parsing: String(decoding: input, as: UTF8.self), path: "fuzz")
  }

  static let loader = ConfigurationLoader(
    paths: BatonPaths(environment: ["HOME": "/nonexistent-baton-fuzz"]), currentDirectory: "/")
  static let configuration = FuzzTarget(
    name: "config",
    seeds: [
      Array(
        """
        [agent]
        name = laptop
        controller = hci0
        key-file = ~/.config/baton/key
        advertising-interval = 200
        address-rotation = 15
        max-note-size = 1M
        allowed-peers = desk, phone
        ; comment
        # comment
        [folder notes]
        path = ~/notes
        activity-type = org.baton.note
        pattern = *.md

        """.utf8),
      Array("[agent]\nmax-note-size = 18446744073709551615K\n[folder a b]\npath=/\n".utf8),
    ]
  ) { input in
    _ = try? loader.parse(
      String(decoding: input, as: UTF8.self), file: "fuzz", checkFileSystem: false)
  }

  static let noteNames = FuzzTarget(
    name: "note-names",
    seeds: ["a.md", "dir/sub/note.md", ".git/hooks/pre-commit", "run.sh", "a\u{202E}dm.sh",
      "x\n<2>agent: FORGED\n.md", "../../etc/passwd.md", "a//b.md", String(repeating: "é", count: 200) + ".md",
      "note.md~", ".#note.md", "a.md.swp"].map { Array($0.utf8) }
  ) { input in
    let name = String(decoding: input, as: UTF8.self)
    _ = try? NoteNames().validate(name)
    _ = NoteNames().isNote(name)
    _ = EntryAdmission.isSafePath(name)
    _ = name.count > 0 ? NoteNames.conflictName(for: name, peer: name, time: input.count) : ""
  }

  // MARK: D-Bus

  static let devicePath = "/org/bluez/hci0/dev_11_22_33_44_55_66"
  static let deviceProperties = DBusValue.stringVariantDictionary([
    "Address": .string("11:22:33:44:55:66"), "AddressType": .string("random"),
    "RSSI": .int16(-60), "Connected": .boolean(false),
    "ManufacturerData": .array(
      elementSignature: "{qv}",
      [
        .dictEntry(
          .uint16(0xFFFF),
          .variant(.bytes(Array(Beacon.seal(BeaconContent(activityHash: 1, indexDigest: 2), keys: keys)
            .dropFirst(Beacon.header.count)))))
      ]),
  ])
  static let adapterProperties = DBusValue.stringVariantDictionary([
    "Address": .string("00:11:22:33:44:55"), "Powered": .boolean(true), "Discovering": .boolean(false),
  ])

  /// bluetoothd's properties as baton reads them: a GetManagedObjects reply
  /// (`a{oa{sa{sv}}}`), PropertiesChanged (`s a{sv} as`) and InterfacesAdded
  /// (`o a{sa{sv}}`), each value in `DBusValueBytes`'s form. The values go
  /// through the accessors and `BlueZHost.update` and `report` as the host's
  /// signal handlers call them, and the report's data through `Beacon.open`.
  static let dbusProperties = FuzzTarget(
    name: "dbus-properties",
    seeds: [
      DBusValueBytes.encode([
        .array(
          elementSignature: "{oa{sa{sv}}}",
          [
            .dictEntry(
              .objectPath("/org/bluez/hci0"),
              .array(elementSignature: "{sa{sv}}", [.dictEntry(.string("org.bluez.Adapter1"), adapterProperties)])),
            .dictEntry(
              .objectPath(devicePath),
              .array(elementSignature: "{sa{sv}}", [.dictEntry(.string("org.bluez.Device1"), deviceProperties)])),
          ])
      ]),
      DBusValueBytes.encode([
        .string("org.bluez.Device1"), deviceProperties, .array(elementSignature: "s", []),
      ]),
      DBusValueBytes.encode([
        .objectPath(devicePath),
        .array(elementSignature: "{sa{sv}}", [.dictEntry(.string("org.bluez.Device1"), deviceProperties)]),
      ]),
    ]
  ) { input in
    let arguments = DBusValueBytes.decode(input)
    func device(_ properties: [String: DBusValue]) {
      let device = BlueZHost.update(BlueZHost.Device(), with: properties.mapValues(\.unwrapped))
      if let report = BlueZHost.report(device) {
        _ = Beacon.open(advertisingData: report.data, keys: keys)
        _ = "\(report)"
      }
    }
    // GetManagedObjects (BlueZHost.bringUp).
    for (_, value) in arguments.first?.stringDictionary ?? [:] {
      let interfaces = value.stringDictionary ?? [:]
      if let d = interfaces["org.bluez.Device1"]?.stringDictionary { device(d) }
      _ = interfaces["org.bluez.Adapter1"]?.stringDictionary?["Powered"]?.unwrapped.bool
      _ = interfaces["org.bluez.MediaTransport1"]?.stringDictionary?["State"]?.unwrapped.string
      _ = interfaces["org.bluez.AdvertisementMonitorManager1"]?.stringDictionary?[
        "SupportedMonitorTypes"]?.elements?.compactMap(\.string)
    }
    // PropertiesChanged and InterfacesAdded (propertiesChanged, objectsChanged).
    if arguments.count >= 2 {
      _ = arguments[0].string
      if let changed = arguments[1].stringDictionary { device(changed) }
      if let d = arguments[1].stringDictionary?["org.bluez.Device1"]?.stringDictionary { device(d) }
      _ = arguments[1].elements?.compactMap(\.string)
    }
    for argument in arguments.prefix(4) {
      _ = argument.description
      _ = argument.signature
    }
  }
}
