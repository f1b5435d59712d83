import BatonSystem

#if canImport(Glibc)
  import Glibc
#endif

/// Writes the command's output: results to stdout, errors to stderr, each
/// text with one `write(2)` loop (no buffering to lose at `exit`).
enum Console {
  static func out(_ text: String) { write(1, text) }
  static func err(_ text: String) { write(2, text) }

  /// Whether stdout is a terminal (then `status --watch` redraws in place).
  static var outIsTerminal: Bool { isatty(1) == 1 }

  /// `baton: MESSAGE` on stderr, one line per line of `message`.
  static func error(_ message: String) {
    err(message.split(separator: "\n").map { "baton: \($0)\n" }.joined())
  }

  private static func write(_ fd: Int32, _ text: String) {
    let bytes = Array(text.utf8)
    var offset = 0
    while offset < bytes.count {
      let written = bytes[offset...].withUnsafeBytes {
        try? FileDescriptor(rawValue: fd).write($0)
      }
      guard let n = written, n > 0 else { return }
      offset += n
    }
  }
}
