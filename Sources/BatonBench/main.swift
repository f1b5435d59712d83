// baton-bench: benchmarks that print figures (run through Tests/Scripts/bench-*.sh).
//   baton-bench notes [options]     index build time, save-to-update latency
//   baton-bench l2cap [options]     L2CAP transfer time and HCI overhead
//   baton-bench handoff [options]   save-to-peer-file latency between two agents
//   baton-bench scale [options]     issue 14: many notes, one save among many, memory
//   baton-bench scan [options]      issue 25: scan duty and wake-ups of a linked pair
//   baton-bench reach [options]     issue 25: how soon a peer coming into range is linked
import BatonSystem

#if canImport(Glibc)
  import Glibc
#endif

import Dispatch

// Swift concurrency runs on threads we own (see BatonExecutor's contract);
// main is synchronous so that the executors exist before any task.
BatonExecutor.install()

let arguments = Array(CommandLine.arguments.dropFirst())
let finished = DispatchSemaphore(value: 0)
Task.detached {
  await runBenchmark(arguments)
  finished.signal()
}
finished.wait()

@Sendable func runBenchmark(_ arguments: [String]) async {
do {
  switch arguments.first {
  case "notes": try await NotesBenchmark.run(Array(arguments.dropFirst()))
  case "l2cap": try await L2CAPBenchmark.run(Array(arguments.dropFirst()))
  case "handoff": try await HandoffBenchmark.run(Array(arguments.dropFirst()))
  case "scale": try await ScaleBenchmark.run(Array(arguments.dropFirst()))
  case "scan": try await ScanBenchmark.run(Array(arguments.dropFirst()))
  case "reach": try await ReachBenchmark.run(Array(arguments.dropFirst()))
  default:
    print("usage: baton-bench notes|l2cap|handoff|scale|scan|reach [options]")
    exit(2)
  }
} catch {
  print("baton-bench: \(error)")
  exit(1)
}
}
