import Synchronization

@testable import BatonNotes
@testable import BatonSystem

/// A notes folder in memory with the write-back semantics of `NoteFolderAccess`.
final class InMemoryNoteFolder: NoteFolderAccess {
  let root: String
  private let files = Mutex<[String: [UInt8]]>([:])
  /// When set, writes fail with this error (a full or read-only disk).
  let failWrites = Mutex<Bool>(false)
  /// When set, writes and reads throw this (a refusal of the name, say).
  let refuseWith = Mutex<NotesError?>(nil)

  /// Called with the path after each write-back lands (what a rename does).
  let afterWrite = Mutex<(@Sendable (String) -> Void)?>(nil)
  /// Called with the size of each batch (`writeNotes`) before it is written.
  let beforeBatch = Mutex<(@Sendable (Int) -> Void)?>(nil)
  /// The size of every batch written, in order.
  let batchSizes = Mutex<[Int]>([])
  /// How many times a note was read (`readNote`).
  let reads = Mutex<Int>(0)

  struct DiskFull: Error {}

  init(root: String = "/mem") { self.root = root }

  /// A local edit (what the user does); the test reports it with `localSave`.
  func put(_ path: String, _ text: String) {
    files.withLock { $0[path] = Array(text.utf8) }
    touch(path)
  }
  func remove(_ path: String) { files.withLock { $0[path] = nil } }
  /// Modification times: a clock that ticks once per change.
  private let times = Mutex<(clock: Int64, byPath: [String: Int64])>((0, [:]))
  private func touch(_ path: String) {
    times.withLock {
      $0.clock += 1
      $0.byPath[path] = $0.clock
    }
  }
  func modificationTime(_ relativePath: String) -> Int64? {
    guard files.withLock({ $0[relativePath] }) != nil else { return nil }
    return times.withLock { $0.byPath[relativePath] }
  }
  func text(_ path: String) -> String? {
    files.withLock { $0[path] }.map { String(decoding: $0, as: UTF8.self) }
  }
  var paths: [String] { files.withLock { Array($0.keys).sorted() } }
  var contents: [String: String] {
    files.withLock { $0.mapValues { String(decoding: $0, as: UTF8.self) } }
  }

  func indexEntries() -> [NoteIndexEntry] {
    files.withLock { files in
      files.map {
        NoteIndexEntry(relativePath: $0.key, size: $0.value.count, hash: ContentHash(of: $0.value))
      }
    }
  }

  func readNote(_ relativePath: String) throws -> [UInt8] {
    reads.withLock { $0 += 1 }
    if let error = refuseWith.withLock({ $0 }) { throw error }
    guard let bytes = files.withLock({ $0[relativePath] }) else {
      throw NotesError.noSuchNote(path: relativePath)
    }
    return bytes
  }

  func writeNotes(_ writes: [NoteWrite]) -> [Result<NoteWriteOutcome, any Error>] {
    beforeBatch.withLock { $0 }?(writes.count)
    batchSizes.withLock { $0.append(writes.count) }
    return writes.map { w in
      Result { try writeNote(w.relativePath, bytes: w.bytes, replacing: w.expected, peer: w.peer) }
    }
  }

  func writeNote(
    _ relativePath: String, bytes: [UInt8], replacing expected: ContentHash?, peer: String
  ) throws -> NoteWriteOutcome {
    if failWrites.withLock({ $0 }) { throw DiskFull() }
    if let error = refuseWith.withLock({ $0 }) { throw error }
    let outcome = files.withLock { files -> NoteWriteOutcome in
      let current = files[relativePath].map { ContentHash(of: $0) }
      if current == ContentHash(of: bytes) { return .unchanged(relativePath: relativePath) }
      if current == nil || current == expected {
        files[relativePath] = bytes
        return .written(relativePath: relativePath)
      }
      let (stem, ext) = Self.split(relativePath)
      var copy = "\(stem) (conflict from \(peer))\(ext)"
      var n = 2
      while let existing = files[copy], existing != bytes {
        copy = "\(stem) (conflict from \(peer) \(n))\(ext)"
        n += 1
      }
      files[copy] = bytes
      return .conflictCopy(relativePath: copy)
    }
    switch outcome {
    case .written(let path), .conflictCopy(let path): touch(path)
    case .unchanged: break
    }
    if case .written(let path) = outcome { afterWrite.withLock { $0 }?(path) }
    return outcome
  }

  /// Notes moved to the trash, by their path in the folder (the last copy).
  let trashed = Mutex<[String: [UInt8]]>([:])

  func trashNote(_ relativePath: String, expected: ContentHash) throws -> NoteTrashOutcome {
    if failWrites.withLock({ $0 }) { throw DiskFull() }
    return files.withLock { files -> NoteTrashOutcome in
      guard let bytes = files[relativePath] else { return .gone }
      guard ContentHash(of: bytes) == expected else { return .changed }
      files[relativePath] = nil
      trashed.withLock { $0[relativePath] = bytes }
      return .trashed(trashPath: ".baton-trash/today/" + relativePath)
    }
  }

  var isAvailable: Bool { true }

  func renameNote(_ from: String, to: String, expected: ContentHash) throws -> NoteMoveOutcome {
    if failWrites.withLock({ $0 }) { throw DiskFull() }
    let outcome = files.withLock { files -> NoteMoveOutcome in
      guard let bytes = files[from] else { return .gone }
      guard ContentHash(of: bytes) == expected else { return .changed }
      guard files[to] == nil else { return .taken }
      files[from] = nil
      files[to] = bytes
      return .moved
    }
    if outcome == .moved { touch(to) }
    return outcome
  }

  private static func split(_ path: String) -> (String, String) {
    guard let dot = path.lastIndex(of: "."), !path[dot...].contains("/") else { return (path, "") }
    return (String(path[..<dot]), String(path[dot...]))
  }
}
