#if canImport(Glibc)
  import Glibc
#endif

/// Whether a file or directory the agent takes orders or secrets from is
/// this user's alone, from its `stat`: the configuration (it says what to
/// sync and where), the key file, the state directory. A file another user
/// can replace or write is refused with what to run, as ssh refuses a
/// `~/.ssh/config` others can write.
public enum FileTrust {
  /// What is wrong with `info` (of `path`), or nil: it must belong to this
  /// user (`me`) or root, and no group or other may write it (nor, with
  /// `private`, read or enter it either).
  public static func problem(
    _ info: stat, path: String, private: Bool, me: uid_t = getuid()
  ) -> String? {
    if info.st_uid != me && info.st_uid != 0 {
      return "it belongs to user id \(info.st_uid), not to you (\(me)), who could change it;"
        + " run 'chown \(me) \(path)' (as root), or use a file of your own"
    }
    let mode = info.st_mode & 0o777
    let open: mode_t = `private` ? 0o077 : 0o022
    guard mode & open != 0 else { return nil }
    let who =
      mode & open & 0o070 != 0
      ? (mode & open & 0o007 != 0 ? "its group and others" : "its group") : "others"
    let fix = `private` ? "chmod go-rwx" : "chmod go-w"
    return "\(`private` ? "it is open to" : "it is writable by") \(who) (mode"
      + " \(String(mode, radix: 8))); run '\(fix) \(path)'"
  }
}
