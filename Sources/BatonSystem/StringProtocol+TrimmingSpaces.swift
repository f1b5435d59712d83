extension StringProtocol {
  /// Without leading and trailing spaces and tabs (the configuration and the
  /// key file trim values so).
  package var trimmingSpaces: String {
    let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
    guard let first = firstIndex(where: { !isSpace($0) }),
      let last = lastIndex(where: { !isSpace($0) })
    else { return "" }
    return String(self[first...last])
  }
}
