extension String {
  /// This text made safe for one line of a log, the journal or a terminal,
  /// and unambiguous: `\` becomes `\\`; control characters (C0, DEL, C1),
  /// the line and paragraph separators (U+2028, U+2029) and bidirectional
  /// formatting characters (U+061C, U+200E, U+200F, U+202A to U+202E, U+2066
  /// to U+2069) and the characters that show as nothing (U+00AD, U+034F,
  /// U+115F, U+1160, U+180E, U+200B, U+2060 to U+2064, U+3164, U+FEFF,
  /// U+FFA0) become `\u{hex}`; everything else is unchanged.
  ///
  /// The one escaping function for text that may come from a peer (names,
  /// paths, titles, reasons): `Logger` applies it to every line, and
  /// `baton status` to every field.
  public var escapedForDisplay: String {
    guard unicodeScalars.contains(where: String.needsEscape) else { return self }
    var out = String.UnicodeScalarView()
    for scalar in unicodeScalars {
      if scalar == "\\" {
        out.append(contentsOf: "\\\\".unicodeScalars)
      } else if String.needsEscape(scalar) {
        out.append(contentsOf: "\\u{\(String(scalar.value, radix: 16))}".unicodeScalars)
      } else {
        out.append(scalar)
      }
    }
    return String(out)
  }

  private static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
    switch scalar.value {
    case 0x5C: true  // the escape character itself
    case 0x00..<0x20, 0x7F...0x9F: true
    case 0x2028, 0x2029: true
    case 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: true
    // Characters that show as nothing: a name must not hide them.
    case 0x00AD, 0x034F, 0x115F, 0x1160, 0x180E, 0x200B, 0x2060...0x2064, 0x3164, 0xFEFF, 0xFFA0:
      true
    default: false
    }
  }
}
