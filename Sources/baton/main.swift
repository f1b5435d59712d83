import BatonKit

#if canImport(Glibc)
  import Glibc
#endif

// The executable is thin: everything lives in BatonKit.
let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "keygen":
  print(GroupKey.generate().fileText, terminator: "")
default:
  let text = Array("usage: baton keygen\n".utf8)
  text.withUnsafeBytes { _ = write(2, $0.baseAddress, $0.count) }
  exit(2)
}
