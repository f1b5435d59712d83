import BatonAgent
import Foundation
import Testing

@testable import BatonCLI

/// `baton continue`: which editor, which note, and what it says when there
/// is none.
@Suite struct ContinueCommandTests {
  let note = "/home/u/notes/Groceries.md"

  @Test func visualComesBeforeEditorBeforeXdgOpen() {
    let everywhere: (String) -> Bool = { _ in true }
    #expect(
      EditorCommand.choose(
        for: note, environment: ["VISUAL": "code", "EDITOR": "vi", "PATH": "/usr/bin"],
        isExecutable: everywhere)?.arguments == ["code", note])
    #expect(
      EditorCommand.choose(
        for: note, environment: ["EDITOR": "vi", "PATH": "/usr/bin"], isExecutable: everywhere)?
        .arguments == ["vi", note])
    // Blank is unset, as for git.
    #expect(
      EditorCommand.choose(
        for: note, environment: ["VISUAL": " ", "EDITOR": "", "PATH": "/usr/bin"],
        isExecutable: everywhere)?.arguments == ["xdg-open", note])
  }

  @Test func theCommandIsSplitAtBlanksNotGivenToAShell() {
    let chosen = EditorCommand.choose(
      for: note, environment: ["VISUAL": "  emacsclient\t-c  --alternate-editor= ", "PATH": ""],
      isExecutable: { _ in false })
    #expect(chosen?.arguments == ["emacsclient", "-c", "--alternate-editor=", note])
    // Shell syntax is passed on as words, never interpreted.
    #expect(
      EditorCommand.choose(for: note, environment: ["EDITOR": "vi;rm"], isExecutable: { _ in false })?
        .arguments == ["vi;rm", note])
  }

  @Test func xdgOpenIsLookedUpOnPath() {
    var asked: [String] = []
    let found = EditorCommand.choose(
      for: note, environment: ["PATH": "/opt/none:/usr/bin"],
      isExecutable: { path in
        asked.append(path)
        return path == "/usr/bin/xdg-open"
      })
    #expect(found?.arguments == ["xdg-open", note])
    #expect(asked == ["/opt/none/xdg-open", "/usr/bin/xdg-open"])
    #expect(
      EditorCommand.choose(for: note, environment: ["PATH": "/opt/none"], isExecutable: { _ in false })
        == nil)
    #expect(EditorCommand.noneFound.contains("set VISUAL or EDITOR"))
  }

  func handedOver(_ peer: String, _ path: String, at seconds: TimeInterval) -> AgentStatus.HandedOver {
    AgentStatus.HandedOver(
      peer: peer, device: peer == "laptop" ? "00000000000000aa" : "00000000000000bb",
      type: "org.baton.note", title: "Title of \(path)", path: path,
      file: "/home/u/notes/" + path, time: Date(timeIntervalSince1970: seconds))
  }

  @Test func theNewestIsOpenedOrThatOfThePeerAsked() throws {
    let list = [handedOver("laptop", "a.md", at: 100), handedOver("phone", "b.md", at: 200)]
    let newest = try ContinueCommand.choose(list, peer: nil, exists: { _ in true }).get()
    #expect(newest.file == "/home/u/notes/b.md")
    let laptop = try ContinueCommand.choose(list, peer: "laptop", exists: { _ in true }).get()
    #expect(laptop.file == "/home/u/notes/a.md")
    let byID = try ContinueCommand.choose(list, peer: "00000000000000AA", exists: { _ in true })
      .get()
    #expect(byID.note.peer == "laptop")
  }

  @Test func eachFailureSaysWhatIsWrong() {
    let list = [handedOver("laptop", "a.md", at: 100), handedOver("phone", "b.md", at: 200)]
    func failure(_ list: [AgentStatus.HandedOver], _ peer: String?, exists: Bool = true)
      -> String?
    {
      if case .failure(let f) = ContinueCommand.choose(list, peer: peer, exists: { _ in exists }) {
        return f.description
      }
      return nil
    }
    #expect(failure([], nil)?.hasPrefix("no activity has been handed over yet") == true)
    #expect(failure([], "laptop")?.hasPrefix("no activity has been handed over yet") == true)
    #expect(
      failure(list, "tablet") == "no activity from 'tablet'; activities were handed over by: phone, laptop")
    #expect(
      failure(list, nil, exists: false)
        == "/home/u/notes/b.md: no longer exists (\"Title of b.md\" from phone); it was deleted or"
        + " renamed since it was handed over")
    var orphan = list[0]
    orphan.file = nil
    #expect(failure([orphan], nil)?.contains("is in no folder of this agent") == true)
  }

  @Test func statusShowsEachPeersActivityNextToItsLink() {
    let now = Date(timeIntervalSince1970: 1000)
    var status = AgentStatus(
      name: "desk",
      peers: [
        AgentStatus.Peer(name: "laptop", address: "AA:BB", lastSeen: now, rssi: nil, link: "up")
      ])
    status.handedOver = [
      handedOver("laptop", "a.md", at: 990), handedOver("phone", "b.md", at: 900),
    ]
    let text = StatusFormatter(now: now).format(status)
    #expect(
      text.contains(
        "  laptop  AA:BB  link up  last seen 0 s ago\n"
          + "    on \"Title of a.md\" (/home/u/notes/a.md), handed over 10 s ago\n"))
    #expect(
      text.contains(
        "  phone (out of range) was on \"Title of b.md\" (/home/u/notes/b.md), handed over 100 s ago\n"
      ))
  }
}
