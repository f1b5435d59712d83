import FoundationEssentials

#if canImport(Glibc)
  import Glibc
#endif

/// Where baton's files are, following the XDG Base Directory specification,
/// computed from an environment (the process's own, or a test's).
public struct BatonPaths: Sendable, Equatable {
  public var environment: [String: String]

  public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
    self.environment = environment
  }

  /// `$HOME`, else the password database's home directory, else `/`.
  public var home: String {
    if let home = environment["HOME"], home.hasPrefix("/") { return home }
    if let entry = getpwuid(getuid()), let dir = entry.pointee.pw_dir {
      return String(cString: dir)
    }
    return "/"
  }

  /// An XDG variable if it is set to an absolute path (the specification
  /// says relative values are invalid and must be ignored).
  private func xdg(_ variable: String) -> String? {
    guard let value = environment[variable], value.hasPrefix("/") else { return nil }
    return value
  }

  /// `$XDG_CONFIG_HOME`, else `~/.config`.
  public var configHome: String { xdg("XDG_CONFIG_HOME") ?? home + "/.config" }
  /// `$XDG_STATE_HOME`, else `~/.local/state`.
  public var stateHome: String { xdg("XDG_STATE_HOME") ?? home + "/.local/state" }

  /// `$XDG_CONFIG_HOME/baton/baton.conf`.
  public var defaultConfigFile: String { configHome + "/baton/baton.conf" }
  /// `$XDG_CONFIG_HOME/baton/key`.
  public var defaultKeyFile: String { configHome + "/baton/key" }
  /// `$XDG_STATE_HOME/baton`.
  public var defaultStateDirectory: String { stateHome + "/baton" }

  /// The control socket: `$XDG_RUNTIME_DIR/baton/control`, or, without
  /// `XDG_RUNTIME_DIR` (no login session, e.g. under `su`),
  /// `/tmp/baton-UID/control` in a directory of mode 0700 that the agent
  /// creates and checks is ours.
  public var defaultControlSocket: String {
    controlDirectory + "/control"
  }

  /// The folder holding the control socket.
  public var controlDirectory: String {
    if let runtime = xdg("XDG_RUNTIME_DIR") { return runtime + "/baton" }
    return "/tmp/baton-\(getuid())"
  }

  /// The host name, for the default agent name.
  public static var hostName: String {
    var buffer = [CChar](repeating: 0, count: 256)
    guard gethostname(&buffer, buffer.count - 1) == 0 else { return "baton" }
    let name = String(
      decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    // "host.example.org" -> "host"
    return String(name.prefix { $0 != "." }).isEmpty ? "baton" : String(name.prefix { $0 != "." })
  }

  /// Expands a leading `~` or `~user`; other paths are returned unchanged.
  /// Nil when `~user` names no user.
  public func expandingTilde(_ path: String) -> String? {
    guard path.hasPrefix("~") else { return path }
    let slash = path.firstIndex(of: "/") ?? path.endIndex
    let user = path[path.index(after: path.startIndex)..<slash]
    let rest = path[slash...]
    if user.isEmpty { return home + rest }
    guard let entry = getpwnam(String(user)), let dir = entry.pointee.pw_dir else { return nil }
    return String(cString: dir) + rest
  }

  /// `path` with `~` expanded and made absolute against `directory` (the
  /// current directory by default), with `.`/`..` and repeated slashes
  /// removed. Nil when `~user` names no user.
  public func absolute(_ path: String, relativeTo directory: String? = nil) -> String? {
    guard let expanded = expandingTilde(path) else { return nil }
    let base = directory ?? FileManager.default.currentDirectoryPath
    let full = expanded.hasPrefix("/") ? expanded : base + "/" + expanded
    var parts: [Substring] = []
    for part in full.split(separator: "/") {
      if part == "." { continue }
      if part == ".." {
        _ = parts.popLast()
        continue
      }
      parts.append(part)
    }
    return "/" + parts.joined(separator: "/")
  }
}
