import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// CAP_NET_ADMIN (the HCI user channel's) stays permitted but is effective
/// on none of a running agent's threads (Capabilities, baton(1) SECURITY):
/// seen in /proc/PID/task/*/status of an agent started as root, which
/// holds every capability.
@Suite(.serialized) struct AgentCapabilitiesEndToEndTests {
  @Test(.enabled(if: getuid() == 0, "an agent holds CAP_NET_ADMIN only when started as root here"))
  func noThreadOfAnAgentHasNetAdminEffective() async throws {
    let group = try AgentGroup(count: 2)
    let (a, b) = (group.agents[0], group.agents[1])
    try group.startAll()
    #expect(await linked(a, to: ["agentB"]), "\(group.logs)")
    let pid = try #require(a.process?.pid)
    let tasks = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")
    #expect(tasks.count >= 4, "\(tasks)")
    for task in tasks {
      let status = try String(contentsOfFile: "/proc/\(pid)/task/\(task)/status", encoding: .utf8)
      let effective = try #require(Self.capabilities("CapEff", in: status))
      let permitted = try #require(Self.capabilities("CapPrm", in: status))
      let name = Self.field("Name", in: status) ?? task
      #expect(effective & (1 << 12) == 0, "thread \(name) has CAP_NET_ADMIN effective")
      #expect(permitted & (1 << 12) != 0, "thread \(name) lost CAP_NET_ADMIN from its permitted set")
    }
    _ = b
  }

  static func field(_ name: String, in status: String) -> String? {
    status.split(separator: "\n").first { $0.hasPrefix(name + ":") }
      .map { $0.dropFirst(name.count + 1).trimmingCharacters(in: .whitespaces) }
  }

  static func capabilities(_ name: String, in status: String) -> UInt64? {
    field(name, in: status).flatMap { UInt64($0, radix: 16) }
  }
}
