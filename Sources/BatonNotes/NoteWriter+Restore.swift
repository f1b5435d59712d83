import BatonSystem

#if canImport(Glibc)
  import Glibc
#endif

/// What `baton restore` did (`NotesFolder.restoreNote`).
public struct NoteRestoreOutcome: Sendable, Equatable {
  /// The version put back: its day and path in the trash.
  public var day: String
  public var trashPath: String
  public var size: Int
  /// Where the version it replaced was kept (nil: the note was absent, or
  /// already held these bytes).
  public var replacedTrashPath: String?
  /// The note already held these bytes: nothing was written.
  public var unchanged: Bool
}

/// `baton restore`: a version in the trash put back into the folder as a
/// local save (the watcher sees it and it travels to the peers), the
/// version it replaces kept in the trash first.
extension NoteWriter {
  /// Puts the newest version of `relativePath` in the trash (of `day`, or
  /// of the newest day holding one) back at its path. The trash entry stays
  /// (the trash is emptied only by `trash-days` and `trash-size`). Throws
  /// `.notInTrash` when the trash holds no version of it.
  func restore(_ relativePath: String, day: String?) throws(NotesError) -> NoteRestoreOutcome {
    let components = try names.validate(relativePath)
    let candidates = trashCan.entries().filter {
      $0.path == relativePath && (day == nil || $0.day == day)
    }
    guard let newestDay = candidates.first?.day,
      let chosen = candidates.last(where: { $0.day == newestDay })
    else { throw .notInTrash(path: relativePath, day: day) }

    // The version, read through descriptors that never follow symlinks.
    let inTrash = chosen.trashPath.split(separator: "/").map(String.init)
    let trashDirectory = try openDirectory(chosen.trashPath, inTrash.dropLast(), create: false)
    let version: Version?
    do {
      version = try currentVersion(chosen.trashPath, in: trashDirectory, name: inTrash.last!)
    } catch {
      trashDirectory.closeIgnoringErrors()
      throw error
    }
    trashDirectory.closeIgnoringErrors()
    guard let version, let bytes = version.bytes else {
      throw .tooLarge(path: chosen.trashPath, size: version?.size ?? 0, maximum: maximumNoteSize)
    }
    guard Note.isValidUTF8(bytes) else {
      throw .notANote(path: chosen.trashPath, reason: "it is not valid UTF-8")
    }
    var outcome = NoteRestoreOutcome(
      day: chosen.day, trashPath: chosen.trashPath, size: bytes.count, replacedTrashPath: nil,
      unchanged: false)

    let name = components.last!
    let directory = try openDirectory(relativePath, components.dropLast(), create: true)
    defer { directory.closeIgnoringErrors() }
    let current = try currentVersion(relativePath, in: directory, name: name)
    let hash = ContentHash(of: bytes)
    if let current, current.hash == hash {
      outcome.unchanged = true
      return outcome
    }
    if let current, current.hash == nil {
      throw .tooLarge(path: relativePath, size: current.size, maximum: maximumNoteSize)
    }
    let temporary = try writeTemporary(
      relativePath, bytes: bytes, in: directory, mode: current.map(\.noteMode), sync: true)
    var kept: Kept?
    defer {
      _ = unlinkat(directory.rawValue, temporary, 0)
      kept?.directory.closeIgnoringErrors()
    }
    if let current { kept = try keep(relativePath, components, in: directory, current, sync: true) }
    // A save (or an incoming note) since the read: try again rather than replace it.
    let latest = try currentVersion(relativePath, in: directory, name: name)
    guard latest?.hash == current?.hash else {
      if let kept { _ = unlinkat(kept.directory.rawValue, kept.name, 0) }
      throw .notANote(path: relativePath, reason: "it changed while it was restored; try again")
    }
    // No write-back recorded: the watcher takes the rename for a local save.
    do {
      try retryingOnInterrupt { renameat(directory.rawValue, temporary, directory.rawValue, name) }
    } catch {
      if let kept { _ = unlinkat(kept.directory.rawValue, kept.name, 0) }
      throw NotesError.writing("rename into", relativePath, error)
    }
    syncDirectory(directory, relativePath)
    if let kept {
      trashCan.record(.overwritten, day: kept.day, name: kept.pathInDay, original: relativePath)
      trashCan.added(kept.size)
      outcome.replacedTrashPath = "\(NoteTrash.folder)/\(kept.day)/\(kept.pathInDay)"
    }
    return outcome
  }
}
