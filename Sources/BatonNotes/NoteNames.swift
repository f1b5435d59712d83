#if canImport(Glibc)
  import Glibc
#endif

/// Which file names are notes, which are editor droppings, and whether a
/// relative path from a peer is safe to write.
public struct NoteNames: Sendable, Equatable {
  /// The fnmatch(3) pattern a note's file name matches (default `*.md`).
  public let pattern: String

  public init(pattern: String = "*.md") { self.pattern = pattern }

  /// Longest file name component (NAME_MAX) and relative path (PATH_MAX).
  public static let maximumComponentBytes = 255
  public static let maximumPathBytes = 4096

  /// Prefix of our own temp files (a dotfile, so every watcher ignores it).
  static let temporaryPrefix = ".baton-write-"

  /// Whether `name` (one path component) is an editor dropping or hidden
  /// file that never counts as a note: dotfiles (`.goutputstream-*`, `.#lock`,
  /// `.dat.nosync*`, `.file.swp`, our own temp files), backups `*~`, emacs
  /// autosaves `#*#`, vim swap files `*.swp`/`*.swx` and its `4913` probe.
  public static func isIgnored(_ name: String) -> Bool {
    if name.isEmpty || name.hasPrefix(".") || name.hasSuffix("~") { return true }
    if name.hasPrefix("#") || name.hasSuffix("#") { return true }
    if name.hasSuffix(".swp") || name.hasSuffix(".swx") { return true }
    if name == "4913" { return true }
    return false
  }

  /// Whether `name` (a file name, not a path) is a note.
  public func isNote(_ name: String) -> Bool {
    !NoteNames.isIgnored(name) && fnmatch(pattern, name, 0) == 0
  }

  /// Whether a folder called `name` is walked (hidden folders such as `.git`
  /// are not).
  static func isWatchedDirectory(_ name: String) -> Bool { !name.hasPrefix(".") }

  /// Whether `scalar` is a bidirectional embedding, override or isolate
  /// (U+202A to U+202E, U+2066 to U+2069): in a name it can make, say,
  /// `evil\u{202E}dm.sh` display as `evilhs.md`.
  public static func isBidiControl(_ scalar: Unicode.Scalar) -> Bool {
    (0x202A...0x202E).contains(scalar.value) || (0x2066...0x2069).contains(scalar.value)
  }

  /// Whether `scalar` shows as nothing, or breaks a line, in a name: the
  /// zero-width space, word joiner and no-break space (U+200B, U+2060,
  /// U+FEFF), the invisible operators (U+2061 to U+2064), the soft hyphen,
  /// the combining grapheme joiner, the Mongolian vowel separator and the
  /// Hangul fillers, the bidirectional marks (LRM U+200E, RLM U+200F, ALM
  /// U+061C) and the line and paragraph separators (U+2028, U+2029). With
  /// any of them `notes.md` and `no\u{200B}tes.md` look alike.
  public static func isInvisible(_ scalar: Unicode.Scalar) -> Bool {
    switch scalar.value {
    case 0x00AD, 0x034F, 0x061C, 0x115F, 0x1160, 0x180E, 0x200B, 0x200E, 0x200F, 0x2028, 0x2029,
      0x2060...0x2064, 0x3164, 0xFEFF, 0xFFA0:
      true
    default: false
    }
  }

  /// Whether `scalar` looks like a slash or a backslash without being one
  /// (U+2044 FRACTION SLASH, U+2215 DIVISION SLASH, U+FF0F FULLWIDTH
  /// SOLIDUS, U+29F8 BIG SOLIDUS, the solidus overlays, U+2216 SET MINUS,
  /// U+FF3C FULLWIDTH REVERSE SOLIDUS and their kin): `notes\u{2215}x.md`
  /// displays as a path into a folder `notes` it is not in.
  public static func isSlashLookalike(_ scalar: Unicode.Scalar) -> Bool {
    switch scalar.value {
    case 0x0337, 0x0338, 0x1735, 0x2044, 0x2215, 0x2571, 0x27CB, 0x29F8, 0x2AFB, 0x2AFD, 0xFF0F,
      0x2216, 0x2572, 0x27CD, 0x29F5, 0x29F9, 0xFE68, 0xFF3C:
      true
    default: false
    }
  }

  /// Whether the joiner at `index` of `scalars` (U+200C ZERO WIDTH
  /// NON-JOINER, U+200D ZERO WIDTH JOINER) stands where a script needs it:
  /// between two characters outside ASCII (Persian and Indic words, emoji
  /// sequences such as a family). Between ASCII characters, at an end, or
  /// next to another invisible character it only disguises a name.
  static func isJoinerInPlace(_ scalars: [Unicode.Scalar], at index: Int) -> Bool {
    guard index > 0, index + 1 < scalars.count else { return false }
    func fits(_ s: Unicode.Scalar) -> Bool {
      s.value >= 0x80 && !isInvisible(s) && s.value != 0x200C && s.value != 0x200D
    }
    return fits(scalars[index - 1]) && fits(scalars[index + 1])
  }

