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

/// What a note's file was when it was last read and hashed: its size,
/// modification time and inode, with the content hash. At start, a file whose
/// size, time and inode still match is not read again (its hash is trusted).
public struct NoteFileStamp: Sendable, Equatable {
  public var relativePath: String
  public var size: Int
  public var modifiedSeconds: Int64
  public var modifiedNanoseconds: Int64
  public var inode: UInt64
  public var hash: ContentHash

  public init(
    relativePath: String, size: Int, modifiedSeconds: Int64, modifiedNanoseconds: Int64,
    inode: UInt64, hash: ContentHash
  ) {
    self.relativePath = relativePath
    self.size = size
    self.modifiedSeconds = modifiedSeconds
    self.modifiedNanoseconds = modifiedNanoseconds
    self.inode = inode
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

/// What moving a note to the trash did (`NoteFolderAccess.trashNote`).
public enum NoteTrashOutcome: Sendable, Equatable {
  /// Moved; the path in the trash, relative to the folder.
  case trashed(trashPath: String)
  /// No file there: nothing to move.
  case gone
  /// The file holds other bytes than the version deleted (an edit): it stays.
  case changed
}

/// What moving a note within its folder did (`NoteFolderAccess.renameNote`).
public enum NoteMoveOutcome: Sendable, Equatable {
  case moved
  /// No file at the old name.
  case gone
  /// The file holds other bytes than expected: it stays.
  case changed
  /// Something is already at the new name: nothing moved.
  case taken
}

/// One incoming note to write (`NoteFolderAccess.writeNotes`).
public struct NoteWrite: Sendable {
  public var relativePath: String
  public var bytes: [UInt8]
  public var expected: ContentHash?
  public var peer: String

  public init(relativePath: String, bytes: [UInt8], expected: ContentHash?, peer: String) {
    self.relativePath = relativePath
    self.bytes = bytes
    self.expected = expected
    self.peer = peer
  }
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
  /// Writes several incoming notes, each as `writeNote` would, in order; a
  /// folder may make them durable together (one flush instead of one per
  /// note). One result per write.
  func writeNotes(_ writes: [NoteWrite]) -> [Result<NoteWriteOutcome, any Error>]
  /// Why the folder would refuse to write a note called `relativePath`
  /// (its names policy), or nil if the name is acceptable; checked before
  /// fetching a peer's note.
  func refusal(of relativePath: String) -> String?
  /// Moves a note deleted on a peer to the folder's trash, if its file still
  /// holds `expected`'s bytes; folders it leaves empty are removed.
  func trashNote(_ relativePath: String, expected: ContentHash) throws -> NoteTrashOutcome
  /// Renames a note renamed on a peer, if its file still holds `expected`'s
  /// bytes and the new name is free; never replaces a file.
  func renameNote(_ from: String, to: String, expected: ContentHash) throws -> NoteMoveOutcome
  /// Whether the folder itself is there: the notes of a folder that is gone
  /// (an unmounted disk) are not taken as deleted.
  var isAvailable: Bool { get }
}

extension NoteFolderAccess {
  /// One `writeNote` after another.
  public func writeNotes(_ writes: [NoteWrite]) -> [Result<NoteWriteOutcome, any Error>] {
    writes.map { w in
      Result {
        try writeNote(w.relativePath, bytes: w.bytes, replacing: w.expected, peer: w.peer)
      }
    }
  }
}
