import BatonSystem

/// One note in a folder's index.
public struct NoteIndexEntry: Sendable, Equatable, Hashable {
  /// Path below the folder's root, `/`-separated, never absolute.
  public var relativePath: String
  public var size: Int
  public var hash: ContentHash

  public init(relativePath: String, size: Int, hash: ContentHash) {
    self.relativePath = relativePath
    self.size = size
    self.hash = hash
  }
}

/// A completed local save: the note's whole new content.
public struct NoteSave: Sendable, Equatable {
  public var relativePath: String
  public var bytes: [UInt8]
  public var hash: ContentHash

  public init(relativePath: String, bytes: [UInt8]) {
    self.relativePath = relativePath
    self.bytes = bytes
    self.hash = ContentHash(of: bytes)
  }
}

/// What happened to an incoming note written back into the folder.
public enum NoteWriteOutcome: Sendable, Equatable {
  /// Written at its own path (the file was absent or held the expected version).
  case written(relativePath: String)
  /// The file already held exactly these bytes; nothing was written.
  case unchanged(relativePath: String)
  /// The file held something else (a local edit not yet sent): the incoming
  /// note went to this conflict copy next to it, the local file is untouched.
  case conflictCopy(relativePath: String)
}

/// What the handoff layer needs of a notes folder: its index, a note's
/// bytes, and safe write-back of incoming notes.
public protocol NoteFolderAccess: AnyObject, Sendable {
  /// The folder's absolute path.
  var root: String { get }
  /// Every note currently in the folder (valid UTF-8, within the size limit).
  func indexEntries() -> [NoteIndexEntry]
  /// The bytes of one note. Throws `NotesError.noSuchNote` when it is gone.
  func readNote(_ relativePath: String) throws -> [UInt8]
  /// When the note was last modified (nanoseconds since the Unix epoch), or
  /// nil when it is gone; picks the current activity at start.
  func modificationTime(_ relativePath: String) -> Int64?
  /// Writes an incoming note atomically. `expected` is the hash of the
  /// version the caller means to replace (nil: it expects no file there);
  /// if the file on disk differs, the note goes to a conflict copy named
  /// after `peer`. The write is not reported back as a local save.
  func writeNote(
    _ relativePath: String, bytes: [UInt8], replacing expected: ContentHash?, peer: String
  ) throws -> NoteWriteOutcome
  /// Why the folder would refuse to write a note called `relativePath`
  /// (its names policy), or nil if the name is acceptable; checked before
  /// fetching a peer's note.
  func refusal(of relativePath: String) -> String?
}
