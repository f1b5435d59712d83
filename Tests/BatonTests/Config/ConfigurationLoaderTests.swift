import Foundation
import Testing

@testable import BatonAgent
@testable import BatonHCI
@testable import BatonRadio

@Suite struct ConfigurationLoaderTests {
  let paths = BatonPaths(environment: [
    "HOME": "/home/u", "XDG_CONFIG_HOME": "/home/u/cfg", "XDG_STATE_HOME": "/home/u/state",
    "XDG_RUNTIME_DIR": "/run/user/1000",
  ])
  var loader: ConfigurationLoader { ConfigurationLoader(paths: paths, currentDirectory: "/work") }

  func parse(_ text: String, _ overrides: ConfigurationOverrides = ConfigurationOverrides())
    throws(ConfigurationError) -> AgentConfiguration
  {
    try loader.parse(text, file: "test.conf", overrides: overrides, checkFileSystem: false)
  }

  func problems(_ text: String, _ overrides: ConfigurationOverrides = ConfigurationOverrides())
    -> [String]
  {
    do {
      _ = try parse(text, overrides)
      return []
    } catch {
      return error.problems.map(\.description)
    }
  }

  @Test func fillsEveryDefault() throws {
    let configuration = try parse("[folder notes]\npath = ~/notes\n")
    #expect(configuration.name == BatonPaths.hostName)
    #expect(configuration.controller == .bluez(adapter: nil))
    #expect(configuration.keyFile == "/home/u/cfg/baton/key")
    #expect(configuration.stateDirectory == "/home/u/state/baton")
    #expect(configuration.advertisingInterval == .milliseconds(200))
    #expect(configuration.addressRotation == .seconds(900))
    #expect(configuration.maxNoteSize == 1_048_576)
    #expect(configuration.allowedPeers.isEmpty)
    #expect(configuration.hciLog == nil)
    #expect(configuration.holdDeletions == 10 && configuration.holdDeletionsShare == 50)
    #expect(configuration.trashSize == 500 << 20)
    #expect(
      configuration.folders == [
        FolderConfiguration(
          name: "notes", path: "/home/u/notes", activityType: "org.baton.note", pattern: "*.md")
      ])
  }

  @Test func readsEveryKey() throws {
    let configuration = try parse(
      """
      [agent]
      name = desk
      controller = tcp:127.0.0.1:7001
      key-file = /etc/baton/key
      state-dir = ~/st
      advertising-interval = 100
      address-rotation = 30
      max-note-size = 64K
      allowed-peers = laptop, phone
        tablet
      hci-log = /tmp/hci.log
      scanning = continuous
      hold-deletions = 0
      hold-deletions-share = 30%
      trash-size = 2M

      [folder notes]
      path = /n
      activity-type = org.example.note
      pattern = *.txt

      [folder todo]
      path = /t
      activity-type = org.example.todo
      """)
    #expect(configuration.name == "desk")
    #expect(configuration.controller == .exclusive(.tcp(host: "127.0.0.1", port: 7001)))
    #expect(configuration.keyFile == "/etc/baton/key")
    #expect(configuration.stateDirectory == "/home/u/st")
    #expect(configuration.advertisingInterval == .milliseconds(100))
    #expect(configuration.addressRotation == .seconds(1800))
    #expect(configuration.maxNoteSize == 65_536)
    #expect(configuration.allowedPeers == ["laptop", "phone", "tablet"])
    #expect(configuration.allows(peer: "phone") && !configuration.allows(peer: "stranger"))
    #expect(configuration.hciLog == "/tmp/hci.log")
    #expect(configuration.scanning == .continuous)
    #expect(configuration.holdDeletions == 0 && configuration.holdDeletionsShare == 30)
    #expect(configuration.trashSize == 2 << 20)
    #expect(configuration.folders.map(\.name) == ["notes", "todo"])
    #expect(configuration.folders[0].pattern == "*.txt")
    #expect(configuration.folders[1].activityType == "org.example.todo")
  }

  /// accept-command and after-command are split at blanks, never by a
  /// shell; a leading ~ is the home directory; the timeout is bounded.
  @Test func readsAFoldersNotifications() throws {
    let folder = try parse(
      "[folder notes]\npath = /n\nnotify = all\nopen-command = ~/bin/edit --new-window\n"
    ).folders[0]
    #expect(folder.notify == .all)
    #expect(folder.openCommand == ["/home/u/bin/edit", "--new-window"])
    let plain = try parse("[folder notes]\npath = /n\n").folders[0]
    #expect(plain.notify == .current && plain.openCommand == ["xdg-open"])
    #expect(
      problems("[folder notes]\npath = /n\nnotify = yes\n") == [
        "test.conf:3: key 'notify': 'yes' is not a notification mode; expected one of current, all, none"
      ])
  }

  @Test func readsAFoldersCommands() throws {
    let folder = try parse(
      """
      [folder notes]
      path = /n
      accept-command = ~/bin/ask  --quiet	notes
      after-command = /usr/bin/logger baton
      command-timeout = 30s
      """
    ).folders[0]
    #expect(folder.acceptCommand == ["/home/u/bin/ask", "--quiet", "notes"])
    #expect(folder.afterCommand == ["/usr/bin/logger", "baton"])
    #expect(folder.commandTimeout == .seconds(30))
    let plain = try parse("[folder notes]\npath = /n\n").folders[0]
    #expect(plain.acceptCommand.isEmpty && plain.afterCommand.isEmpty)
    #expect(plain.commandTimeout == .seconds(10))
    #expect(
      problems(
        """
        [folder notes]
        path = /n
        accept-command = 'my script' now
        after-command =
        command-timeout = 0
        """) == [
          "test.conf:3: key 'accept-command': ''my script' now' starts with a quote, but commands are split at blanks, never by a shell; expected a program path without quotes (put anything more in a script)",
          "test.conf:4: key 'after-command': the command is empty; expected a program and its arguments, e.g. '~/bin/ask-me'",
          "test.conf:5: key 'command-timeout': '0' is not valid; expected a whole number of seconds from 1 to 3600",
        ])
  }

  @Test func commandLineOverridesTheFile() throws {
    let configuration = try parse(
      "[agent]\nname = desk\ncontroller = hci0\n[folder a]\npath = /a\n",
      ConfigurationOverrides(
        notes: "n", controller: "serial:/dev/ttyUSB0:1000000", keyFile: "k", name: "laptop",
        stateDirectory: "/s", hciLog: "log"))
    #expect(configuration.name == "laptop")
    #expect(
      configuration.controller == .exclusive(.serial(path: "/dev/ttyUSB0", baud: 1_000_000)))
    #expect(configuration.keyFile == "/work/k")
    #expect(configuration.stateDirectory == "/s")
    #expect(configuration.hciLog == "/work/log")
    #expect(configuration.folders == [FolderConfiguration(name: "notes", path: "/work/n")])
  }

  @Test func namesFileLineAndKeyInEveryError() {
    let found = problems(
      """
      [agent]
      name = desk
      name = again
      controller = bluetooth
      max-note-size = 2G
      address-rotation = 0
      colour = blue
      scanning = always
      [folder notes]
      path = relative/dir
      activity-type = note
      [folder notes]
      [elsewhere]
      """)
    // The controller line's reason in parentheses is the transport's.
    let controller = found.count > 1 ? found[1] : ""
    #expect(controller.hasPrefix("test.conf:4: key 'controller': 'bluetooth' is not a controller"))
    #expect(controller.hasSuffix("expected bluez[:hciN], hciN, tcp:HOST:PORT or serial:/dev/ttyX[:BAUD]"))
    #expect(
      found.enumerated().map { $0.offset == 1 ? "CONTROLLER" : $0.element } == [
        "test.conf:3: key 'name': set twice in [agent] (first at line 2); expected each key once",
        "CONTROLLER",
        "test.conf:5: key 'max-note-size': '2G' is not valid; expected a size in bytes from 1 to 16M, optionally with a K or M suffix (1K = 1024 bytes)",
        "test.conf:6: key 'address-rotation': '0' is not valid; expected a whole number of minutes from 1 to 1440",
        "test.conf:7: key 'colour': unknown key in [agent]; expected one of address-rotation, advertising-interval, allowed-peers, controller, hci-log, hold-deletions, hold-deletions-share, key-file, max-note-size, name, scanning, state-dir, trash-days, trash-size",
        "test.conf:8: key 'scanning': 'always' is not a scanning mode; expected windows or continuous",
        "test.conf:10: key 'path': 'relative/dir' is relative; expected an absolute path or one starting with ~",
        "test.conf:11: key 'activity-type': 'note' is not a reverse-DNS name; expected dot-separated labels of letters, digits, '-' and '_', such as org.example.note",
        "test.conf:12: duplicate section [folder notes] (first at line 9); expected a different name for each folder",
        "test.conf:13: unknown section [elsewhere]; expected [agent] or [folder NAME]",
      ])
  }

  /// A folder whose path is refused gets that one problem, not a second
  /// one saying it has no path; a folder with no path line gets that one.
  @Test func aRefusedPathIsOneProblem() {
    #expect(
      problems("[folder notes]\npath = notes\n") == [
        "test.conf:2: key 'path': 'notes' is relative; expected an absolute path or one starting with ~"
      ])
    #expect(
      problems("[folder notes]\npattern = *.md\n") == [
        "test.conf:1: key 'path': section [folder notes] has no path; expected 'path = DIR'"
      ])
  }

  @Test func rejectsKeysOutsideSectionsAndIndentedKeys() {
    #expect(
      problems("name = x\n[folder a]\npath = /a\n") == [
        "test.conf:1: key 'name': the key is outside any section; expected it under [agent] or [folder NAME]"
      ])
    #expect(
      problems("[folder a]\npath = /a\n  pattern = *.txt\n") == [
        "test.conf:3: key 'path': this indented line is read as more of the value of 'path'; expected keys at the start of the line (remove the indentation)"
      ])
  }

  @Test func rejectsConflictingFolders() {
    let found = problems(
      "[folder a]\npath = /n\n[folder b]\npath = /n/sub\nactivity-type = org.baton.note\n")
    #expect(found.count == 2)
    #expect(found[0].hasPrefix("test.conf:4: key 'path': folder 'b' (/n/sub) overlaps folder 'a'"))
    #expect(
      found[1].hasPrefix(
        "test.conf:5: key 'activity-type': folder 'b' uses activity type org.baton.note"))
  }

  @Test func needsAFolder() {
    #expect(
      problems("[agent]\nname = x\n") == [
        "test.conf: no folder to watch; add a [folder NAME] section with 'path = DIR', or run with --notes DIR"
      ])
    #expect(problems("", ConfigurationOverrides(notes: "/n")).isEmpty)
  }

  @Test func reportsBadCommandLineValuesAsSuch() {
    let found = problems("", ConfigurationOverrides(notes: "/n", controller: "usb:0"))
    #expect(found.count == 1)
    #expect(
      found.first?.hasPrefix("command line: --controller: 'usb:0' is not a controller") == true)
  }

  @Test func checksFoldersOnDisk() throws {
    let dir = try TestEnvironment.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: dir) }
    // The configuration apart from the folder (a folder may not hold it).
    try FileManager.default.createDirectory(
      at: dir.appendingPathComponent("config"), withIntermediateDirectories: true)
    let file = dir.appendingPathComponent("config/baton.conf").path
    try "[folder a]\npath = \(dir.path)/missing\n".write(
      toFile: file, atomically: false, encoding: .utf8)
    #expect(throws: ConfigurationError.self) {
      try loader.load(ConfigurationOverrides(configFile: file))
    }
    do {
      _ = try loader.load(ConfigurationOverrides(configFile: file))
    } catch {
      #expect(error.problems.first?.line == 2)
      #expect(error.description.contains("No such file or directory"))
    }
    try FileManager.default.createDirectory(
      at: dir.appendingPathComponent("notes"), withIntermediateDirectories: true)
    try "[folder a]\npath = \(dir.path)/notes\n".write(
      toFile: file, atomically: false, encoding: .utf8)
    #expect(
      try loader.load(ConfigurationOverrides(configFile: file)).folders.first?.path
        == dir.path + "/notes")
    // An explicit -f FILE must exist; the default file may be absent.
    #expect(throws: ConfigurationError.self) {
      try loader.load(ConfigurationOverrides(configFile: dir.path + "/nothing.conf"))
    }
  }

  /// A notes folder that holds the key file, the configuration or the
  /// state directory is refused, naming which (issue 31).
  @Test func refusesAFolderHoldingBatonsOwnFiles() throws {
    let dir = try TestEnvironment.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: dir) }
    let file = dir.appendingPathComponent("baton.conf").path
    try "[agent]\nkey-file = \(dir.path)/notes/key\nstate-dir = \(dir.path)/state\n[folder a]\npath = \(dir.path)/notes\n[folder b]\npath = \(dir.path)/other\nactivity-type = org.example.b\n"
      .write(toFile: file, atomically: false, encoding: .utf8)
    for sub in ["notes", "other", "state"] {
      try FileManager.default.createDirectory(
        atPath: dir.path + "/" + sub, withIntermediateDirectories: true)
    }
    func problems(_ overrides: ConfigurationOverrides) -> [String] {
      do {
        _ = try loader.load(overrides)
        return []
      } catch {
        return error.problems.map(\.message)
      }
    }
    #expect(
      problems(ConfigurationOverrides(configFile: file)) == [
        "folder 'a' (\(dir.path)/notes) holds the key file \(dir.path)/notes/key; expected a notes"
          + " folder apart from baton's own files (move the key file out, or choose another folder)"
      ])
    // The configuration's own folder as the notes folder, through a
    // symlink: it holds all three.
    #expect(symlink(dir.path, dir.path + "/other/up") == 0)
    let viaLink = problems(
      ConfigurationOverrides(configFile: file, notes: dir.path + "/other/up",
        keyFile: dir.path + "/key"))
    #expect(viaLink.count == 3, "\(viaLink)")
    #expect(viaLink.contains { $0.contains("holds the key file") })
    #expect(viaLink.contains { $0.contains("holds the configuration file") })
    #expect(viaLink.contains { $0.contains("holds the state directory") })
  }

  /// A configuration others can write says what to sync and where for
  /// them: refused with the chmod to run (issue 31).
  @Test func refusesAFileOthersCanWrite() throws {
    let dir = try TestEnvironment.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: dir) }
    let file = dir.appendingPathComponent("baton.conf").path
    try FileManager.default.createDirectory(
      at: dir.appendingPathComponent("notes"), withIntermediateDirectories: true)
    try "[folder a]\npath = \(dir.path)/notes\n".write(
      toFile: file, atomically: false, encoding: .utf8)
    chmod(file, 0o666)
    do {
      _ = try loader.load(ConfigurationOverrides(configFile: file))
      Issue.record("a world-writable configuration was accepted")
    } catch {
      #expect(
        error.description.contains(
          "is not only yours: it is writable by its group and others (mode 666); run 'chmod go-w \(file)'"),
        "\(error)")
    }
    chmod(file, 0o644)
    _ = try loader.load(ConfigurationOverrides(configFile: file))
  }
}

