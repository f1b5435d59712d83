import CBatonShims
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// One command-line option.
public struct OptionSpec: Sendable, Equatable {
  /// `--long`, without the dashes.
  public var long: String?
  /// `-s`.
  public var short: Character?
  /// Whether it takes an argument (`--config FILE`, `--config=FILE`, `-fFILE`).
  public var takesArgument: Bool

  public init(long: String?, short: Character? = nil, takesArgument: Bool = false) {
    self.long = long
    self.short = short
    self.takesArgument = takesArgument
  }

  /// `--long` or `-s`, for messages and lookups.
  public var name: String { long.map { "--" + $0 } ?? "-" + String(short!) }
}

/// The result of parsing: options in order, then the operands.
public struct ParsedOptions: Sendable, Equatable {
  /// Each option seen, by its `name`, with its argument.
  public var options: [(name: String, value: String?)]
  /// The remaining arguments: operands, and everything after `--`.
  public var operands: [String]

  public static func == (a: ParsedOptions, b: ParsedOptions) -> Bool {
    a.operands == b.operands && a.options.map(\.name) == b.options.map(\.name)
      && a.options.map(\.value) == b.options.map(\.value)
  }

  /// Whether the option `name` (`--json`) was given.
  public func has(_ name: String) -> Bool { options.contains { $0.name == name } }
  /// The last value given for `name` (later options win, as usual).
  public func value(_ name: String) -> String? { options.last { $0.name == name }?.value }
}

/// A usage error: bad option, missing argument, wrong operands. The
/// message is one line; the caller adds the usage and exits 2.
public struct UsageError: Error, Sendable, Equatable, CustomStringConvertible {
  public var message: String
  public init(_ message: String) { self.message = message }
  public var description: String { message }
}

/// glibc's `getopt_long(3)` behind a Swift interface: GNU conventions
/// (`--opt=value`, `--opt value`, `-ovalue`, clustered short options,
/// unambiguous prefixes of long options, `--` ends options), with operands
/// permuted to the end unless `stopAtFirstOperand` (the POSIX way, used for
/// the word before a subcommand).
public enum OptionParser {
  /// getopt_long keeps its state in C globals: one parse at a time.
  private static let lock = Mutex(())

  public static func parse(
    _ arguments: [String], options specs: [OptionSpec], stopAtFirstOperand: Bool = false,
    programName: String = "baton"
  ) throws(UsageError) -> ParsedOptions {
    let result: Result<ParsedOptions, UsageError> = lock.withLock { _ in
      parseLocked(arguments, specs, stopAtFirstOperand, programName)
    }
    return try result.get()
  }

  private static func parseLocked(
    _ arguments: [String], _ specs: [OptionSpec], _ stopAtFirstOperand: Bool,
    _ programName: String
  ) -> Result<ParsedOptions, UsageError> {
    baton_getopt_reset()
    // getopt_long permutes this array of pointers in place; free the
    // originals afterwards whatever their order.
    var argv: [UnsafeMutablePointer<CChar>?] = ([programName] + arguments).map { strdup($0) }
    let owned = argv
    argv.append(nil)
    defer { for pointer in owned { free(pointer) } }

    // Long options: val is the short letter if there is one, else 256 + i.
    func value(of index: Int) -> Int32 {
      if let short = specs[index].short { return Int32(short.asciiValue!) }
      return 256 + Int32(index)
    }
    let names = specs.map { $0.long.map { strdup($0) } ?? nil }
    defer { for name in names { free(name) } }
    var longOptions: [option] = specs.indices.compactMap { index in
      guard let name = names[index] else { return nil }
      return option(
        name: name, has_arg: specs[index].takesArgument ? required_argument : no_argument,
        flag: nil, val: value(of: index))
    }
    longOptions.append(option(name: nil, has_arg: 0, flag: nil, val: 0))
    var optstring = stopAtFirstOperand ? "+:" : ":"
    for spec in specs {
      if let short = spec.short { optstring += String(short) + (spec.takesArgument ? ":" : "") }
    }

    var parsed = ParsedOptions(options: [], operands: [])
    let argc = Int32(arguments.count + 1)
    while true {
      let code = getopt_long(argc, &argv, optstring, &longOptions, nil)
      if code == -1 { break }
      let element: String = {
        let index = Int(baton_optind()) - 1
        guard index >= 1, index < argv.count, let pointer = argv[index] else { return "" }
        return String(
          decoding: UnsafeRawBufferPointer(start: pointer, count: strlen(pointer)), as: UTF8.self)
      }()
      let spec = specs.indices.first {
        value(of: $0) == Int32(code) || value(of: $0) == baton_optopt()
      }
      switch code {
      case Int32(UInt8(ascii: "?")):
        return .failure(unknownOption(element, specs, optopt: baton_optopt()))
      case Int32(UInt8(ascii: ":")):
        let name: String
        if let spec, element.hasPrefix("--"), let long = specs[spec].long {
          name = "--" + long
        } else if let spec {
          name = specs[spec].short.map { "-" + String($0) } ?? specs[spec].name
        } else {
          name = element
        }
        return .failure(UsageError("option '\(name)' requires an argument"))
      default:
        guard let spec = specs.indices.first(where: { value(of: $0) == code }) else {
          return .failure(UsageError("unexpected option '\(element)'"))
        }
        let argument = baton_optarg().map { String(cString: $0) }
        parsed.options.append((specs[spec].name, argument))
      }
    }
    for index in Int(baton_optind())..<Int(argc) {
      if let pointer = argv[index] { parsed.operands.append(String(cString: pointer)) }
    }
    return .success(parsed)
  }

  /// The message for getopt's '?': unknown, ambiguous, or given an argument
  /// it does not take.
  private static func unknownOption(_ element: String, _ specs: [OptionSpec], optopt: Int32)
    -> UsageError
  {
    if element.hasPrefix("--") {
      let name = String(element.dropFirst(2).prefix { $0 != "=" })
      let matches = specs.compactMap(\.long).filter { $0.hasPrefix(name) }
      if let exact = specs.first(where: { $0.long == name })
        ?? (matches.count == 1 ? specs.first { $0.long == matches[0] } : nil),
        element.contains("="), !exact.takesArgument
      {
        return UsageError("option '--\(exact.long!)' doesn't allow an argument")
      }
      if matches.count > 1 {
        return UsageError(
          "option '--\(name)' is ambiguous; possibilities: "
            + matches.map { "'--\($0)'" }.joined(separator: " "))
      }
      if optopt == 0 { return UsageError("unrecognized option '--\(name)'") }
    }
    if optopt > 0 && optopt < 128 {
      return UsageError("invalid option -- '\(Character(Unicode.Scalar(UInt8(optopt))))'")
    }
    return UsageError("unrecognized option '\(element)'")
  }
}
