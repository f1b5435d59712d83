import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// A folder's `accept-command` and `after-command` (issue 28, "asked
/// before, told after") with real agents on the simulated radio: B asks a
/// script before it writes each of A's notes, and tells another after.
@Suite(.serialized) struct FolderCommandsEndToEndTests {
  @Test func theAcceptCommandDeclinesWaitsOrTimesOutAndTheAfterCommandIsTold() async throws {
    let group = try AgentGroup(count: 2)
    let (a, b) = (group.agents[0], group.agents[1])
    let base = group.base.path
    let asked = base + "/asked.log"
    let told = base + "/told.log"
    let release = base + "/release"
    // Declines secret*, waits for the release file on slow*, hangs on
    // hang* (its timeout declines it), accepts the rest.
    try script(
      base + "/ask.sh",
      """
      printf '%s|%s|%s|%s|%s|%s\\n' "$BATON_PATH" "$BATON_PEER" "$BATON_ORIGIN" "$BATON_SIZE" \
        "$BATON_ACTIVITY_TYPE" "$BATON_FOLDER" >> '\(asked)'
      case "$BATON_PATH" in
        secret*) exit 3 ;;
        slow*) while [ ! -e '\(release)' ]; do sleep 0.05; done ;;
        hang*) exec sleep 600 ;;
      esac
      exit 0
      """)
    try script(base + "/after.sh", "printf '%s\\n' \"$BATON_FILE\" >> '\(told)'\n")
    b.folderSettings = [
      "accept-command = \(base)/ask.sh --ignored-argument",
      "after-command = \(base)/after.sh",
      "command-timeout = 8",
    ]
    try group.startAll()
    #expect(await linked(a, to: ["agentB"]), "\(group.logs)")
    #expect(await linked(b, to: ["agentA"]), "\(group.logs)")

    // A note whose command waits does not hold back the next one.
    try a.save("slow.md", "Slow\nasked, and the answer takes a while\n")
    #expect(
      await eventually(30, "B asked about slow.md") { lines(asked).contains { $0.hasPrefix("slow.md|") } },
      "\(group.logs)")
    try a.save("ok.md", "Ok\naccepted at once\n")
    #expect(await eventually(30, "ok.md on B") { b.read("ok.md") != nil }, "\(group.logs)")
    #expect(b.read("slow.md") == nil)
    _ = FileManager.default.createFile(atPath: release, contents: nil)
    #expect(await eventually(30, "slow.md on B") { b.read("slow.md") != nil }, "\(group.logs)")

    // What the command was told.
    let okLine = lines(asked).first { $0.hasPrefix("ok.md|") }
    #expect(okLine == "ok.md|agentA|agentA|20|org.baton.note|notes", "\(lines(asked))")
    // After each write, the after-command got the file's path.
    let notes = b.notes.path
    #expect(
      await eventually(30, "the after-command told of both") {
        Set(lines(told)) == ["\(notes)/ok.md", "\(notes)/slow.md"]
      }, "\(lines(told)) \(group.logs)")

    // A non-zero exit declines; so does a command that outlives its timeout.
    try a.save("secret.md", "Secret\nnot for B\n")
    try a.save("hang.md", "Hang\nthe command never answers\n")
    #expect(
      await eventually(60, "both declined") { (try? counter(b, "declined")) == 2 }, "\(group.logs)")
    #expect(b.read("secret.md") == nil && b.read("hang.md") == nil, "\(b.files())")
    #expect(b.log.contains("was still running after 8"), "\(b.log)")
    // Declined notes stay with A, and are not asked about again at every push.
    try a.save("later.md", "Later\nafter the declines\n")
    #expect(await eventually(30, "later.md on B") { b.read("later.md") != nil }, "\(group.logs)")
    #expect(lines(asked).filter { $0.hasPrefix("secret.md|") }.count == 1, "\(lines(asked))")
    #expect(a.read("secret.md") != nil)
    #expect(!Set(lines(told)).contains("\(notes)/secret.md"))
  }

  private func script(_ path: String, _ body: String) throws {
    try ("#!/bin/sh\n" + body + "\n").write(toFile: path, atomically: true, encoding: .utf8)
    chmod(path, 0o755)
  }

  private func lines(_ path: String) -> [String] {
    ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(separator: "\n").map(
      String.init)
  }

  private func counter(_ agent: AgentProcess, _ name: String) throws -> Int {
    let status = try agent.status()
    let counters = status["counters"] as? [String: Any] ?? [:]
    return (counters[name] as? Int) ?? -1
  }
}
