import Foundation
import Testing

@testable import BatonNotes
@testable import BatonSystem

#if canImport(Glibc)
  import Glibc
#endif

/// Real editors (and editor-like writers) saving a note: each save gives
/// exactly one update with the file's final bytes, and the droppings each
/// one makes (checked through the watcher's raw events, so the test proves
/// they happened) give none.
@Suite struct EditorSaveTests {
  static let initial = Array("# Note\nfirst line\n".utf8)

  enum Editor: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case vim, vimBackupCopy, nano, emacs, sed, gedit, vscode, cp, cpNew, mv, foundationAtomic
    var testDescription: String { rawValue }
  }

  /// Droppings each editor is known to make (raw event names).
  static func droppings(_ editor: Editor) -> [String] {
    switch editor {
    case .vim: ["4913", "note.md~", ".note.md.swp"]
    case .vimBackupCopy: ["note.md~", ".note.md.swp"]
    case .nano: [".note.md.swp"]
    case .emacs: [".#note.md", "#note.md#", "note.md~"]
    case .sed, .gedit, .foundationAtomic, .vscode, .cp, .cpNew, .mv: []
    }
  }

  @Test(arguments: Editor.allCases)
  func oneUpdatePerSave(_ editor: Editor) async throws {
    let outside = try TestEnvironment.temporaryDirectory("baton-outside")
    defer { try? FileManager.default.removeItem(at: outside) }
    let fixture = try NotesFixture { dir in
      try Data(EditorSaveTests.initial).write(to: dir.appendingPathComponent("note.md"))
    }
    defer { fixture.close() }
    let inodeBefore = inode(fixture.path("note.md"))
    let target = try await save(with: editor, fixture: fixture, outside: outside)
    let final = try #require(fixture.bytes(target))
    #expect(final != EditorSaveTests.initial)
    await fixture.recorder.wait { !$0.isEmpty }
    let events = await fixture.recorder.settled(quiet: 0.4)
    #expect(events == [.saved(NoteSave(relativePath: target, bytes: final))])
    #expect(
      fixture.folder.indexEntries().contains {
        $0.relativePath == target && $0.hash == ContentHash(of: final)
      })

    let seen = fixture.observedPaths
    for dropping in EditorSaveTests.droppings(editor) {
      #expect(seen.contains(dropping), "\(editor) made no \(dropping): saw \(seen.sorted())")
    }
    switch editor {
    case .vim: #expect(inode(fixture.path("note.md")) != inodeBefore, "vim did not rename")
    case .vimBackupCopy, .nano, .vscode, .cp:
      #expect(inode(fixture.path("note.md")) == inodeBefore, "\(editor) was not in place")
    case .sed: #expect(seen.contains { $0.hasPrefix("sed") })
    case .gedit: #expect(seen.contains { $0.hasPrefix(".goutputstream-") })
    case .foundationAtomic: #expect(seen.contains { $0.hasPrefix(".dat.nosync") })
    default: break
    }
  }

  private func inode(_ path: String) -> UInt64 {
    var info = stat()
    return lstat(path, &info) == 0 ? UInt64(info.st_ino) : 0
  }

  /// Saves `note.md` (or a new note) with `editor`; returns the note saved.
  private func save(with editor: Editor, fixture: NotesFixture, outside: URL) async throws
    -> String
  {
    let note = fixture.path("note.md")
    switch editor {
    case .vim, .vimBackupCopy:
      // Default settings (no vimrc, nocompatible: writebackup on,
      // backupcopy=auto); 'backupskip' is emptied only because the test
      // folder is under /tmp, which it exempts from backups by default.
      var arguments = ["-N", "-u", "NONE", "-i", "NONE", "-Es", "--cmd", "set backupskip="]
      if editor == .vimBackupCopy { arguments += ["--cmd", "set backupcopy=yes"] }
      arguments += ["-c", "call append(line('$'), 'appended by vim')", "-c", "wq", note]
      #expect(try runProgram("/usr/bin/vim", arguments) == 0)
    case .nano:
      try await nanoViaTmux(note, typing: "typed by nano ")
    case .emacs:
      // Backups are inhibited for /tmp in batch mode; re-enabled so the
      // backup-rename path runs; the lock symlink and autosave happen as is.
      let program =
        "(progn (setq backup-enable-predicate (lambda (_name) t) backup-inhibited nil)"
        + " (goto-char (point-max)) (insert \"appended by emacs\\n\")"
        + " (auto-save-mode 1) (do-auto-save t) (save-buffer))"
      #expect(try runProgram("/usr/bin/emacs", ["--batch", "-Q", note, "--eval", program]) == 0)
    case .sed:
      #expect(try runProgram("/usr/bin/sed", ["-i", "s/first line/edited by sed/", note]) == 0)
    case .gedit:
      let temporary = fixture.path(".goutputstream-\(UUID().uuidString.prefix(6))")
      try Data("# Note\nwritten like gedit\n".utf8).write(to: URL(fileURLWithPath: temporary))
      #expect(rename(temporary, note) == 0)
    case .vscode:
      // Truncate, then write in pieces, then close.
      let fd = open(note, O_WRONLY | O_TRUNC)
      #expect(fd >= 0)
      for piece in ["# Note\n", "written like ", "VS Code\n"] {
        let bytes = Array(piece.utf8)
        #expect(write(fd, bytes, bytes.count) == bytes.count)
        usleep(1000)
      }
      close(fd)
    case .cp:
      let source = outside.appendingPathComponent("src.md")
      try Data("# Note\ncopied over\n".utf8).write(to: source)
      #expect(try runProgram("/bin/cp", [source.path, note]) == 0)
    case .cpNew:
      let source = outside.appendingPathComponent("src.md")
      try Data("# New\ncopied in\n".utf8).write(to: source)
      #expect(try runProgram("/bin/cp", [source.path, fixture.path("new.md")]) == 0)
      return "new.md"
    case .mv:
      let source = outside.appendingPathComponent("moved.md")
      try Data("# Moved\nmoved in\n".utf8).write(to: source)
      #expect(try runProgram("/bin/mv", [source.path, fixture.path("moved.md")]) == 0)
      return "moved.md"
    case .foundationAtomic:
      try Data("# Note\nwritten atomically\n".utf8).write(
        to: URL(fileURLWithPath: note), options: .atomic)
    }
    return "note.md"
  }

  /// Opens nano in a detached tmux session, types, saves (Ctrl-O, Enter)
  /// and quits (Ctrl-X).
  private func nanoViaTmux(_ path: String, typing text: String) async throws {
    let socket = "baton-\(getpid())-\(UUID().uuidString.prefix(8))"
    var environment = ProcessInfo.processInfo.environment
    environment["TERM"] = "xterm"
    func tmux(_ arguments: [String]) throws -> Int32 {
      try runProgram(
        "/usr/bin/tmux", ["-L", socket, "-f", "/dev/null"] + arguments, environment: environment)
    }
    defer { _ = try? tmux(["kill-server"]) }
    #expect(
      try tmux([
        "new-session", "-d", "-x", "100", "-y", "30",
        "nano --ignorercfiles --locking '\(path)'",
      ]) == 0)
    func screen() throws -> String {
      let capture = try ChildProcess(
        "/usr/bin/tmux", ["-L", socket, "capture-pane", "-p"], environment: environment)
      var screen = ""
      while let line = capture.readLine() { screen += line + "\n" }
      capture.wait()
      return screen
    }
    #expect(
      try await eventually(10, "nano's screen") {
        let shown = try screen()
        return shown.contains("GNU nano") && shown.contains("first line")
      }, "nano did not start")
    #expect(try tmux(["send-keys", "-l", text]) == 0)
    #expect(try tmux(["send-keys", "C-o"]) == 0)
    #expect(
      try await eventually(10, "nano asks for the file name") {
        try screen().contains("File Name to Write")
      })
    #expect(try tmux(["send-keys", "Enter"]) == 0)
    #expect(try await eventually(10, "nano wrote the file") { try screen().contains("Wrote") })
    #expect(try tmux(["send-keys", "C-x"]) == 0)
    #expect(
      try await eventually(10, "nano exited") { try tmux(["has-session"]) != 0 },
      "nano did not exit")
  }
}
