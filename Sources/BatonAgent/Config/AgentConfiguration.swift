import BatonRadio

/// Everything the agent needs to run, validated: built by
/// `ConfigurationLoader` from the configuration file (baton.conf(5)) and the
/// command-line overrides of `baton agent`.
public struct AgentConfiguration: Sendable, Equatable {
  /// The agent's name, shown to peers (`name`; default: the host name).
  public var name: String
  /// How to reach the BLE controller (`controller`; default `bluez`).
  public var controller: ControllerSpec
  /// The group key file (`key-file`; default `$XDG_CONFIG_HOME/baton/key`).
  public var keyFile: String
  /// Where the agent keeps its state (`state-dir`; default
  /// `$XDG_STATE_HOME/baton`). Created mode 0700 if missing.
  public var stateDirectory: String
  /// Time between advertisements (`advertising-interval`, 20 ms to 10.24 s;
  /// default 200 ms).
  public var advertisingInterval: Duration
  /// How often the random address changes (`address-rotation`, 1 to 1440
  /// minutes; default 15).
  public var addressRotation: Duration
  /// The largest note sent or accepted, in bytes (`max-note-size`; default
  /// 1 MiB).
  public var maxNoteSize: Int
  /// How many days a note deleted on a peer stays in a folder's trash
  /// (`trash-days`, 1 to 3650; default 30).
  public var trashDays: Int
  /// The most bytes a folder's trash keeps, oldest versions removed first
  /// (`trash-size`, 0 to 1048576M; 0: no cap; default 500M).
  public var trashSize: Int
  /// A burst of more deletions than this (made here, or from the peers) is
  /// held for `baton deletions` (`hold-deletions`, 0 to 1000000; 0 holds
  /// none; default 10).
  public var holdDeletions: Int
  /// A burst deleting more than this percent of a folder of more than
  /// `holdDeletions` notes is held too (`hold-deletions-share`, 1 to 100;
  /// default 50).
  public var holdDeletionsShare: Int
  /// Names of the peers whose activities are accepted (`allowed-peers`);
  /// empty means every peer holding the group key.
  public var allowedPeers: [String]
  /// Where to write an HCI packet log in btsnoop format (`hci-log`), or nil.
  public var hciLog: String?
  /// When the agent scans (`scanning`; default `windows`).
  public var scanning: ScanningMode
  /// The watched folders, in file order (`[folder NAME]` sections).
  public var folders: [FolderConfiguration]

  public init(
    name: String, controller: ControllerSpec, keyFile: String, stateDirectory: String,
    advertisingInterval: Duration = AgentConfiguration.defaultAdvertisingInterval,
    addressRotation: Duration = AgentConfiguration.defaultAddressRotation,
    maxNoteSize: Int = AgentConfiguration.defaultMaxNoteSize,
    trashDays: Int = AgentConfiguration.defaultTrashDays,
    trashSize: Int = AgentConfiguration.defaultTrashSize,
    holdDeletions: Int = AgentConfiguration.defaultHoldDeletions,
    holdDeletionsShare: Int = AgentConfiguration.defaultHoldDeletionsShare,
    allowedPeers: [String] = [], hciLog: String? = nil, scanning: ScanningMode = .windows,
    folders: [FolderConfiguration]
  ) {
    self.name = name
    self.controller = controller
    self.keyFile = keyFile
    self.stateDirectory = stateDirectory
    self.advertisingInterval = advertisingInterval
    self.addressRotation = addressRotation
    self.maxNoteSize = maxNoteSize
    self.trashDays = trashDays
    self.trashSize = trashSize
    self.holdDeletions = holdDeletions
    self.holdDeletionsShare = holdDeletionsShare
    self.allowedPeers = allowedPeers
    self.hciLog = hciLog
    self.scanning = scanning
    self.folders = folders
  }

