import BatonTestSupport
import Foundation

@testable import BatonHandoff
@testable import BatonNotes
@testable import BatonStore
@testable import BatonSystem

/// One agent for tests: an engine over in-memory folders and a temporary state dir.
struct HandoffTestAgent {
  static let notesType = "org.example.baton.notes"
  static let otherType = "org.example.baton.journal"

  let name: String
  let key: GroupKey
  let stateDirectory: String
  let folders: [String: InMemoryNoteFolder]
  let policy: HandoffPolicy
  let engine: HandoffEngine
  /// The bounds on connections the radio would keep (fresh at a restart).
  let bounds: RadioBounds

  var folder: InMemoryNoteFolder { folders[Self.notesType]! }

  init(
    _ name: String, key: GroupKey, types: [String] = [notesType], policy: HandoffPolicy = .init(),
    stateDirectory: String? = nil, folders existing: [String: InMemoryNoteFolder]? = nil,
    gate: (any IncomingGate)? = nil
  ) throws {
    self.name = name
    self.key = key
    self.policy = policy
    self.stateDirectory =
      try stateDirectory ?? TestEnvironment.temporaryDirectory("handoff-\(name)").path
    var folders: [String: InMemoryNoteFolder] = [:]
    for type in types {
      folders[type] = existing?[type] ?? InMemoryNoteFolder(root: "/\(name)/\(type)")
    }
    self.folders = folders
    let store = try HandoffStore(directory: self.stateDirectory)
    engine = HandoffEngine(
      key: key, deviceName: name, store: store,
      folders: folders.map { HandoffFolder(activityType: $0.key, folder: $0.value, gate: gate) },
      policy: policy
    )
    bounds = RadioBounds(engine)
  }

  /// The same agent restarted: a new store connection and engine on the same state.
  func restarted() throws -> HandoffTestAgent {
    try HandoffTestAgent(
      name, key: key, types: Array(folders.keys), policy: policy, stateDirectory: stateDirectory,
      folders: folders)
  }

  /// A local save, as the folder watcher reports it.
  func save(_ path: String, _ text: String, type: String = notesType) async {
    folders[type]!.put(path, text)
    await engine.localSave(
      NoteSave(relativePath: path, bytes: Array(text.utf8)), activityType: type)
  }

  func counter(_ name: String) async -> Int { await engine.status().counters[name] ?? 0 }
}

/// Runs one session between two agents over an in-memory channel pair.
func runSession(
  _ initiator: HandoffTestAgent, _ responder: HandoffTestAgent, maximumMessageSize: Int = 512,
  breakAfter: Int? = nil, responderAddress: String? = nil
) async -> (Result<SessionSummary, any Error>, Result<SessionSummary, any Error>) {
  let (a, b) = InMemoryMessageChannel.pair(
    maximumMessageSize: maximumMessageSize, breakAfter: breakAfter)
  let responderAddress = responderAddress ?? "addr-\(responder.name)"
  async let first: Result<SessionSummary, any Error> = {
    do {
      return .success(
        try await initiator.engine.runSession(
          over: a, initiator: true, peerAddress: responderAddress))
    } catch { return .failure(error) }
  }()
  async let second: Result<SessionSummary, any Error> = {
    do {
      return .success(
        try await responder.engine.runSession(
          over: b, initiator: false, peerAddress: "addr-\(initiator.name)"))
    } catch { return .failure(error) }
  }()
  let results = await (first, second)
  initiator.bounds.ended(at: responderAddress, results.0.map { $0 })
  responder.bounds.ended(at: "addr-\(initiator.name)", results.1.map { $0 })
  return results
}

extension Result {
  var succeeded: Bool { if case .success = self { true } else { false } }
  var value: Success? { if case .success(let v) = self { v } else { nil } }
}

/// A link that `a` opened to `b`: both ends, after the handshake and LINK,
/// before either runs (`runLink`), so that a test can queue messages first
/// or speak for one side itself. `over`: the two channels (an in-memory pair
/// by default).
func openLink(
  _ a: HandoffTestAgent, _ b: HandoffTestAgent,
  over ends: (any MessageChannel, any MessageChannel)? = nil
) async throws -> (HandoffLink, HandoffLink) {
  let (ca, cb) = ends ?? InMemoryMessageChannel.pair(maximumMessageSize: 512)
  async let opened = a.engine.openLink(over: ca, peerAddress: "addr-\(b.name)")
  let outcome = try await b.engine.respond(over: cb, peerAddress: "addr-\(a.name)")
  let la = try await opened
  guard case .link(let lb) = outcome else {
    throw HandoffError.protocolViolation(peer: b.name, reason: "no link")
  }
  return (la, lb)
}

/// A's side of a link whose handshake B answered and whose B side never
/// runs (nothing answers A's keep-alive; a test may queue messages on it by
/// hand, as its reader would), and B's channel.
func linkToSilentPeer(_ a: HandoffTestAgent, _ b: HandoffTestAgent) async throws -> (
  HandoffLink, InMemoryMessageChannel
) {
  let (ca, cb) = InMemoryMessageChannel.pair(maximumMessageSize: 512)
  let (la, _) = try await openLink(a, b, over: (ca, cb))
  return (la, cb)
}
