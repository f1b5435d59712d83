/// The usage lines and `--help` texts of every subcommand. Keep in step
/// with Man/baton.1.
enum Usage {
  static let agentOptions =
    "[-v] [-f FILE] [--notes DIR] [--controller SPEC] [--key-file FILE]\n"
    + "                   [--name NAME] [--state-dir DIR] [--hci-log FILE] [--socket PATH]"

  static let agent = "usage: baton agent \(agentOptions)\n"
  static let check = "usage: baton check \(agentOptions)\n"
  static let keygen = "usage: baton keygen\n"
  static let status = "usage: baton status [--json | --watch] [--socket PATH]\n"
  static let send = "usage: baton send [--socket PATH] FILE\n"
  static let deletions = "usage: baton deletions [--json] [--socket PATH] [apply | reject]\n"
  static let trash = "usage: baton trash [--json] [--socket PATH]\n"
  static let restore = "usage: baton restore [--socket PATH] FILE [DAY]\n"
  static let devices = "usage: baton devices [--json] [--socket PATH] [remove NAME]\n"
  static let pair = "usage: baton pair [--socket PATH] [CODE]\n"
  static let continueUsage = "usage: baton continue [--socket PATH] [PEER]\n"
  static let top = """
    usage: baton agent [options]     run the agent in the foreground
           baton check [options]     check the configuration and key file
           baton keygen              print a new group key
           baton status [--json | --watch]  show what the running agent is doing
           baton send FILE           make FILE the current activity now
           baton deletions [apply | reject]  list, make or undo held deletions
           baton trash               list the versions kept in the trash
           baton restore FILE [DAY]  put a version of FILE back from the trash
           baton devices [remove NAME]  list the group's devices, or remove one
           baton pair [CODE]         add a device: show a code, or type it
           baton continue [PEER]     open the note a peer handed over last
           baton --help | --version

    """

  static let agentOptionHelp = """
      -f, --config FILE    read FILE instead of $XDG_CONFIG_HOME/baton/baton.conf
          --notes DIR      watch only DIR (activity type org.baton.note, *.md),
                           ignoring the [folder] sections of the file
          --controller SPEC  bluez[:hciN], hciN, tcp:HOST:PORT or serial:/dev/ttyX[:BAUD]
          --key-file FILE  the group key (default $XDG_CONFIG_HOME/baton/key)
          --name NAME      the name peers see (default: the host name)
          --state-dir DIR  state (default $XDG_STATE_HOME/baton)
          --hci-log FILE   write every HCI packet to FILE (btsnoop format)
          --socket PATH    control socket (default $XDG_RUNTIME_DIR/baton/control)
      -v, --verbose        log debug lines too
      -h, --help           show this help

    """

  static let topHelp = """
    baton: hands notes between machines over Bluetooth LE, like Handoff.

    \(top)
    Run 'baton COMMAND --help' for a command's options, and see baton(1) and
    baton.conf(5).

    Exit status: 0 success, 1 error (configuration, key, runtime),
    2 usage error, 3 no agent running (status, send, deletions, trash,
    restore, devices, pair, continue).

    """

  static let agentHelp = """
    \(agent)
    Runs the agent in the foreground until SIGTERM or SIGINT (exit 0); SIGHUP
    reloads the configuration. Command-line options override the file.

    \(agentOptionHelp)
    """

  static let checkHelp = """
    \(check)
    Reads and validates the configuration, the key file and an existing
    state directory as 'baton agent' would with the same options, prints
    what the agent would do, and exits 0 if all is well or 1 with every
    problem on stderr.

    \(agentOptionHelp)
    """

  static let keygenHelp = """
    \(keygen)
    Prints a new random group key. Give the same key file, mode 0600, to
    every agent of the group:

        baton keygen > ~/.config/baton/key && chmod 600 ~/.config/baton/key

    """

  static let statusHelp = """
    \(status)
    Asks the running agent for its name, address, folders, peers in range
    (each with its current activity as it last arrived here: title and
    path, and the transfer from it while one runs: notes and bytes done of
    those wanted, rate, time left), current activity, counts and last
    failures.

          --json           print the agent's raw JSON answer
          --watch          show the transfers running, every second, until
                           none is (redrawn on a terminal, else a line each)
          --socket PATH    control socket (default $XDG_RUNTIME_DIR/baton/control)
      -h, --help           show this help

    Exit status 3 if no agent is running.

    """

