import BatonHCI
import BatonHost
import BatonSystem
import Foundation

/// `baton-bench l2cap SPEC_A SPEC_B [--repeat N]`: two of our hosts on two
/// controllers of one radio; B advertises and listens, A connects and opens
/// an L2CAP channel; then 1 KB, 10 KB and 100 KB go A -> B (in messages of at
/// most the channel MTU). Prints, per size, the median time until B has every
/// byte, and HCI bytes per payload byte: H4 bytes A wrote to its controller
/// (commands and ACL), and A and B together (B's credits included).
enum L2CAPBenchmark {
  static func run(_ arguments: [String]) async throws {
    let specs = arguments.filter { !$0.hasPrefix("--") && Int($0) == nil }
    guard specs.count == 2 else {
      print(
        "usage: baton-bench l2cap SPEC_A SPEC_B [--repeat N]   (Tests/Scripts/bench-l2cap.sh runs it)"
      )
      return
    }
    var repeats = 5
    if let index = arguments.firstIndex(of: "--repeat"), index + 1 < arguments.count,
      let n = Int(arguments[index + 1])
    {
      repeats = max(1, n)
    }
    Logger.sink.threshold = .warning
    let a = try await BLEHost.open(controller: specs[0])
    let b = try await BLEHost.open(controller: specs[1])
    let listener = b.listen(psm: 0x0080)
    try await b.startAdvertising(data: [0x02, 0x01, 0x06], intervalMilliseconds: 20)
    let connection = try await a.connect(to: b.address, timeout: .seconds(5))
    let channel = try await a.openChannel(connection, psm: 0x0080)
    var iterator = listener.makeAsyncIterator()
    guard let accepted = await iterator.next() else { throw HCIError.closed }
    let buffers = a.controller.aclBuffers
    print(
      "L2CAP CoC on \(specs[0]) -> \(specs[1]): ACL buffers \(buffers.count) x \(buffers.length) bytes, "
        + "MTU \(channel.maximumMessageSize), peer MPS \(channel.remoteMPS), \(repeats) runs per size"
    )
    print("size      median time   throughput     HCI bytes/payload byte (sender)   (both hosts)")
    for size in [1_000, 10_000, 100_000] {
      var times: [Duration] = []
      var senderRatio = 0.0
      var totalRatio = 0.0
      for run in 0..<repeats {
        let payload = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ run) }
        let sentA = a.controller.statistics.bytesSent
        let sentB = b.controller.statistics.bytesSent
        let start = ContinuousClock.now
        let sender = Task {
          var offset = 0
          while offset < payload.count {
            let end = min(payload.count, offset + channel.maximumMessageSize)
            try await channel.send(Array(payload[offset..<end]))
            offset = end
          }
        }
        var received: [UInt8] = []
        while received.count < size, let message = try await accepted.receive() {
          received += message
        }
        times.append(ContinuousClock.now - start)
        try await sender.value
        guard received == payload else {
          print("transfer of \(size) bytes arrived corrupted")
          throw HCIError.invalidArgument("corrupted transfer")
        }
        // Let B's last credit packets go out before counting.
        try await Task.sleep(for: .milliseconds(20))
        senderRatio = Double(a.controller.statistics.bytesSent - sentA) / Double(size)
        totalRatio =
          Double(
            a.controller.statistics.bytesSent - sentA + b.controller.statistics.bytesSent - sentB)
          / Double(size)
      }
      times.sort()
      let median = times[times.count / 2]
      let seconds = median.secondsValue
      let label = "\(size / 1000) KB".padding(toLength: 10, withPad: " ", startingAt: 0)
      let time = String(format: "%8.1f ms", seconds * 1000).padding(
        toLength: 14, withPad: " ", startingAt: 0)
      let rate = String(format: "%7.1f KB/s", Double(size) / seconds / 1000).padding(
        toLength: 15, withPad: " ", startingAt: 0)
      print(
        "\(label)\(time)\(rate)\(String(format: "%6.3f", senderRatio))                            \(String(format: "%6.3f", totalRatio))"
      )
    }
    await channel.close()
    await a.disconnect(connection)
    await a.close()
    await b.close()
  }
}