@Suite struct ConfigurationValuesTests {
  @Test(arguments: [
    ("hci0", ControllerSpec.exclusive(.kernel(index: 0))),
    ("hci12", .exclusive(.kernel(index: 12))),
    ("bluez", .bluez(adapter: nil)), ("bluez:hci1", .bluez(adapter: 1)),
    ("tcp:127.0.0.1:7001", .exclusive(.tcp(host: "127.0.0.1", port: 7001))),
    ("tcp:[::1]:9", .exclusive(.tcp(host: "::1", port: 9))),
    ("serial:/dev/ttyACM1:115200", .exclusive(.serial(path: "/dev/ttyACM1", baud: 115_200))),
  ])
  func parsesControllerSpecs(_ text: String, _ spec: ControllerSpec) throws {
    #expect(try ConfigurationValues.controller(text) == spec)
    #expect(try ConfigurationValues.controller(spec.description) == spec)
  }

  @Test func serialSpecWithoutBaudNamesTheDevice() throws {
    let spec = try ConfigurationValues.controller("serial:/dev/ttyUSB0")
    guard case .exclusive(.serial(let path, _)) = spec else {
      Issue.record("\(spec) is not a serial spec")
      return
    }
    #expect(path == "/dev/ttyUSB0")
    #expect(try ConfigurationValues.controller(spec.description) == spec)
  }

