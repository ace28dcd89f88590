import CSQLite
import HubLog

/// `SQLITE_TRANSIENT` (the C macro does not import): SQLite copies bound text/blobs before returning.
@inline(__always)
var sqliteTransient: sqlite3_destructor_type { unsafeBitCast(-1 as Int, to: sqlite3_destructor_type.self) }

/// One SQLite connection and its prepared-statement cache. Not thread-safe: always used under the
/// owning store's lock.
final class SQLiteConnection {
    let path: String
    private(set) var db: OpaquePointer?
    private var statements: [String: OpaquePointer] = [:]

    init(path: String) throws(EventLogError) {
        self.path = path
        var handle: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &handle, flags, nil)
        guard rc == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(rc))
            let errno = handle.map { sqlite3_system_errno($0) } ?? 0
            sqlite3_close_v2(handle)
            throw EventLogError.io(path: path, operation: "sqlite3_open_v2 (\(message), code \(rc))", errno: errno)
        }
        db = handle
        sqlite3_extended_result_codes(handle, 1)
        sqlite3_busy_timeout(handle, 10_000)
    }

    deinit { close() }

    var isOpen: Bool { db != nil }

    func close() {
        for (_, statement) in statements { sqlite3_finalize(statement) }
        statements.removeAll()
        if let db { sqlite3_close_v2(db) }
        db = nil
    }

    /// The error for a failed call: `.io` for I/O-class failures (disk, full, cannot open), else
    /// `.invalid`; both carry SQLite's own message.
    func error(_ rc: Int32, _ operation: String) -> EventLogError {
        let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(rc))
        let primary = rc & 0xff
        if primary == SQLITE_IOERR || primary == SQLITE_FULL || primary == SQLITE_CANTOPEN || primary == SQLITE_READONLY {
            return .io(
                path: path, operation: "sqlite \(operation) (\(message), code \(rc))",
                errno: db.map { sqlite3_system_errno($0) } ?? 0)
        }
        return .invalid("sqlite \(operation) on \(path) failed: \(message) (code \(rc))")
    }

    func open() throws(EventLogError) -> OpaquePointer {
        guard let db else { throw .closed }
        return db
    }

    /// Runs SQL that returns no rows we need.
    func exec(_ sql: String) throws(EventLogError) {
        let db = try open()
        var message: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(db, sql, nil, nil, &message)
        if rc != SQLITE_OK {
            let text = message.map { String(cString: $0) } ?? String(cString: sqlite3_errstr(rc))
            sqlite3_free(message)
            let primary = rc & 0xff
            if primary == SQLITE_IOERR || primary == SQLITE_FULL || primary == SQLITE_CANTOPEN || primary == SQLITE_READONLY {
                throw .io(path: path, operation: "sqlite exec \(sql) (\(text), code \(rc))", errno: sqlite3_system_errno(db))
            }
            throw .invalid("sqlite exec \(sql) on \(path) failed: \(text) (code \(rc))")
        }
    }

    /// Runs a query returning one text value (e.g. a PRAGMA).
    func queryText(_ sql: String) throws(EventLogError) -> String? {
        let statement = try prepared(sql)
        defer { sqlite3_reset(statement) }
        let rc = sqlite3_step(statement)
        guard rc == SQLITE_ROW else {
            if rc == SQLITE_DONE { return nil }
            throw error(rc, "step \(sql)")
        }
        return sqlite3_column_text(statement, 0).map { String(cString: $0) }
    }

    /// A cached prepared statement (reset and with bindings cleared by the caller's `defer`).
    func prepared(_ sql: String) throws(EventLogError) -> OpaquePointer {
        if let statement = statements[sql] { return statement }
        let db = try open()
        var statement: OpaquePointer?
        let rc = sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard rc == SQLITE_OK, let statement else { throw error(rc, "prepare \(sql)") }
        statements[sql] = statement
        return statement
    }

    func check(_ rc: Int32, _ operation: String) throws(EventLogError) {
        if rc != SQLITE_OK { throw error(rc, operation) }
    }
}

extension UInt64 {
    /// Clamped into SQLite's signed 64-bit integer range.
    var sqliteValue: Int64 { self > UInt64(Int64.max) ? Int64.max : Int64(self) }
}

/// Reads a text column without going through a NUL-terminated copy.
@inline(__always)
func columnString(_ statement: OpaquePointer, _ column: Int32) -> String? {
    guard let text = sqlite3_column_text(statement, column) else { return nil }
    let count = Int(sqlite3_column_bytes(statement, column))
    return String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
}

@inline(__always)
func columnBytes(_ statement: OpaquePointer, _ column: Int32) -> [UInt8] {
    let count = Int(sqlite3_column_bytes(statement, column))
    guard count > 0, let blob = sqlite3_column_blob(statement, column) else { return [] }
    return [UInt8](UnsafeRawBufferPointer(start: blob, count: count))
}