  /// The first character of `path` that shows as nothing or as a slash,
  /// with what it is, or nil.
  static func disguisingCharacter(in path: String) -> (scalar: Unicode.Scalar, what: String)? {
    let scalars = Array(path.unicodeScalars)
    for (i, scalar) in scalars.enumerated() {
      if isInvisible(scalar) {
        return (scalar, "an invisible or line-breaking character")
      }
      if scalar.value == 0x200C || scalar.value == 0x200D, !isJoinerInPlace(scalars, at: i) {
        return (scalar, "a zero-width joiner or non-joiner outside a word that needs it")
      }
      if isSlashLookalike(scalar) {
        return (scalar, "a character that looks like a slash or backslash")
      }
    }
    return nil
  }

  /// Checks an untrusted relative path from a peer and returns its
  /// components. Refuses absolute paths, `.` and `..`, empty components,
  /// NUL and control characters (C0, DEL, C1), bidirectional override and
  /// isolate characters, invisible characters and look-alike slashes
  /// (`disguisingCharacter`), over-long names, hidden components and names
  /// that are not notes.
  public func validate(_ path: String) throws(NotesError) -> [String] {
    func refuse(_ reason: String) -> NotesError { .invalidPath(path: path, reason: reason) }
    if path.isEmpty { throw refuse("it is empty") }
    if path.utf8.first == UInt8(ascii: "/") { throw refuse("it is absolute") }
    if path.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) })
    {
      throw refuse("it contains a NUL or control character")
    }
    if path.unicodeScalars.contains(where: NoteNames.isBidiControl) {
      throw refuse(
        "it contains a bidirectional override or isolate character (U+202A to U+202E,"
          + " U+2066 to U+2069), which can disguise its extension")
    }
    if let (scalar, what) = NoteNames.disguisingCharacter(in: path) {
      let code = String(scalar.value, radix: 16, uppercase: true)
      throw refuse(
        "it contains U+\(String(repeating: "0", count: max(0, 4 - code.count)))\(code), \(what),"
          + " so it can pass for another name; rename the note on the peer that has it")
    }
    if path.utf8.count > NoteNames.maximumPathBytes {
      throw refuse("it is longer than \(NoteNames.maximumPathBytes) bytes")
    }
    let components = path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
    for component in components {
      if component.isEmpty { throw refuse("it has an empty component (`//` or a trailing `/`)") }
      if component == "." || component == ".." { throw refuse("it has a `\(component)` component") }
      if component.utf8.count > NoteNames.maximumComponentBytes {
        throw refuse("a component is longer than \(NoteNames.maximumComponentBytes) bytes")
      }
      if component.hasPrefix(".") { throw refuse("hidden names (starting with `.`) are not notes") }
    }
    let name = components[components.count - 1]
    if NoteNames.isIgnored(name) {
      throw refuse("\(NotesError.quoted(name)) is an editor backup, swap or lock file name")
    }
    if fnmatch(pattern, name, 0) != 0 {
      throw refuse("\(NotesError.quoted(name)) does not match the note pattern \(pattern)")
    }
    return components
  }

  /// `path` case-folded (`Straße` and `STRASSE` give `strasse`, `ς` and `Σ`
  /// give `σ`); compared as Swift strings, which are equal under Unicode
  /// canonical equivalence, so this is NFC plus case folding. Two names
  /// with one folded form look alike, and are one file on a case-insensitive
  /// file system.
  public static func folded(_ path: String) -> String {
    path.lowercased().uppercased().lowercased()
  }

  /// Why writing a peer's note at `relativePath` would make a twin of the
  /// note `twin` (the same folded name, other bytes).
  static func twinReason(_ twin: String) -> String {
    "the note \(NotesError.quoted(twin)) is here under a name that differs only in letter case"
      + " or Unicode normalisation, so the two could not be told apart (and are one file on a"
      + " case-insensitive file system); not written: rename one of them"
  }

  /// `<stem>.conflict-<peer>-<yyyymmddTHHMMSSZ><.ext>` for a note called
  /// `name`, the peer's name reduced to `[A-Za-z0-9_-]` (at most 32).
  public static func conflictName(for name: String, peer: String, time: Int) -> String {
    var safePeer = String(
      peer.unicodeScalars.prefix(32).map { scalar -> Character in
        let ok =
          (scalar.value < 0x80)
          && (Character(scalar).isLetter || Character(scalar).isNumber || scalar == "-"
            || scalar == "_")
        return ok ? Character(scalar) : "_"
      })
    if safePeer.isEmpty { safePeer = "peer" }
    var seconds = time_t(time)
    var parts = tm()
    gmtime_r(&seconds, &parts)
    func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
    let stamp =
      "\(parts.tm_year + 1900)\(two(parts.tm_mon + 1))\(two(parts.tm_mday))T"
      + "\(two(parts.tm_hour))\(two(parts.tm_min))\(two(parts.tm_sec))Z"
    var stem = name
    var ext = ""
    if let dot = name.lastIndex(of: "."), dot != name.startIndex {
      stem = String(name[..<dot])
      ext = String(name[dot...])
    }
    let suffix = ".conflict-\(safePeer)-\(stamp)\(ext)"
    // Keep the whole name within NAME_MAX by shortening the stem.
    while stem.utf8.count + suffix.utf8.count > maximumComponentBytes, !stem.isEmpty {
      stem.removeLast()
    }
    return stem + suffix
  }
}
