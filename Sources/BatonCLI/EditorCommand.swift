import BatonSystem

#if canImport(Glibc)
  import Glibc
#endif

/// Which program `baton continue` opens a note with: `$VISUAL`, else
/// `$EDITOR` (each split on spaces and tabs, as git does, never given to a
/// shell), else `xdg-open` when it is on `$PATH`.
struct EditorCommand: Equatable {
  /// The program and its arguments, the note's path last.
  var arguments: [String]

  /// The command for `file`, or nil when no variable is set (or set to
  /// blanks) and `xdg-open` is not found. `isExecutable` tells whether a
  /// path names an executable file (a parameter for the tests).
  static func choose(
    for file: String, environment: [String: String],
    isExecutable: (String) -> Bool = EditorCommand.isExecutable
  ) -> EditorCommand? {
    for variable in ["VISUAL", "EDITOR"] {
      let words = (environment[variable] ?? "")
        .split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).map(String.init)
      if !words.isEmpty { return EditorCommand(arguments: words + [file]) }
    }
    let path = environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
    for directory in path.split(separator: ":", omittingEmptySubsequences: false) {
      let candidate = (directory.isEmpty ? "." : String(directory)) + "/xdg-open"
      if isExecutable(candidate) { return EditorCommand(arguments: ["xdg-open", file]) }
    }
    return nil
  }

  static func isExecutable(_ path: String) -> Bool {
    var info = stat()
    return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFREG && access(path, X_OK) == 0
  }

  /// What `baton continue` says when `choose` found nothing.
  static let noneFound =
    "no editor to open the note with: set VISUAL or EDITOR (xdg-open is not on PATH either)"

  /// Replaces this process with the command (`execvp`, so the program is
  /// looked up on `$PATH`); returns only if that failed, with why.
  func exec() -> String {
    let reason = FileSystem.execute(arguments)
    return "cannot run '\(arguments[0])': \(reason)"
  }
}
