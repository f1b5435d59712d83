import BatonCLI

#if canImport(Glibc)
  import Glibc
#endif

// The executable is thin: everything lives in BatonCLI. Nothing may start a
// thread before this call (`baton agent` blocks its signals first thing).
exit(BatonCommand.main(Array(CommandLine.arguments.dropFirst())))