  @Test(arguments: [
    "hci", "hcix", "tcp:host", "tcp::80", "tcp:h:0", "tcp:h:99999", "serial:ttyS0",
    "serial:/dev/x:fast", "usb:0", "",
  ])
  func rejectsBadControllerSpecs(_ text: String) {
    #expect(throws: ConfigurationValues.Invalid.self) { try ConfigurationValues.controller(text) }
  }

  @Test func parsesSizes() throws {
    let range = AgentConfiguration.maxNoteSizeRange
    #expect(try ConfigurationValues.byteSize("1024", in: range) == 1024)
    #expect(try ConfigurationValues.byteSize("64K", in: range) == 65_536)
    #expect(try ConfigurationValues.byteSize("2m", in: range) == 2_097_152)
    #expect(try ConfigurationValues.byteSize("1MiB", in: range) == 1_048_576)
    for bad in ["", "K", "-1", "0", "17M", "1.5M", "12 bytes"] {
      #expect(throws: ConfigurationValues.Invalid.self) {
        try ConfigurationValues.byteSize(bad, in: range)
      }
    }
  }

  @Test func validatesActivityTypesAndNames() throws {
    #expect(try ConfigurationValues.activityType("org.baton.note") == "org.baton.note")
    #expect(try ConfigurationValues.activityType("com.example.my-app_2.todo") != "")
    for bad in ["note", ".org.x", "org..x", "org.x.", "org.-x", "org.x y", "org.ü"] {
      #expect(throws: ConfigurationValues.Invalid.self) {
        try ConfigurationValues.activityType(bad)
      }
    }
    #expect(try ConfigurationValues.nameList("a, b\tc,,d") == ["a", "b", "c", "d"])
    #expect(throws: ConfigurationValues.Invalid.self) {
      try ConfigurationValues.name(String(repeating: "n", count: 33))
    }
  }

  @Test func expandsTildeAndMakesPathsAbsolute() {
    let paths = BatonPaths(environment: ["HOME": "/home/u"])
    #expect(paths.absolute("~/notes/") == "/home/u/notes")
    #expect(paths.absolute("~") == "/home/u")
    #expect(paths.absolute("a/../b/./c", relativeTo: "/x") == "/x/b/c")
    #expect(paths.expandingTilde("~root/x") == "/root/x")
    #expect(paths.expandingTilde("~no-such-user-here/x") == nil)
    #expect(paths.configHome == "/home/u/.config")
    #expect(paths.stateHome == "/home/u/.local/state")
    #expect(paths.defaultControlSocket == "/tmp/baton-\(getuid())/control")
    let xdg = BatonPaths(environment: [
      "HOME": "/h", "XDG_RUNTIME_DIR": "/run/user/7", "XDG_CONFIG_HOME": "relative",
    ])
    #expect(xdg.defaultControlSocket == "/run/user/7/baton/control")
    #expect(xdg.defaultConfigFile == "/h/.config/baton/baton.conf")
  }
}
