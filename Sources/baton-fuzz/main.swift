// baton-fuzz: coverage-guided fuzzing of every decoder of outside bytes with
// libFuzzer (issue 31). Tests/Scripts/fuzz.sh builds it with
// `-sanitize=fuzzer,address -D BATON_LIBFUZZER` into .build/fuzz and runs it;
// a plain build (which `swift build` makes) replays inputs instead, so that a
// crash found by the fuzzer can be run again with Swift's backtrace.
//
//   baton-fuzz list                 the targets, one a line
//   baton-fuzz seeds DIR            writes each target's seeds to DIR/TARGET/
//   baton-fuzz TARGET ARGS...       libFuzzer build: fuzzes TARGET (ARGS are
//                                   libFuzzer's: corpus folders, -max_total_time=N ...)
//                                   plain build: runs each file ARGS names once
import BatonFuzz
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// The target the libFuzzer callback feeds (set once, before the driver starts).
enum Selected {
  nonisolated(unsafe) static var target: FuzzTarget?
}

#if BATON_LIBFUZZER
  /// libFuzzer's entry point for a program with its own `main` (the fuzzer
  /// runtime's `main` is then not linked).
  @_silgen_name("LLVMFuzzerRunDriver")
  func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
  ) -> CInt

  /// One input (the fuzzer runtime's own `main`, which the linker pulls in
  /// though this program's `main` is the one that runs, names this symbol).
  @_cdecl("LLVMFuzzerTestOneInput")
  func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = size == 0 || data == nil ? [] : Array(UnsafeBufferPointer(start: data, count: size))
    Selected.target?.decode(input)
    return 0
  }
#endif

func fail(_ text: String) -> Never {
  FileHandle.standardError.write(Data(("baton-fuzz: " + text + "\n").utf8))
  exit(2)
}

let arguments = CommandLine.arguments
guard arguments.count >= 2 else {
  fail("usage: baton-fuzz list | seeds DIR | TARGET [libFuzzer options, corpus folders or files]")
}
switch arguments[1] {
case "list":
  for target in DecoderFuzzer.targets { print(target.name) }
case "seeds":
  guard arguments.count == 3 else { fail("usage: baton-fuzz seeds DIR") }
  for target in DecoderFuzzer.targets {
    let dir = arguments[2] + "/" + target.name
    do {
      try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
      for (i, seed) in target.seeds.enumerated() {
        try Data(seed).write(to: URL(fileURLWithPath: dir + "/" + String(format: "seed-%02d", i)))
      }
    } catch { fail("cannot write the seeds to \(dir): \(error)") }
  }
default:
  guard let target = DecoderFuzzer.target(named: arguments[1]) else {
    fail("no target \(arguments[1]); baton-fuzz list names them")
  }
  Selected.target = target
  #if BATON_LIBFUZZER
    // libFuzzer sees the program name and what follows the target's name.
    var argv: [UnsafeMutablePointer<CChar>?] =
      ([arguments[0]] + arguments.dropFirst(2)).map { strdup($0) }
    argv.append(nil)
    var argc = CInt(argv.count - 1)
    let status = argv.withUnsafeMutableBufferPointer { buffer -> CInt in
      var base = buffer.baseAddress
      return LLVMFuzzerRunDriver(&argc, &base, testOneInput)
    }
    exit(status)
  #else
    var files: [String] = []
    for path in arguments.dropFirst(2) where !path.hasPrefix("-") {
      var isDirectory: ObjCBool = false
      guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
        fail("no file \(path)")
      }
      if isDirectory.boolValue {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        files += names.sorted().map { path + "/" + $0 }
      } else {
        files.append(path)
      }
    }
    for file in files {
      guard let data = FileManager.default.contents(atPath: file) else {
        fail("cannot read \(file)")
      }
      target.decode([UInt8](data))
    }
    print("\(target.name): \(files.count) inputs, no crash")
  #endif
}