  public static let defaultAdvertisingInterval: Duration = .milliseconds(200)
  public static let advertisingIntervalRange: ClosedRange<Int> = 20...10_240
  public static let defaultAddressRotation: Duration = .seconds(15 * 60)
  public static let addressRotationRange: ClosedRange<Int> = 1...1440
  public static let defaultMaxNoteSize = 1 << 20
  public static let maxNoteSizeRange: ClosedRange<Int> = 1...(16 << 20)
  public static let defaultTrashDays = 30
  public static let trashDaysRange: ClosedRange<Int> = 1...3650
  public static let defaultTrashSize = 500 << 20
  public static let trashSizeRange: ClosedRange<Int> = 0...(1 << 40)
  public static let defaultHoldDeletions = 10
  public static let holdDeletionsRange: ClosedRange<Int> = 0...1_000_000
  public static let defaultHoldDeletionsShare = 50
  public static let holdDeletionsShareRange: ClosedRange<Int> = 1...100
  /// The longest agent name, in UTF-8 bytes.
  public static let maximumNameLength = 32

  /// `allowedPeers` as a predicate: true when `peer` may hand us activities.
  public func allows(peer: String) -> Bool {
    allowedPeers.isEmpty || allowedPeers.contains(peer)
  }
}

/// When the agent scans for peers' beacons (`scanning` in baton.conf(5),
/// baton(1), Scanning).
public enum ScanningMode: String, Sendable, Equatable, CaseIterable {
  /// In bursts when a peer may be new, otherwise in short, rare windows;
  /// not while an audio stream runs with a link up.
  case windows
  /// All the time, as before the schedule existed: for a controller that
  /// serves nothing else.
  case continuous
}

/// Which notes of a folder show a desktop notification when they arrive
/// (`notify`, baton.conf(5)).
public enum NotificationMode: String, Sendable, Equatable, Hashable, CaseIterable {
  /// A peer's current activity, as Handoff offers it; not the notes a
  /// catch-up brings.
  case current
  /// Every note written from a peer; a peer's notification is updated with
  /// the count until it is closed.
  case all
  /// None.
  case none
}

/// One watched folder: a `[folder NAME]` section, or `--notes DIR`.
public struct FolderConfiguration: Sendable, Equatable, Hashable {
  /// The section's NAME (`notes` for `--notes DIR`).
  public var name: String
  /// The folder's absolute path, `~` expanded.
  public var path: String
  /// The activity type its notes are sent as, a reverse-DNS name
  /// (`activity-type`; default `org.baton.note`).
  public var activityType: String
  /// Which files are notes: an fnmatch(3) pattern on the file name
  /// (`pattern`; default `*.md`).
  public var pattern: String
  /// Run before an incoming note is written; a non-zero exit declines it
  /// (`accept-command`: the program and its arguments; empty: none).
  public var acceptCommand: [String] = []
  /// Run after an incoming note was written (`after-command`; empty: none).
  public var afterCommand: [String] = []
  /// How long either may run before it is killed (`command-timeout`, 1 to
  /// 3600 s; default 10 s). An accept command that times out declines.
  public var commandTimeout: Duration = FolderConfiguration.defaultCommandTimeout
  /// Which arrivals show a desktop notification (`notify`; default `current`).
  public var notify: NotificationMode = .current
  /// What a notification's Open action runs, the note's file added as its
  /// last argument (`open-command`; default `xdg-open`).
  public var openCommand: [String] = FolderConfiguration.defaultOpenCommand

  public init(
    name: String, path: String, activityType: String = FolderConfiguration.defaultActivityType,
    pattern: String = FolderConfiguration.defaultPattern
  ) {
    self.name = name
    self.path = path
    self.activityType = activityType
    self.pattern = pattern
  }

  /// The activity type of `--notes DIR` and of a folder section without
  /// `activity-type`.
  public static let defaultActivityType = "org.baton.note"
  public static let defaultPattern = "*.md"
  public static let defaultCommandTimeout: Duration = .seconds(10)
  public static let commandTimeoutRange = 1...3600
  /// What opens a note when `open-command` is not set.
  public static let defaultOpenCommand = ["xdg-open"]
  /// The folder name `--notes DIR` gets.
  public static let commandLineName = "notes"
}
