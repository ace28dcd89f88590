import CSQLite
import Dispatch
import HubLog
import Synchronization

/// The benchmark peer: an `EventStore` on the system SQLite with the same durability promise as
/// the hub log — WAL journal, `synchronous=FULL`, one `BEGIN IMMEDIATE … COMMIT` transaction (and
/// so one WAL fsync) per append.
///
/// Appends run one at a time under the writer lock: inline in the caller when the lock is free, else
/// on a dedicated serial dispatch queue (not blocking the Swift cooperative pool), so concurrent
/// writers simply queue up, each with its own transaction and fsync. Reads use a
/// second connection (WAL lets it read while the writer commits) and copy rows out in chunks, so
/// the caller's closure never runs under a lock. `waitForAppend` (and so the protocol's
/// `subscribe`) is woken by commits.
///
/// Idempotency: every row of an append carries the request's command id; a non-unique index on
/// `command_id` finds the original sequence range. Uniqueness of a command is enforced by the check
/// inside the write transaction (`BEGIN IMMEDIATE` serializes writers). A UNIQUE index is not
/// possible because one append with one command id writes several rows.
public final class SQLiteEventStore: EventStore, Sendable {
    /// The database file's path.
    public let path: String

    private struct WriterState: ~Copyable {
        var connection: SQLiteConnection?
        var lastSequence: UInt64 = 0
        var waiters = AppendWaiters()
    }

    private let writer: Mutex<WriterState>
    private let reader: Mutex<SQLiteConnection?>
    private let queue: DispatchQueue
    /// Rows copied out of SQLite per reader-lock acquisition.
    private let readChunk = 2048

    /// The record time only moves forward (``EventStore``): never earlier than the record before.
    private static let insertSQL = """
        INSERT INTO events(seq, stream, stream_version, type, schema_version, ts, command_id, actor, payload) \
        VALUES (?1, ?2, ?3, ?4, ?5, max(?6, COALESCE((SELECT ts FROM events WHERE seq = ?1 - 1), ?6)), ?7, ?8, ?9)
        """
    private static let commandSQL =
        "SELECT MIN(seq), MAX(seq), MAX(stream_version) FROM events WHERE command_id = ?1"
    private static let streamVersionSQL = "SELECT MAX(stream_version) FROM events WHERE stream = ?1"
    private static let readSQL = """
        SELECT seq, stream, stream_version, type, schema_version, ts, command_id, actor, payload \
        FROM events WHERE seq >= ?1 AND seq <= ?2 ORDER BY seq LIMIT ?3
        """

    /// Opens (creating if needed) the database file at `path`.
    public init(path: String) throws {
        self.path = path
        self.queue = DispatchQueue(label: "SQLiteEventStore.writer")

        let w = try SQLiteConnection(path: path)
        let mode = try w.queryText("PRAGMA journal_mode=WAL")
        guard mode?.lowercased() == "wal" else {
            throw EventLogError.invalid("sqlite \(path): could not enable WAL (journal_mode is \(mode ?? "?"))")
        }
        try w.exec("PRAGMA synchronous=FULL")
        try w.exec(
            """
            CREATE TABLE IF NOT EXISTS events(
                seq INTEGER PRIMARY KEY,
                stream TEXT NOT NULL,
                stream_version INTEGER NOT NULL,
                type TEXT NOT NULL,
                schema_version INTEGER NOT NULL,
                ts INTEGER NOT NULL,
                command_id TEXT,
                actor TEXT NOT NULL,
                payload BLOB NOT NULL,
                UNIQUE(stream, stream_version)
            )
            """)
        try w.exec("CREATE INDEX IF NOT EXISTS events_command_id ON events(command_id) WHERE command_id IS NOT NULL")
        let last = try UInt64(w.queryText("SELECT COALESCE(MAX(seq), 0) FROM events") ?? "0") ?? 0
        // Prepare the hot statements up front (they are cached and reused).
        _ = try w.prepared("BEGIN IMMEDIATE")
        _ = try w.prepared("COMMIT")
        _ = try w.prepared("ROLLBACK")
        _ = try w.prepared(Self.insertSQL)
        _ = try w.prepared(Self.commandSQL)
        _ = try w.prepared(Self.streamVersionSQL)

        let r = try SQLiteConnection(path: path)
        try r.exec("PRAGMA synchronous=FULL")
        _ = try r.prepared(Self.readSQL)

        writer = Mutex(WriterState(connection: w, lastSequence: last))
        reader = Mutex(r)
    }

