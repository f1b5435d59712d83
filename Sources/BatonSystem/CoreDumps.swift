import CBatonShims

/// Whether this process may be dumped: its memory holds the group key and
/// session keys, which a core file (written by the kernel or kept by
/// systemd-coredump, readable later by anyone who gets the disk) or a
/// debugger attached by any process of the same user would reveal.
public enum CoreDumps {
  /// `prctl(PR_SET_DUMPABLE, 0)`, as ssh-agent does: no core file is
  /// written and no process of the same user may ptrace this one (root
  /// still can). Side effect: this process's /proc files belong to root,
  /// which tools run by the same user reading them (`ps` still works) may
  /// notice. Inherited by threads; reset by execve, which the agent never
  /// does after this.
  public static func disable() throws(Errno) {
    try checked { baton_set_dumpable(0) }
  }

  /// Whether a crash would be dumped (`PR_GET_DUMPABLE`).
  public static var enabled: Bool { baton_get_dumpable() == 1 }
}
