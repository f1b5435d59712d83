import BatonAgent
import BatonSystem
import FoundationEssentials

#if canImport(Glibc)
  import Glibc
#endif

/// `baton continue [PEER]`: opens the current activity a peer handed over
/// last (PEER's, or the newest of all) in the user's editor, as clicking
/// Handoff's icon continues an activity.
enum ContinueCommand {
  /// Why there is nothing to open.
  enum Failure: Error, Equatable, CustomStringConvertible {
    case nothingHandedOver
    case unknownPeer(String, known: [String])
    case noFile(HandedOverNote)
    case gone(HandedOverNote, file: String)

    var description: String {
      switch self {
      case .nothingHandedOver:
        return "no activity has been handed over yet: a peer's note is opened once it has arrived"
          + " (since the agent started)"
      case .unknownPeer(let peer, let known):
        return "no activity from '\(peer)'; activities were handed over by: "
          + known.joined(separator: ", ")
      case .noFile(let note):
        return "\(note.type) \"\(note.title)\" from \(note.peer) is in no folder of this agent"
          + " any more (\(note.path))"
      case .gone(let note, let file):
        return "\(file): no longer exists (\"\(note.title)\" from \(note.peer));"
          + " it was deleted or renamed since it was handed over"
      }
    }
  }

  typealias HandedOverNote = AgentStatus.HandedOver

  /// The note to open among `handedOver` (newest first): PEER's (by name or
  /// device id), or the newest. `exists` tells whether a file is there.
  static func choose(
    _ handedOver: [HandedOverNote], peer: String?, exists: (String) -> Bool
  ) -> Result<(note: HandedOverNote, file: String), Failure> {
    guard !handedOver.isEmpty else { return .failure(.nothingHandedOver) }
    let newest = handedOver.max { $0.time < $1.time }!
    var chosen = newest
    if let peer {
      guard
        let match = handedOver.filter({ $0.peer == peer || $0.device == peer.lowercased() })
          .max(by: { $0.time < $1.time })
      else {
        var names: [String] = []
        for note in handedOver.sorted(by: { $0.time > $1.time }) where !names.contains(note.peer) {
          names.append(note.peer)
        }
        return .failure(.unknownPeer(peer, known: names))
      }
      chosen = match
    }
    guard let file = chosen.file else { return .failure(.noFile(chosen)) }
    guard exists(file) else { return .failure(.gone(chosen, file: file)) }
    return .success((chosen, file))
  }

  static func run(_ arguments: [String]) -> Int32 {
    var exit = ExitStatus.success
    guard
      let parsed = BatonCommand.parse(
        arguments, [ControlCommand.socketSpec, ControlCommand.helpSpec], command: "continue",
        usage: Usage.continueUsage, help: Usage.continueHelp, operands: 0...1,
        exitStatus: &exit)
    else { return exit }
    let path = AgentCommand.socketPath(parsed, BatonPaths())
    guard let response = ControlCommand.request(.status, path, exitStatus: &exit) else {
      return exit
    }
    let handedOver = response.status?.handedOver ?? []
    switch choose(handedOver, peer: parsed.operands.first, exists: isRegularFile) {
    case .failure(let failure):
      Console.error(failure.description.escapedForDisplay)
      return ExitStatus.failure
    case .success(let chosen):
      guard
        let editor = EditorCommand.choose(
          for: chosen.file, environment: ProcessInfo.processInfo.environment)
      else {
        Console.error(EditorCommand.noneFound)
        return ExitStatus.failure
      }
      Console.error(editor.exec().escapedForDisplay)
      return ExitStatus.failure
    }
  }

  static func isRegularFile(_ path: String) -> Bool {
    var info = stat()
    return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFREG
  }
}
