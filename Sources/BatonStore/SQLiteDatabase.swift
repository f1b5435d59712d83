import CSQLite

/// An SQLite error: the result code, `sqlite3_errmsg`, and what we were doing.
public struct SQLiteError: Error, CustomStringConvertible, Equatable {
  /// The primary result code (`SQLITE_CORRUPT` is 11, `SQLITE_NOTADB` 26).
  public let code: Int32
  public let message: String
  public let context: String

  /// True when the file is damaged or not a database at all.
  public var isDamage: Bool { code & 0xFF == SQLITE_CORRUPT || code & 0xFF == SQLITE_NOTADB }

  public var description: String {
    "sqlite: \(context): \(message) (code \(code))"
  }
}

/// A thin wrapper over one `sqlite3` connection: prepared statements, typed errors.
/// Not thread-safe by itself; `HandoffStore` guards it with a lock.
final class SQLiteDatabase {
  private var handle: OpaquePointer?
  let path: String

  /// `sqlite3_open_v2` with read-write and create.
  init(path: String) throws(SQLiteError) {
    self.path = path
    var db: OpaquePointer?
    let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
    let rc = sqlite3_open_v2(path, &db, flags, nil)
    guard rc == SQLITE_OK else {
      let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
      sqlite3_close_v2(db)
      throw SQLiteError(code: rc, message: message, context: "opening \(path)")
    }
    handle = db
    sqlite3_busy_timeout(db, 5000)
  }

  deinit { close() }

  func close() {
    if let handle { sqlite3_close_v2(handle) }
    handle = nil
  }

  private func error(_ rc: Int32, _ context: String) -> SQLiteError {
    let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "database closed"
    return SQLiteError(code: rc, message: message, context: context)
  }

  /// Runs one or more statements that return no rows we need.
  func execute(_ sql: String) throws(SQLiteError) {
    let rc = sqlite3_exec(handle, sql, nil, nil, nil)
    guard rc == SQLITE_OK else { throw error(rc, sql) }
  }

  /// A value bound to a `?` parameter or read from a column.
  enum Value: Equatable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])

    var integer: Int64? { if case .integer(let v) = self { v } else { nil } }
    var real: Double? {
      switch self {
      case .real(let v): v
      case .integer(let v): Double(v)
      default: nil
      }
    }
    var text: String? { if case .text(let v) = self { v } else { nil } }
    var blob: [UInt8]? {
      switch self {
      case .blob(let v): v
      case .null: []
      default: nil
      }
    }
  }

  /// Prepares `sql`, binds `parameters`, and returns every row.
  @discardableResult
  func query(_ sql: String, _ parameters: [Value] = []) throws(SQLiteError) -> [[Value]] {
    var rows: [[Value]] = []
    try forEachRow(sql, parameters) { rows.append($0) }
    return rows
  }

  /// Like `query`, but hands each row to `body` as it is stepped, so that a
  /// table of 100,000 rows is never held whole in memory.
  func forEachRow(_ sql: String, _ parameters: [Value] = [], _ body: ([Value]) -> Void)
    throws(SQLiteError)
  {
    var statement: OpaquePointer?
    var rc = sqlite3_prepare_v2(handle, sql, -1, &statement, nil)
    guard rc == SQLITE_OK, let statement else { throw error(rc, "preparing \(sql)") }
    defer { sqlite3_finalize(statement) }
    let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)  // SQLITE_TRANSIENT
    for (i, value) in parameters.enumerated() {
      let index = Int32(i + 1)
      switch value {
      case .null: rc = sqlite3_bind_null(statement, index)
      case .integer(let v): rc = sqlite3_bind_int64(statement, index, v)
      case .real(let v): rc = sqlite3_bind_double(statement, index, v)
      case .text(let v): rc = sqlite3_bind_text(statement, index, v, -1, transient)
      case .blob(let v):
        rc = v.withUnsafeBytes {
          sqlite3_bind_blob(
            statement, index, $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32($0.count),
            transient)
        }
      }
      guard rc == SQLITE_OK else { throw error(rc, "binding parameter \(index) of \(sql)") }
    }
    while true {
      rc = sqlite3_step(statement)
      if rc == SQLITE_DONE { break }
      guard rc == SQLITE_ROW else { throw error(rc, sql) }
      var row: [Value] = []
      for column in 0..<sqlite3_column_count(statement) {
        switch sqlite3_column_type(statement, column) {
        case SQLITE_INTEGER: row.append(.integer(sqlite3_column_int64(statement, column)))
        case SQLITE_FLOAT: row.append(.real(sqlite3_column_double(statement, column)))
        case SQLITE_TEXT: row.append(.text(String(cString: sqlite3_column_text(statement, column))))
        case SQLITE_BLOB:
          let count = Int(sqlite3_column_bytes(statement, column))
          if count > 0, let base = sqlite3_column_blob(statement, column) {
            row.append(.blob(Array(UnsafeRawBufferPointer(start: base, count: count))))
          } else {
            row.append(.blob([]))
          }
        default: row.append(.null)
        }
      }
      body(row)
    }
  }

  /// Runs `body` inside `BEGIN IMMEDIATE ... COMMIT`, rolling back if it throws.
  func transaction<T>(_ body: () throws(SQLiteError) -> T) throws(SQLiteError) -> T {
    try execute("BEGIN IMMEDIATE")
    do {
      let result = try body()
      try execute("COMMIT")
      return result
    } catch {
      try? execute("ROLLBACK")
      throw error
    }
  }
}
