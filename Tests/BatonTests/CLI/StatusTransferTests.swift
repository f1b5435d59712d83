import BatonAgent
import BatonHandoff
import Foundation
import Testing

@testable import BatonCLI

/// Issue 28: `baton status` shows a peer's transfer under the peer, in the
/// words the agent logs; `--watch` prints the same line per peer.
@Suite struct StatusTransferTests {
  func transfer(_ peer: String, final: Bool = true) -> AgentStatus.Transfer {
    AgentStatus.Transfer(
      TransferProgress.Snapshot(
        peerName: peer, notesDone: 1200, notesTotal: 10000, bytesDone: 1_200_000,
        bytesTotal: 9_800_000, totalsFinal: final, bytesPerSecond: 85_000, secondsLeft: 100))
  }

  @Test func theTransferIsShownUnderItsPeer() {
    let now = Date(timeIntervalSince1970: 1000)
    var status = AgentStatus(
      name: "desk",
      peers: [
        AgentStatus.Peer(name: "laptop", address: "AA:BB", lastSeen: now, rssi: nil, link: "up")
      ])
    status.transfers = [transfer("laptop"), transfer("ph\u{1B}one", final: false)]
    let text = StatusFormatter(now: now).format(status)
    #expect(
      text.contains(
        "  laptop  AA:BB  link up  last seen 0 s ago\n"
          + "    receiving: 1200 of 10000 notes, 1.2 of 9.8 MB, 85 kB/s, 1m40s left\n"),
      "\(text)")
    // A peer the radio does not list by that name: on a line of its own, escaped.
    #expect(
      text.contains(
        "  from ph\\u{1b}one: 1200 of 10000+ notes, 1.2 of 9.8 MB+, 85 kB/s, at least 1m40s left\n"),
      "\(text)")
  }

  @Test func noTransferNoLine() {
    let status = AgentStatus(name: "desk")
    #expect(!StatusFormatter(now: Date()).format(status).contains("receiving"))
  }

  @Test func theJSONCarriesTheTransfer() throws {
    var status = AgentStatus(name: "desk")
    status.transfers = [transfer("laptop")]
    let json = String(decoding: ControlCoding.encode(status), as: UTF8.self)
    #expect(json.contains("\"transfers\":[{\"bytesDone\":1200000,\"bytesPerSecond\":85000"))
    let back = try ControlCoding.decode(AgentStatus.self, from: Array(json.utf8))
    #expect(back.transfers == status.transfers)
    // An agent from before transfers were reported: none.
    let old = try ControlCoding.decode(
      AgentStatus.self,
      from: Array(
        #"{"name":"desk","folders":[],"peers":[],"counters":{},"lastFailures":[]}"#.utf8))
    #expect(old.transfers == nil)
  }
}
