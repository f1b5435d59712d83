import BatonTestSupport
import Foundation
import Synchronization
import Testing

@testable import BatonHandoff
@testable import BatonSystem

/// Pairing by a short code (PROTOCOL.md section 14): both sides over
/// in-memory channels, and each state machine fed by hand.
@Suite struct PairingTests {
  typealias Instant = ContinuousClock.Instant

  static func identity(_ seed: UInt8, _ name: String) -> PairingIdentity {
    PairingIdentity(
      name: name, key: DeviceKey(seed: [UInt8](repeating: seed, count: 32))!.publicKey)
  }
  static let alice = identity(1, "alice")
  static let carol = identity(2, "carol")
  static let dave = identity(3, "dave")
  static let code = PairingCode(slot: 7, secret: 42913)!

  /// A clock the test sets.
  final class TestClock: Sendable {
    let start = ContinuousClock.now
    let offset = Mutex(Duration.zero)
    var now: Instant { start + offset.withLock { $0 } }
    func advance(_ d: Duration) { offset.withLock { $0 += d } }
  }

  /// How often the member's enrolment closure ran, and for whom.
  final class Enrolments: Sendable {
    let calls = Mutex<[PairingIdentity]>([])
    let bytes: [UInt8]
    init(_ bytes: [UInt8]) { self.bytes = bytes }
    func enrol(_ who: PairingIdentity) -> [UInt8] {
      calls.withLock { $0.append(who) }
      return bytes
    }
    var count: Int { calls.withLock { $0.count } }
  }

  typealias Result2 = (
    member: Result<PairingOutcome, PairingError>, newcomer: Result<PairingOutcome, PairingError>
  )

  /// Runs a member with `offer` against a newcomer typing `typed`.
  static func pair(
    offer: PairingOffer, typed: PairingCode, newcomer: PairingIdentity = carol,
    enrolments: Enrolments, clock: TestClock = TestClock(), breakAfter: Int? = nil,
    messageSize: Int = 512
  ) async -> Result2 {
    let (a, b) = InMemoryMessageChannel.pair(
      maximumMessageSize: messageSize, breakAfter: breakAfter)
    async let member = capture {
      try await Pairing.run(
        over: a, member: offer, me: alice, now: { clock.now },
        enrol: { enrolments.enrol($0) })
    }
    async let joined = capture {
      try await Pairing.run(over: b, newcomer: typed, me: newcomer)
    }
    return await (member, joined)
  }

  static func capture(_ body: () async throws -> PairingOutcome) async -> Result<
    PairingOutcome, PairingError
  > {
    do { return .success(try await body()) } catch let error as PairingError {
      return .failure(error)
    } catch {
      Issue.record("not a PairingError: \(error)")
      return .failure(.refusedByMember)
    }
  }

  // MARK: The exchange

