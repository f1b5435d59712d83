extension NoteFolderAccess {
  /// A folder without a names policy accepts every name the session's own
  /// path checks let through.
  public func refusal(of relativePath: String) -> String? { nil }
}

extension NotesFolder {
  /// The reason `names.validate` gives for refusing `relativePath` (control
  /// characters, hidden components such as `.git/hooks/pre-commit`, names
  /// not matching the note pattern such as `run.sh`), or nil.
  public func refusal(of relativePath: String) -> String? {
    do {
      _ = try names.validate(relativePath)
      return nil
    } catch {
      if case .invalidPath(_, let reason) = error { return reason }
      return error.description
    }
  }
}
