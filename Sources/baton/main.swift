import BatonCLI
import BatonSystem

#if canImport(Glibc)
  import Glibc
#endif

// The executable is thin: everything lives in BatonCLI. Nothing may start a
// thread before this call (`baton agent` blocks its signals first thing).
// Swift concurrency runs on threads we own (see BatonExecutor's contract);
// they share one malloc arena (see HeapMemory.limitArenas).
// CAP_NET_ADMIN, when the binary or its unit grants it, stays permitted but
// effective only while an hciN adapter is opened (`Capabilities`).
Capabilities.lowerAtStart()
HeapMemory.limitArenas(to: 1)
BatonExecutor.install()
exit(BatonCommand.main(Array(CommandLine.arguments.dropFirst())))
