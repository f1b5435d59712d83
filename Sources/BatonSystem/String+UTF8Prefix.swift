extension String {
  /// The longest prefix of whole characters (grapheme clusters) whose UTF-8
  /// fits in `maxBytes` bytes: never a split character, never invalid UTF-8.
  /// A first character longer than `maxBytes` on its own gives "".
  public func prefix(utf8Bytes maxBytes: Int) -> String {
    guard utf8.count > maxBytes else { return self }
    var end = startIndex
    while end < endIndex {
      let next = index(after: end)
      guard utf8.distance(from: startIndex, to: next) <= maxBytes else { break }
      end = next
    }
    return String(self[..<end])
  }
}
