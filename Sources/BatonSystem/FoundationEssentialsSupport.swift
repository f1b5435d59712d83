import FoundationEssentials

// The few things BatonKit took from Foundation proper (which it no longer
// links: FoundationEssentials is what the agent really uses, and leaving out
// Foundation and its CoreFoundation start-up saves resident memory).

/// An error's text for a message: `localizedDescription` without Foundation.
/// A `CocoaError` from FileManager says which POSIX error it wraps.
package func describe(_ error: any Error) -> String {
  if let cocoa = error as? CocoaError {
    if let underlying = cocoa.underlying as? POSIXError {
      return "\(Errno(rawValue: underlying.code.rawValue))"
    }
    if let path = cocoa.filePath { return "\(cocoa.code) (\(path))" }
  }
  return "\(error)"
}

/// `path` without its last component, like NSString's
/// `deletingLastPathComponent` for the paths we build ("/a/b" -> "/a",
/// "/b" -> "/", "b" -> "").
package func parentDirectory(of path: String) -> String {
  var trimmed = Substring(path)
  while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
  guard let slash = trimmed.lastIndex(of: "/") else { return "" }
  if slash == trimmed.startIndex { return "/" }
  return String(trimmed[..<slash])
}