    deinit { close() }

    /// Closes both connections; later calls throw `EventLogError.closed`.
    public func close() {
        writer.withLock { state in
            state.connection?.close()
            state.connection = nil
            return state.waiters.takeAll()
        }.fail(EventLogError.closed)
        reader.withLock { connection in
            connection?.close()
            connection = nil
        }
    }

    /// The last committed global sequence (0 when empty).
    public var lastSequence: UInt64 { writer.withLock { $0.lastSequence } }

    /// The version of the stream's last committed event, nil when it has none (or the store is closed).
    public func streamVersion(_ stream: String) -> UInt64? {
        writer.withLock { state -> UInt64? in
            guard let connection = state.connection else { return nil }
            return try? Self.currentVersion(connection, stream)
        }
    }

    /// The original result of an append that carried `commandId` (marked duplicate), nil when none did.
    public func commandResult(_ commandId: String) -> AppendResult? {
        writer.withLock { state -> AppendResult? in
            guard let connection = state.connection else { return nil }
            return try? Self.lookupCommand(connection, commandId)
        }
    }

    // MARK: Append

    /// Appends one request in a write transaction, committed durably before it returns.
    /// - Throws: As `EventStore.append(_:)`.
    public func append(_ request: AppendRequest) async throws -> AppendResult {
        try Self.validate(request)
        // Uncontended: run right here (no thread hop). Contended: queue up on the writer queue
        // rather than blocking a cooperative-pool thread on the lock.
        if let (result, reached) = try writer.withLockIfAvailable({ (state: inout WriterState) throws -> (AppendResult, Wakeups) in
            try Self.appendLocked(&state, request)
        }) {
            reached.resume()
            return result
        }
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<AppendResult, Error>) in
            queue.async { [self] in
                continuation.resume(
                    with: Result {
                        let (result, reached) = try writer.withLock { (state: inout WriterState) throws -> (AppendResult, Wakeups) in
                            try Self.appendLocked(&state, request)
                        }
                        reached.resume()
                        return result
                    })
            }
        }
    }

    /// The blocking append, one transaction, called with the writer lock held; the waiters it
    /// satisfies are returned, to be resumed once the lock is let go.
    private static func appendLocked(_ state: inout WriterState, _ request: AppendRequest) throws -> (AppendResult, Wakeups) {
        guard let connection = state.connection else { throw EventLogError.closed }
        let begin = try connection.prepared("BEGIN IMMEDIATE")
        try Self.stepDone(connection, begin, "BEGIN IMMEDIATE")
        do {
            let (result, last) = try Self.appendInTransaction(connection, request, lastSequence: state.lastSequence)
            if result.duplicate {
                try Self.stepDone(connection, try connection.prepared("ROLLBACK"), "ROLLBACK")
                return (result, .none)
            }
            try Self.stepDone(connection, try connection.prepared("COMMIT"), "COMMIT")
            state.lastSequence = last
            return (result, state.waiters.takeReached(last))
        } catch {
            // Roll back whatever part of the transaction is still open and re-read the tail:
            // a failed COMMIT leaves the database as it was before BEGIN.
            if let db = connection.db, sqlite3_get_autocommit(db) == 0 {
                _ = try? Self.stepDone(connection, try connection.prepared("ROLLBACK"), "ROLLBACK")
            }
            if let text = try? connection.queryText("SELECT COALESCE(MAX(seq), 0) FROM events"), let last = UInt64(text) {
                state.lastSequence = last
            }
            throw error
        }
    }

    private static func validate(_ request: AppendRequest) throws {
        guard !request.stream.isEmpty else { throw EventLogError.invalid("append: empty stream name") }
        if let commandId = request.causation.commandId, commandId.isEmpty {
            throw EventLogError.invalid("append to \(request.stream): empty command id")
        }
        for event in request.events where event.type.isEmpty {
            throw EventLogError.invalid("append to \(request.stream): event with empty type")
        }
    }

    /// Inside an open write transaction: idempotency check, expected-version check, inserts.
    private static func appendInTransaction(
        _ c: SQLiteConnection, _ request: AppendRequest,
        lastSequence: UInt64
    ) throws -> (AppendResult, UInt64) {
        if let commandId = request.causation.commandId, let original = try lookupCommand(c, commandId) {
            return (original, lastSequence)
        }
        let current = try currentVersion(c, request.stream)
        guard request.expected.admits(current) else {
            throw EventLogError.wrongExpectedVersion(stream: request.stream, expected: request.expected, actual: current)
        }
        let first = lastSequence + 1
        guard !request.events.isEmpty else {
            return (
                AppendResult(firstSequence: first, lastSequence: lastSequence, streamVersion: current, duplicate: false),
                lastSequence
            )
        }
        let insert = try c.prepared(insertSQL)
        defer { sqlite3_reset(insert); sqlite3_clear_bindings(insert) }
        var version = current.map { $0 + 1 } ?? 0
        var sequence = first
        // Bindings constant across the append.
        try c.check(sqlite3_bind_text(insert, 2, request.stream, -1, sqliteTransient), "bind stream")
        if let commandId = request.causation.commandId {
            try c.check(sqlite3_bind_text(insert, 7, commandId, -1, sqliteTransient), "bind command_id")
        } else {
            try c.check(sqlite3_bind_null(insert, 7), "bind command_id")
        }
        try c.check(sqlite3_bind_text(insert, 8, request.causation.actor, -1, sqliteTransient), "bind actor")
        for event in request.events {
            try c.check(sqlite3_bind_int64(insert, 1, sequence.sqliteValue), "bind seq")
            try c.check(sqlite3_bind_int64(insert, 3, version.sqliteValue), "bind stream_version")
            try c.check(sqlite3_bind_text(insert, 4, event.type, -1, sqliteTransient), "bind type")
            try c.check(sqlite3_bind_int64(insert, 5, Int64(event.schemaVersion)), "bind schema_version")
            try c.check(sqlite3_bind_int64(insert, 6, event.timestamp), "bind ts")
            let rc = event.payload.withUnsafeBytes { bytes in
                // A zero-length blob still needs a non-NULL pointer to be a blob rather than NULL.
                sqlite3_bind_blob(
                    insert, 9, bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(bytes.count),
                    sqliteTransient)
            }
            try c.check(rc, "bind payload")
            let step = sqlite3_step(insert)
            guard step == SQLITE_DONE else { throw c.error(step, "insert into events (seq \(sequence))") }
            sqlite3_reset(insert)
            sequence += 1
            version += 1
        }
        let last = sequence - 1
        return (AppendResult(firstSequence: first, lastSequence: last, streamVersion: version - 1, duplicate: false), last)
    }

    private static func lookupCommand(_ c: SQLiteConnection, _ commandId: String) throws -> AppendResult? {
        let statement = try c.prepared(commandSQL)
        defer { sqlite3_reset(statement); sqlite3_clear_bindings(statement) }
        try c.check(sqlite3_bind_text(statement, 1, commandId, -1, sqliteTransient), "bind command_id")
        let rc = sqlite3_step(statement)
        guard rc == SQLITE_ROW else { throw c.error(rc, "look up command id") }
        guard sqlite3_column_type(statement, 0) != SQLITE_NULL else { return nil }
        return AppendResult(
            firstSequence: UInt64(sqlite3_column_int64(statement, 0)),
            lastSequence: UInt64(sqlite3_column_int64(statement, 1)),
            streamVersion: UInt64(sqlite3_column_int64(statement, 2)),
            duplicate: true)
    }

    private static func currentVersion(_ c: SQLiteConnection, _ stream: String) throws -> UInt64? {
        let statement = try c.prepared(streamVersionSQL)
        defer { sqlite3_reset(statement); sqlite3_clear_bindings(statement) }
        try c.check(sqlite3_bind_text(statement, 1, stream, -1, sqliteTransient), "bind stream")
        let rc = sqlite3_step(statement)
        guard rc == SQLITE_ROW else { throw c.error(rc, "read stream version of \(stream)") }
        guard sqlite3_column_type(statement, 0) != SQLITE_NULL else { return nil }
        return UInt64(sqlite3_column_int64(statement, 0))
    }

    private static func stepDone(_ c: SQLiteConnection, _ statement: OpaquePointer, _ what: String) throws {
        let rc = sqlite3_step(statement)
        sqlite3_reset(statement)
        guard rc == SQLITE_DONE else { throw c.error(rc, what) }
    }

    // MARK: Read

    /// Calls `body` for each committed record in `from...through`, in order, until it returns false; reads in chunks.
    public func read(from: UInt64, through: UInt64, _ body: (EventRecord) throws -> Bool) throws {
        var next = max(from, 1)
        while next <= through {
            let chunk = try readChunk(from: next, through: through)
            for record in chunk {
                guard try body(record) else { return }
            }
            guard let last = chunk.last, chunk.count == readChunk else { return }
            next = last.sequence + 1
        }
    }

    /// Copies up to `readChunk` records out under the reader lock.
    private func readChunk(from: UInt64, through: UInt64) throws -> [EventRecord] {
        try reader.withLock { (connection: inout SQLiteConnection?) throws -> [EventRecord] in
            guard let c = connection else { throw EventLogError.closed }
            let statement = try c.prepared(Self.readSQL)
            defer { sqlite3_reset(statement); sqlite3_clear_bindings(statement) }
            try c.check(sqlite3_bind_int64(statement, 1, from.sqliteValue), "bind from")
            try c.check(sqlite3_bind_int64(statement, 2, through.sqliteValue), "bind through")
            try c.check(sqlite3_bind_int64(statement, 3, Int64(readChunk)), "bind limit")
            var records: [EventRecord] = []
            records.reserveCapacity(readChunk)
            while true {
                let rc = sqlite3_step(statement)
                if rc == SQLITE_DONE { break }
                guard rc == SQLITE_ROW else { throw c.error(rc, "read events from \(from)") }
                let commandId = columnString(statement, 6)
                records.append(
                    EventRecord(
                        sequence: UInt64(sqlite3_column_int64(statement, 0)),
                        stream: columnString(statement, 1) ?? "",
                        streamVersion: UInt64(sqlite3_column_int64(statement, 2)),
                        type: columnString(statement, 3) ?? "",
                        schemaVersion: UInt16(truncatingIfNeeded: sqlite3_column_int64(statement, 4)),
                        timestamp: sqlite3_column_int64(statement, 5),
                        causation: Causation(commandId: commandId, actor: columnString(statement, 7) ?? ""),
                        payload: columnBytes(statement, 8)))
            }
            return records
        }
    }

    // MARK: Waiting for appends

    /// Returns once the store holds an event after `sequence` (at once if it already does). Woken by
    /// commits, not by polling. Throws `EventLogError.closed` when the store is closed, and
    /// `CancellationError` when the waiting task is cancelled.
    public func waitForAppend(after sequence: UInt64) async throws {
        let id = writer.withLock { $0.waiters.newId() }
        try await AppendWaiters.suspend { waiter in
            writer.withLock { state in
                state.waiters.enter(
                    id, after: sequence, lastSequence: state.lastSequence,
                    refusal: state.connection == nil ? EventLogError.closed : nil, waiter)
            }
        } cancelled: {
            writer.withLock { $0.waiters.remove(id) }
        }
    }
}