  @Test(arguments: [0, 40, 300, 5000])
  func rightCodeEnrolsOnceAndShowsEachOthersKeys(size: Int) async throws {
    let enrolment = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7) }
    let enrolments = Enrolments(enrolment)
    let offer = PairingOffer(code: Self.code, issued: TestClock().start)
    let result = await Self.pair(
      offer: offer, typed: Self.code, enrolments: enrolments, messageSize: 200)
    let member = try result.member.get()
    let newcomer = try result.newcomer.get()
    #expect(member.peer == Self.carol)
    #expect(member.enrolment == nil)
    #expect(newcomer.peer == Self.alice)
    #expect(newcomer.enrolment == enrolment)
    #expect(newcomer.fingerprint == Self.alice.key.fingerprint)
    #expect(member.fingerprint == Self.carol.key.fingerprint)
    #expect(enrolments.calls.withLock { $0 } == [Self.carol])
    #expect(offer.current == .spent)
  }

  @Test func wrongCodeIsRefusedOnBothSidesAndSpendsTheCode() async throws {
    let enrolments = Enrolments([1, 2, 3])
    let offer = PairingOffer(code: Self.code, issued: TestClock().start)
    let typo = PairingCode(slot: 7, secret: 42914)!
    let result = await Self.pair(offer: offer, typed: typo, enrolments: enrolments)
    #expect(result.member.pairingFailure == .wrongCode(.member))
    #expect(result.newcomer.pairingFailure == .wrongCode(.newcomer))
    #expect(
      "\(PairingError.wrongCode(.member))"
        == "the code was wrong (or was typed on another machine); run 'baton pair' again for"
        + " a new code")
    #expect("\(PairingError.wrongCode(.newcomer))".hasSuffix("ask for a new code"))
    #expect(enrolments.count == 0)
    #expect(offer.current == .spent)
    // One attempt: the right code is refused now.
    let again = await Self.pair(offer: offer, typed: Self.code, enrolments: enrolments)
    #expect(again.member.pairingFailure == .codeSpent)
    #expect(again.newcomer.pairingFailure == .codeSpent)
    #expect(enrolments.count == 0)
  }

  @Test func aSecondNewcomerIsRefusedWhileTheFirstAttemptRuns() async throws {
    let enrolments = Enrolments([9])
    let clock = TestClock()
    let offer = PairingOffer(code: Self.code, issued: clock.start)
    let (a, b) = InMemoryMessageChannel.pair()
    async let first = Self.capture {
      try await Pairing.run(
        over: a, member: offer, me: Self.alice, now: { clock.now },
        enrol: { enrolments.enrol($0) })
    }
    // The first newcomer, by hand: P1 out, P2 back (so the code is claimed).
    var carol = try PairingNewcomer(code: Self.code, me: Self.carol)
    try await b.send(carol.hello)
    let p2 = try #require(try await b.receive())
    #expect(offer.current == .inUse)
    // A second machine with the same code meanwhile.
    let second = await Self.pair(
      offer: offer, typed: Self.code, newcomer: Self.dave, enrolments: enrolments)
    #expect(second.member.pairingFailure == .codeInUse)
    #expect(second.newcomer.pairingFailure == .codeInUse)
    #expect("\(PairingError.codeInUse)".contains("this code is in use"))
    // The first goes on and succeeds.
    guard case .send(let p3) = carol.receive(p2) else {
      Issue.record("no P3")
      return
    }
    for m in p3 { try await b.send(m) }
    let p4 = try #require(try await b.receive())
    guard case .finished(let p5, let outcome) = carol.receive(p4) else {
      Issue.record("no enrolment")
      return
    }
    for m in p5 { try await b.send(m) }
    #expect(outcome.enrolment == [9])
    #expect(try await first.get().peer == Self.carol)
    #expect(enrolments.calls.withLock { $0 } == [Self.carol])
    #expect(offer.current == .spent)
  }

  /// The pair breaks after P1, P2, P3, P4: neither side succeeds, and the
  /// member (which commits on its success) records nothing.
  @Test(arguments: 1...4)
  func anInterruptionAtAnyMessageEnrolsNobody(after messages: Int) async throws {
    let enrolments = Enrolments([7, 7, 7])
    let offer = PairingOffer(code: Self.code, issued: TestClock().start)
    let result = await Self.pair(
      offer: offer, typed: Self.code, enrolments: enrolments, breakAfter: messages)
    #expect(result.member.pairingFailure != nil)
    #expect(result.newcomer.pairingFailure != nil)
    #expect(offer.current == .spent)
    // The enrolment is asked for only after P3 arrived.
    #expect(enrolments.count == (messages >= 3 ? 1 : 0))
    for error in [result.member.pairingFailure, result.newcomer.pairingFailure].compactMap({ $0 }) {
      #expect("\(error)".contains("nothing was enrolled"), "\(error)")
    }
  }

  @Test func anExpiredCodeIsRefusedAndSaysHowLongACodeLasts() async throws {
    let enrolments = Enrolments([1])
    let clock = TestClock()
    let offer = PairingOffer(code: Self.code, issued: clock.start, lifetime: .seconds(300))
    #expect(!offer.expired(at: clock.now + .seconds(299)))
    clock.advance(.seconds(301))
    let result = await Self.pair(
      offer: offer, typed: Self.code, enrolments: enrolments, clock: clock)
    #expect(result.member.pairingFailure == .codeExpired(minutes: 5, .member))
    #expect(result.newcomer.pairingFailure == .codeExpired(minutes: 5, .newcomer))
    #expect("\(PairingError.codeExpired(minutes: 5, .newcomer))".contains("valid for 5 minutes"))
    #expect(enrolments.count == 0)
    // A clock that went backwards does not revive a code either.
    let early = PairingOffer(code: Self.code, issued: clock.now)
    #expect(early.expired(at: clock.start))
  }

  @Test func aCallerThatRefusesTheNewcomerEnrolsNobody() async throws {
    struct Removed: Error, CustomStringConvertible {
      var description: String { "carol was removed from the group" }
    }
    let offer = PairingOffer(code: Self.code, issued: TestClock().start)
    let (a, b) = InMemoryMessageChannel.pair()
    async let member = Self.capture {
      try await Pairing.run(
        over: a, member: offer, me: Self.alice, enrol: { _ in throw Removed() })
    }
    let newcomer = await Self.capture {
      try await Pairing.run(over: b, newcomer: Self.code, me: Self.carol)
    }
    #expect(await member.pairingFailure == .enrolmentRefused("carol was removed from the group"))
    #expect(newcomer.pairingFailure == .refusedByMember)
  }

  /// A hostile newcomer: a valid P1, then junk for P3. The member reports
  /// it, spends the code and never builds an enrolment.
  @Test func junkAfterP1SpendsTheCodeAndEnrolsNobody() async throws {
    let enrolments = Enrolments([1])
    let offer = PairingOffer(code: Self.code, issued: TestClock().start)
    let (a, b) = InMemoryMessageChannel.pair()
    async let member = Self.capture {
      try await Pairing.run(
        over: a, member: offer, me: Self.alice, enrol: { enrolments.enrol($0) })
    }
    let hostile = try PairingNewcomer(code: Self.code, me: Self.carol)
    try await b.send(hostile.hello)
    let p2 = try #require(try await b.receive())
    #expect(p2.first == 0x22)
    try await b.send([0x23, 1, 2, 3])
    #expect(
      await member.pairingFailure
        == .malformed(step: "P3", reason: "4 bytes, not 33", .member))
    // The member said why, then closed.
    #expect(try await b.receive() == PairingMessage.makeAbort(.malformed))
    #expect(try await b.receive() == nil)
    #expect(enrolments.count == 0)
    #expect(offer.current == .spent)
  }

  @Test func aSilentMemberTimesOut() async throws {
    let (_, b) = InMemoryMessageChannel.pair()
    let result = await Self.capture {
      try await Pairing.run(
        over: b, newcomer: Self.code, me: Self.carol, timeout: .milliseconds(50))
    }
    #expect(result.pairingFailure == .timeout(step: "P2", after: .milliseconds(50), .newcomer))
    #expect("\(result.pairingFailure!)".contains("sent no P2 within 0.05 seconds"))
  }

  @Test func anEnrolmentTooLargeOrForMessagesTooSmallIsRefused() throws {
    func confirmed() throws -> PairingMember {
      var newcomer = try PairingNewcomer(code: Self.code, me: Self.carol)
      var member = PairingMember(code: Self.code, me: Self.alice)
      guard case .send(let p2) = member.receive(newcomer.hello),
        case .send(let p3) = newcomer.receive(p2[0]),
        case .enrol = member.receive(p3[0])
      else { throw PairingError.codeSpent }
      return member
    }
    var large = try confirmed()
    let size = PairingMessage.maxEnrolmentBytes + 1
    #expect(
      large.enrol([UInt8](repeating: 0, count: size), messageSize: 512)
        == .failed(.enrolmentTooLarge(size), send: [PairingMessage.makeAbort(.refused)]))
    var small = try confirmed()
    #expect(small.enrol([1], messageSize: 199) == .failed(.channelTooSmall(199), send: []))
    // The largest enrolment goes out in parts that each fit.
    var largest = try confirmed()
    guard
      case .send(let parts) = largest.enrol(
        [UInt8](repeating: 3, count: PairingMessage.maxEnrolmentBytes), messageSize: 200)
    else {
      Issue.record("the largest enrolment was refused")
      return
    }
    #expect(parts.allSatisfy { $0.count <= 200 })
    #expect(parts.count == (PairingMessage.maxEnrolmentBytes + 178) / 179)
  }

  @Test func aChannelTooSmallIsRefused() async throws {
    let (_, b) = InMemoryMessageChannel.pair(maximumMessageSize: 100)
    let result = await Self.capture {
      try await Pairing.run(over: b, newcomer: Self.code, me: Self.carol)
    }
    #expect(result.pairingFailure == .channelTooSmall(100))
  }

  // MARK: Hostile and malformed messages, machine by machine

  static func validExchange() throws -> (p1: [UInt8], p2: [UInt8], p3: [UInt8], p4: [[UInt8]]) {
    var newcomer = try PairingNewcomer(code: code, me: carol)
    var member = PairingMember(code: code, me: alice)
    guard case .send(let p2) = member.receive(newcomer.hello),
      case .send(let p3) = newcomer.receive(p2[0]),
      case .enrol = member.receive(p3[0]),
      case .send(let p4) = member.enrol(Array(repeating: 5, count: 400), messageSize: 200)
    else { throw PairingError.refusedByMember }
    return (newcomer.hello, p2[0], p3[0], p4)
  }

  @Test func everyTruncationAndBitFlipOfP1IsRefusedWithAReason() throws {
    let valid = try Self.validExchange().p1
    var inputs = (0..<valid.count).map { Array(valid[..<$0]) }
    inputs.append(valid + [0])
    for i in 0..<valid.count where i != 2 {  // byte 2 is the slot
      var m = valid
      m[i] ^= 0x40
      inputs.append(m)
    }
    for m in inputs {
      var member = PairingMember(code: Self.code, me: Self.alice)
      var claims = 0
      let step = member.receive(m) {
        claims += 1
        return nil
      }
      // A flipped share or key may still decode: then CPace runs and P2 goes
      // out, but the newcomer's tag (P3) can never match.
      if case .send = step { continue }
      guard case .failed(let error, let send) = step else {
        Issue.record("P1 of \(m.count) bytes: \(step)")
        continue
      }
      #expect(!"\(error)".isEmpty)
      #expect(send.count == 1 && send[0].first == PairingMessage.abort)
      if m.count < 3 { #expect(claims == 0) }
    }
  }

  @Test func aP1ForAnotherSlotOrVersionDoesNotSpendTheCode() throws {
    let valid = try Self.validExchange().p1
    var slot = valid
    slot[2] = 8
    var member = PairingMember(code: Self.code, me: Self.alice)
    var claimed = false
    #expect(
      member.receive(slot) {
        claimed = true
        return nil
      } == .fail(.wrongSlot(code: 7, asked: 8)))
    #expect(!claimed && !member.claimed)
    var version = valid
    version[1] = 2
    var other = PairingMember(code: Self.code, me: Self.alice)
    #expect(other.receive(version) == .fail(.unsupportedVersion(2, .member)))
    #expect(!other.claimed)
  }

  @Test func identityAndNonCanonicalSharesAreRefused() throws {
    let valid = try Self.validExchange().p1
    var identity = valid
    identity.replaceSubrange(19..<51, with: [UInt8](repeating: 0, count: 32))
    var member = PairingMember(code: Self.code, me: Self.alice)
    #expect(member.receive(identity) == .fail(.share(.shareIsIdentity)))
    var nonCanonical = valid
    nonCanonical.replaceSubrange(19..<51, with: [UInt8](repeating: 0xff, count: 32))
    var second = PairingMember(code: Self.code, me: Self.alice)
    #expect(second.receive(nonCanonical) == .fail(.share(.shareNotAnElement)))
  }

  @Test func aReflectedP1IsRefused() throws {
    let newcomer = try PairingNewcomer(code: Self.code, me: Self.alice)
    var member = PairingMember(code: Self.code, me: Self.alice)
    guard
      case .failed(.malformed(let step, let reason, .member), _) = member.receive(newcomer.hello)
    else {
      Issue.record("a P1 with the member's own key was not refused")
      return
    }
    #expect(step == "P1" && reason.contains("own key"))
  }

  @Test func damagedP2P3P4AndP5AreRefused() throws {
    let (p1, p2, p3, p4) = try Self.validExchange()
    #expect(p4.count == 3)
    // P2: every truncation and every flipped byte.
    for cut in 0..<p2.count {
      var newcomer = try PairingNewcomer(code: Self.code, me: Self.carol)
      _ = p1
      guard case .failed = newcomer.receive(Array(p2[..<cut])) else {
        Issue.record("P2 cut at \(cut) accepted")
        continue
      }
    }
    // A P2 meant for another P1 (another sid and share) fails the tag.
    var other = try PairingNewcomer(code: Self.code, me: Self.carol)
    #expect(other.receive(p2) == .fail(.wrongCode(.newcomer)))
    // P3, P4, P5 through a member and a newcomer that reached that step.
    var newcomer = try PairingNewcomer(code: Self.code, me: Self.carol)
    var member = PairingMember(code: Self.code, me: Self.alice)
    guard case .send(let q2) = member.receive(newcomer.hello) else { throw PairingError.codeSpent }
    guard case .send(let q3) = newcomer.receive(q2[0]) else { throw PairingError.codeSpent }
    var badTag = q3[0]
    badTag[5] ^= 1
    var copy = member
    #expect(copy.receive(badTag) == .fail(.wrongCode(.member)))
    var short = member
    guard
      case .failed(.malformed(step: "P3", _, .member), _) = short.receive(Array(q3[0].dropLast()))
    else {
      Issue.record("short P3 accepted")
      return
    }
    #expect(member.receive(q3[0]) == .enrol(Self.carol))
    guard case .send(let parts) = member.enrol([1, 2, 3], messageSize: 200) else {
      throw PairingError.codeSpent
    }
    var flipped = parts[0]
    flipped[flipped.count - 1] ^= 1
    var n1 = newcomer
    guard case .failed(.malformed(step: "P4", _, .newcomer), _) = n1.receive(flipped) else {
      Issue.record("damaged P4 accepted")
      return
    }
    // Parts from another exchange (p4 above) do not open here.
    var n2 = newcomer
    guard case .failed = n2.receive(p4[0]) else {
      Issue.record("foreign P4 accepted")
      return
    }
    guard case .finished(let p5, let outcome) = newcomer.receive(parts[0]) else {
      throw PairingError.codeSpent
    }
    #expect(outcome.enrolment == [1, 2, 3])
    var m1 = member
    #expect(
      m1.receive(Array(p5[0].dropLast()))
        == .fail(
          .malformed(step: "P5", reason: "it does not open under the pairing key", .member)))
    guard case .finished(_, let done) = member.receive(p5[0]) else { throw PairingError.codeSpent }
    #expect(done.peer == Self.carol)
    // Anything after the end is refused, not acted on.
    guard case .failed = member.receive(p5[0]) else {
      Issue.record("a message after the end accepted")
      return
    }
    _ = p3
  }

  @Test func enrolmentPartsOutOfOrderAreRefused() throws {
    var newcomer = try PairingNewcomer(code: Self.code, me: Self.carol)
    var member = PairingMember(code: Self.code, me: Self.alice)
    guard case .send(let q2) = member.receive(newcomer.hello),
      case .send(let q3) = newcomer.receive(q2[0]),
      case .enrol = member.receive(q3[0]),
      case .send(let parts) = member.enrol([UInt8](repeating: 1, count: 500), messageSize: 200)
    else { throw PairingError.codeSpent }
    #expect(parts.count == 3)
    guard
      case .failed(.malformed(step: "P4", let reason, .newcomer), _) = newcomer.receive(parts[1])
    else {
      Issue.record("part 1 before part 0 accepted")
      return
    }
    #expect(reason.contains("part 0 was next"))
  }

  /// A hostile member (one that knows the code) sends more than 256 KiB.
  @Test func theNewcomerRefusesAnEnrolmentOverItsLimit() throws {
    let sid = [UInt8](repeating: 9, count: 16)
    let ya = CPaceTests.bytes("cpace_ya")
    let yb = CPaceTests.bytes("cpace_yb")
    var newcomer = try PairingNewcomer(code: Self.code, me: Self.carol, sid: sid, scalar: ya)
    var member = PairingMember(code: Self.code, me: Self.alice, scalar: yb)
    guard case .send(let p2) = member.receive(newcomer.hello),
      case .send = newcomer.receive(p2[0])
    else { throw PairingError.codeSpent }
    let cpace = try CPace(
      role: .responder, password: Self.code.password, sid: sid,
      channel: PairingMessage.channel(slot: Self.code.slot),
      associatedData: PairingMessage.associatedData(Self.alice), scalar: yb)
    let isk = try cpace.finish(
      peerShare: Array(newcomer.hello[19..<51]),
      peerAssociatedData: PairingMessage.associatedData(Self.carol))
    let key = PairingMessage.Keys(isk: isk).enrol
    let piece = [UInt8](repeating: 1, count: 60_000)
    for index in 0..<4 {
      let part = PairingMessage.makeEnrolmentPart(piece, index: UInt16(index), count: 5, key: key)
      #expect(newcomer.receive(part) == .send([]))
    }
    let last = PairingMessage.makeEnrolmentPart(piece, index: 4, count: 5, key: key)
    #expect(
      newcomer.receive(last)
        == .fail(.malformed(step: "P4", reason: "the enrolment passes 262144 bytes", .newcomer)))
  }

  @Test func anAbortFromTheMemberIsReported() throws {
    var newcomer = try PairingNewcomer(code: Self.code, me: Self.carol)
    #expect(newcomer.receive(PairingMessage.makeAbort(.codeInUse)) == .failed(.codeInUse, send: []))
    var unknown = try PairingNewcomer(code: Self.code, me: Self.carol)
    guard case .failed(.peerAborted, []) = unknown.receive([PairingMessage.abort, 200]) else {
      Issue.record("an unknown abort was not reported")
      return
    }
  }

  @Test func randomBytesNeverTrapEitherMachine() throws {
    var generator = SystemRandomNumberGenerator()
    for _ in 0..<300 {
      let m = (0..<Int.random(in: 0..<200, using: &generator)).map { _ in
        UInt8.random(in: 0...255, using: &generator)
      }
      var member = PairingMember(code: Self.code, me: Self.alice)
      var newcomer = try PairingNewcomer(code: Self.code, me: Self.carol)
      if case .finished = member.receive(m) { Issue.record("member accepted noise") }
      if case .finished = newcomer.receive(m) { Issue.record("newcomer accepted noise") }
    }
  }

  // MARK: The code

  @Test func codesPrintAndParseBack() throws {
    for _ in 0..<200 {
      let code = PairingCode.generate()
      #expect(try PairingCode(parsing: code.description) == code)
      #expect(code.description.count == 10)
      #expect(code.password.count == 6)
    }
    let low = PairingCode(slot: 0, secret: 0)!
    #expect(low.description == "00-000-000")
    #expect(PairingCode(slot: 99, secret: 999_999)!.description == "99-999-999")
    #expect(PairingCode(slot: 100, secret: 0) == nil)
    #expect(PairingCode(slot: 0, secret: 1_000_000) == nil)
    #expect(Self.code.description == "07-042-913")
    #expect(Self.code.password == Array("042913".utf8))
    for typed in [
      "07-042-913", "07 042 913", "07042913", " 07--042-913 ", "0-7042-91-3", "07\t042913",
    ] {
      #expect(try PairingCode(parsing: typed) == Self.code, "\(typed)")
    }
  }

  @Test(arguments: [
    "", "07-042-91", "07-042-9130", "07-O42-913", "07.042.913", "०७०४२९१३", "07-042-913x",
  ])
  func badCodesNameTheInputAndTheForm(typed: String) {
    #expect(throws: PairingCode.ParseError.self) { try PairingCode(parsing: typed) }
    do {
      _ = try PairingCode(parsing: typed)
    } catch {
      #expect("\(error)".contains("'\(typed)'"))
      #expect("\(error)".contains("NN-NNN-NNN"))
    }
  }

  @Test func aLongOrControlFilledInputIsQuotedShortAndHarmless() {
    let long = String(repeating: "-", count: 10_000) + "x"
    #expect(throws: PairingCode.ParseError.self) { try PairingCode(parsing: long) }
    let error = PairingCode.ParseError(input: long, problem: "p")
    #expect("\(error)".hasPrefix("'" + String(repeating: "-", count: 40) + "...'"))
    let escape = PairingCode.ParseError(input: "07\u{1b}[2J", problem: "p")
    #expect("\(escape)".hasPrefix("'07\\u{1b}[2J'"))
  }

  @Test func slotsAndSecretsSpreadOverTheirRanges() {
    var slots = Set<UInt8>()
    var high = false
    for _ in 0..<2000 {
      let code = PairingCode.generate()
      slots.insert(code.slot)
      if code.secret >= 500_000 { high = true }
    }
    #expect(slots.count > 80)
    #expect(high)
  }
}

extension Result {
  var pairingFailure: Failure? {
    if case .failure(let error) = self { return error }
    return nil
  }
}