  static let deletionsHelp = """
    \(deletions)
    Lists the deletions the running agent holds because they were many at
    once (hold-deletions in baton.conf(5)): notes deleted here, not sent to
    the peers, and notes a peer deleted, not moved to the trash here.
    'apply' makes them all: the ones made here go to the peers, the peers'
    move the notes to the trash here. 'reject' undoes them all: a note a
    peer deleted stays and comes back on every peer; a note deleted here
    comes back here from the peers.

          --json           print the agent's raw JSON answer
          --socket PATH    control socket (default $XDG_RUNTIME_DIR/baton/control)
      -h, --help           show this help

    Exit status 3 if no agent is running.

    """

  static let devicesHelp = """
    \(devices)
    Lists the devices of the running agent's group: each one's name, device
    id, fingerprint and state (this device, linked: in range, last seen, or
    removed). 'remove NAME' removes the member called NAME (or with that
    device id or fingerprint): no member accepts it any more, and the others
    move to a new group secret that it does not get, so it can no longer
    read their beacons or resolve their addresses. The notes it already has
    stay with it. A removed device cannot come back under its device key.

          --json           print the agent's raw JSON answer
          --socket PATH    control socket (default $XDG_RUNTIME_DIR/baton/control)
      -h, --help           show this help

    Exit status 3 if no agent is running.

    """

  static let pairHelp = """
    \(pair)
    Adds a device to the group, with no file copied. On a member, without
    CODE: shows a code such as 07-042-913, valid for 5 minutes and for one
    attempt, and waits until the new device has used it. On the new device
    (whose agent runs with no key file), with CODE: finds the member over
    Bluetooth, proves the code (a wrong one is refused, and the member's
    code is spent), and joins; the agent then starts syncing. Both sides
    print the other's name and fingerprint.

          --socket PATH    control socket (default $XDG_RUNTIME_DIR/baton/control)
      -h, --help           show this help

    Exit status 1 if the pairing failed, 3 if no agent is running.

    """

  static let trashHelp = """
    \(trash)
    Lists the versions the running agent keeps in its folders' trash
    (.baton-trash/DAY/ in each folder): notes deleted on a peer, and the
    versions a peer's newer one (or a restore) replaced. Each line gives the
    day, the size, why (deleted or overwritten) and the note's path. They
    are kept trash-days days, and at most trash-size bytes, oldest first
    (baton.conf(5)).

          --json           print the agent's raw JSON answer
          --socket PATH    control socket (default $XDG_RUNTIME_DIR/baton/control)
      -h, --help           show this help

    Exit status 3 if no agent is running.

    """

  static let restoreHelp = """
    \(restore)
    Asks the running agent to put back the newest version of the note FILE
    kept in its folder's trash (of DAY, yyyy-mm-dd, when given; 'baton
    trash' lists them). It is written like a save of yours: it travels to
    the peers as an edit, and the version it replaces goes to the trash
    first. The version stays in the trash too.

          --socket PATH    control socket (default $XDG_RUNTIME_DIR/baton/control)
      -h, --help           show this help

    Exit status 3 if no agent is running.

    """

  static let continueHelp = """
    \(continueUsage)
    Opens the current activity last handed over (PEER's, by name or device
    id, or that of whichever peer's arrived last) in your editor: $VISUAL,
    else $EDITOR (split at blanks, never run through a shell), else
    xdg-open, with the note's path as the last argument. A peer's current
    activity is the note its session names or, on a link, the last note made
    on it that it pushed; the agent remembers it until it stops.

          --socket PATH    control socket (default $XDG_RUNTIME_DIR/baton/control)
      -h, --help           show this help

    Exit status 1 if nothing was handed over, PEER handed nothing over, the
    note is gone or no editor was found; 3 if no agent is running.

    """

  static let sendHelp = """
    \(send)
    Asks the running agent to make the note FILE the current activity now.

          --socket PATH    control socket (default $XDG_RUNTIME_DIR/baton/control)
      -h, --help           show this help

    Exit status 3 if no agent is running.

    """
}
