import HubLog
import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import Synchronization

/// The event log on PostgreSQL: the same ``EventStore`` contract as the segment store, in the tables
/// of ``PostgresSchema`` (see docs/operations.md and docs/architecture.md).
///
/// - **Appends** are committed by one writer task in group commits: every append waiting when a
///   transaction starts joins it (one `COMMIT`, one WAL flush). The writer decides the batch
///   against the head and stream versions it remembers, computes the records' chain hashes, and
///   sends it all in one `CALL hub_append(...)` (``PostgresAppendProcedure``), which locks the head
///   row, checks the lease, that the head is the one the writer expected and the command ids,
///   inserts the records, moves the head, sends `NOTIFY hub_log` and commits: one round trip per
///   group commit. `synchronous_commit` is `on` for the connection, so an append returns only
///   after PostgreSQL has made it durable: observations (``Durability/observation``) too, which
///   the contract allows (a delay of zero).
/// - **The command path's reads** (``commandResult(_:)``, ``streamVersion(_:)``,
///   ``records(from:through:)``) are asynchronous: the calling task is suspended for the round
///   trip, no thread is held. An error from the database is thrown, never read as "no such command"
///   or "no stream".
/// - **Every other read** (``read(from:through:_:)``, ``readViews(from:through:_:)``,
///   ``chainHash(at:)``, ``verify(progress:)``: replay, export, verify, a snapshot's binding) is
///   asynchronous too: the caller is suspended while a chunk of rows comes back on the store's
///   own one-thread event loop group, and no thread waits on it. While the connection is lost
///   they fail at once with ``EventLogError/unreachable(_:)``, never with an empty answer.
/// - **Following**: a third connection `LISTEN`s on `hub_log`; each notification (this process's
///   commits and any other writer's) moves ``lastSequence`` and wakes ``waitForAppend(after:)``.
///   Nothing polls.
/// - **A lost connection** (the server restarted, the network failed) is not the end: appends and
///   reads fail at once with ``EventLogError/unreachable(_:)`` (``writerFault`` says why) and the
///   store connects again by itself, every 0.25 s at first and at most every second, until it is
///   closed. Once connected it reads the head again and goes on; followers waiting in
///   ``waitForAppend(after:)`` keep waiting and are woken by the next append.
public final class PostgresEventStore: QueuedAppends, Sendable {
    /// Where the log lives (its description masks the password).
    public let location: PostgresLocation
    /// True when opened for reading only: appends are refused and the tables are not created.
    public let readOnly: Bool
    let group: MultiThreadedEventLoopGroup
    let logger: Logger
    /// The longest a statement on the command path (an append, a lookup, a lease statement) waits
    /// for PostgreSQL's answer before the connection is taken as lost (see `withinDeadline`).
    public let statementDeadline: TimeAmount
    let state: Mutex<StoreState>
    /// The three connections in use, replaced together after a lost one (see ``reconnect()``).
    let connections: Mutex<Connections>

    /// The writer's, the reader's and the listener's connection, and which set they are.
    struct Connections: Sendable {
        var writer: PostgresConnection
        var reader: PostgresConnection
        var listener: PostgresConnection
        /// Raised with every reconnection: a closed connection of an older set is not a new loss.
        var generation: UInt64
        var all: [PostgresConnection] { [writer, reader, listener] }
    }

    /// The connection appends (and their group commits) use.
    var writer: PostgresConnection { connections.withLock { $0.writer } }
    /// The connection reads and the lease's statements use.
    var reader: PostgresConnection { connections.withLock { $0.reader } }

    typealias Pending = PendingAppend

    struct StoreState: ~Copyable {
        var lastSequence: UInt64 = 0
        var closing = false
        var closed = false
        var fault: String?
        var pending: [Pending] = []
        var writing = false
        var waiters = AppendWaiters()
        /// Transactions committed by this process's writer (each may hold several appends).
        var transactions: UInt64 = 0
        /// Set by ``fence(holder:token:)``: the lease every append checks.
        var fence: (holder: String, token: Int64)?
        /// The writer's view of the head and its streams (only the writer task uses it).
        var view = WriterView()
        /// Statements the writer has sent (round trips to the server).
        var statements: UInt64 = 0
        /// A task is connecting again after a lost connection.
        var reconnecting = false
        /// Times the store connected again after losing its connection.
        var reconnections: UInt64 = 0

        /// Marks the connection lost: appends and reads fail with `reason` until the store has
        /// connected again. True when a reconnection must be started (none runs yet).
        mutating func lose(_ reason: String) -> Bool {
            guard !closing else { return false }
            if fault == nil { fault = reason }
            view = WriterView()
            guard !reconnecting else { return false }
            reconnecting = true
            return true
        }

        /// The log reached `sequence`: the waiters it satisfies are returned, to be resumed once the
        /// lock is let go.
        mutating func advance(to sequence: UInt64) -> Wakeups {
            guard sequence > lastSequence else { return .none }
            lastSequence = sequence
            return waiters.takeReached(sequence)
        }
    }

    /// The log reached `sequence` (a notification, this writer's commit).
    func advance(to sequence: UInt64) {
        state.withLock { $0.advance(to: sequence) }.resume()
    }

    /// The connection to the server was lost (one of the three closed, or a statement failed
    /// without the server's answer): fail fast from now on and connect again in the background.
    func lose(_ reason: String) {
        guard state.withLock({ $0.lose(reason) }) else { return }
        logger.warning("the connection to PostgreSQL was lost; connecting again", metadata: ["reason": "\(reason)"])
        Task { await self.reconnect() }
    }

    /// Connects to the log at `location`, creating its tables when opened for writing.
    ///
    /// The calling task is suspended until connected (the statements run on the store's own event
    /// loop); no thread waits.
    ///
    /// - Parameters:
    ///   - location: The server and database.
    ///   - readOnly: Appends are refused; the tables must exist.
    ///   - logger: Where postgres-nio's own diagnostics go (by default nowhere: they must never reach
    ///     the standard output `hub events` and `hub export -` write to).
    ///   - statementDeadline: See ``statementDeadline``.
    /// - Returns: The open store; close it with ``close()``.
    /// - Throws: ``EventLogError/invalid(_:)`` naming the log (password masked) and the cause;
    ///   ``EventLogError/noLog(_:)`` when opened read-only on a database without the hub's tables.
    public static func open(
        location: PostgresLocation, readOnly: Bool = false,
        logger: Logger = Logger(label: "hub.postgres", factory: { _ in SwiftLogNoOpLogHandler() }),
        statementDeadline: TimeAmount = .seconds(30)
    ) async throws -> PostgresEventStore {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        var opened: [PostgresConnection] = []
        do {
            let configuration = try Self.configuration(location)
            for id in 1...3 {
                let connection = try await PostgresConnection.connect(
                    on: group.next(), configuration: configuration,
                    id: id, logger: logger
                ).get()
                opened.append(connection)
                _ = try await connection.query("SET synchronous_commit = on", logger: logger).get()
            }
            if !readOnly {
                _ = try await opened[0].query("BEGIN", logger: logger).get()
                for statement in PostgresSchema.create {
                    _ = try await opened[0].query(PostgresQuery(unsafeSQL: statement), logger: logger).get()
                }
                _ = try await opened[0].query("COMMIT", logger: logger).get()
            } else {
                let rows = try await opened[1].query("SELECT to_regclass('hub_log_head') IS NOT NULL", logger: logger).get()
                guard try rows.first?.decode(Bool.self) == true else {
                    throw EventLogError.noLog(
                        "\(location): no hub event log in this database (start one with `hub run --log` or `hub import --log`)")
                }
            }
        } catch {
            await Self.abandon(opened, group)
            throw Self.describe(error, location, "cannot open the event log")
        }
        let store = PostgresEventStore(
            location: location, readOnly: readOnly, logger: logger, statementDeadline: statementDeadline, group: group,
            connections: Connections(writer: opened[0], reader: opened[1], listener: opened[2], generation: 0))
        do {
            try await store.listenFuture(opened[2]).get()
            let rows = try await opened[1].query("SELECT last_seq FROM hub_log_head WHERE id = 1", logger: logger).get()
            store.advance(to: UInt64(try rows.first?.decode(Int64.self) ?? 0))
            store.watch(store.connections.withLock { $0 })
        } catch {
            store.state.withLock { $0.closed = true }
            await Self.abandon(opened, group)
            throw Self.describe(error, location, "cannot open the event log")
        }
        return store
    }

    private init(
        location: PostgresLocation, readOnly: Bool, logger: Logger, statementDeadline: TimeAmount,
        group: MultiThreadedEventLoopGroup, connections: Connections
    ) {
        self.location = location
        self.readOnly = readOnly
        self.logger = logger
        self.statementDeadline = statementDeadline
        self.group = group
        self.connections = Mutex(connections)
        state = Mutex(StoreState())
    }

    /// Closes the connections and the event loop of a store that failed to open. Their own errors
    /// are ignored: the error that made the open fail is the one thrown, and a connection that
    /// cannot close cleanly is gone with its event loop anyway.
    private static func abandon(_ opened: [PostgresConnection], _ group: MultiThreadedEventLoopGroup) async {
        for connection in opened { try? await connection.close() }
        try? await group.shutdownGracefully()
    }

    /// `LISTEN`s on `connection` for the log's notifications: each moves ``lastSequence``.
    func listenFuture(_ connection: PostgresConnection) -> EventLoopFuture<Void> {
        connection.addListener(channel: PostgresSchema.channel) { [weak self] _, notification in
            if let sequence = UInt64(notification.payload) { self?.advance(to: sequence) }
        }
        return connection.query(PostgresQuery(unsafeSQL: "LISTEN \(PostgresSchema.channel)"), logger: logger).map { _ in }
    }

    /// A lost connection is not waited out silently: appends and reads fail fast and the store
    /// connects again (``lose(_:)``).
    func watch(_ set: Connections) {
        for (connection, role) in [(set.writer, "writer"), (set.reader, "reader"), (set.listener, "listener")] {
            connection.closeFuture.whenComplete { [weak self] _ in
                guard let self, self.connections.withLock({ $0.generation }) == set.generation else { return }
                self.lose("\(self.location): the \(role) connection to PostgreSQL was lost")
            }
        }
    }

    /// Connects again after a lost connection, with back-off (0.25 s doubling to 1 s), until it
    /// can or the store is closed; then reads the head again, `LISTEN`s, and lets appends and reads
    /// through.
    func reconnect() async {
        var delay = Duration.milliseconds(250)
        while true {
            if state.withLock({ $0.closing }) { break }
            do {
                let configuration = try Self.configuration(location)
                var opened: [PostgresConnection] = []
                do {
                    let generation = connections.withLock { $0.generation } + 1
                    for id in 1...3 {
                        let connection = try await PostgresConnection.connect(
                            on: group.next(), configuration: configuration,
                            id: Int(generation) * 3 + id, logger: logger
                        ).get()
                        opened.append(connection)
                        _ = try await connection.query("SET synchronous_commit = on", logger: logger).get()
                    }
                    try await listenFuture(opened[2]).get()
                    let rows = try await opened[1].query("SELECT last_seq FROM hub_log_head WHERE id = 1", logger: logger).get()
                    let last = UInt64(try rows.first?.decode(Int64.self) ?? 0)
                    let set = Connections(writer: opened[0], reader: opened[1], listener: opened[2], generation: generation)
                    let old = connections.withLock { current -> Connections in
                        defer { current = set }
                        return current
                    }
                    // The old set is already lost (that is why this runs): its closing cannot fail
                    // in a way that matters, and the new set is in place.
                    for connection in old.all { try? await connection.close() }
                    let closing = state.withLock { state -> Bool in
                        state.view = WriterView()
                        if state.closing { return true }
                        state.fault = nil
                        state.reconnecting = false
                        state.reconnections += 1
                        return false
                    }
                    watch(set)
                    if closing { return }
                    advance(to: last)
                    logger.notice("connected to PostgreSQL again", metadata: ["log": "\(location)", "last_sequence": "\(last)"])
                    return
                } catch {
                    // The attempt failed (that error is kept as the fault below); a half-opened
                    // connection's own closing error adds nothing.
                    for connection in opened { try? await connection.close() }
                    throw error
                }
            } catch {
                state.withLock { $0.fault = "\(location): cannot connect to PostgreSQL again: \(Self.reason(error))" }
            }
            // A cancelled sleep only tries again sooner; `closing` ends the loop.
            try? await Task.sleep(for: delay)
            delay = min(delay * 2, .seconds(1))
        }
        state.withLock { $0.reconnecting = false }
    }

    /// A store dropped without ``close()`` (a read-only one a command opened and let go) closes its
    /// connections here, so none is left half-open. Nothing waits: the connections are told to
    /// close, and the event loop group shuts down once they have (its outcome has nowhere to go
    /// from a deinit).
    deinit {
        guard state.withLock({ !$0.closed }) else { return }
        let onLoop = group.next().inEventLoop
        let closed = connections.withLock({ $0.all }).map { connection -> EventLoopFuture<Void> in connection.close() }
        guard !onLoop else { return }
        let group = group
        EventLoopFuture.whenAllComplete(closed, on: group.next()).whenComplete { _ in
            group.shutdownGracefully { _ in }
        }
    }

    static func configuration(_ location: PostgresLocation) throws -> PostgresConnection.Configuration {
        if location.host.hasPrefix("/") {
            return .init(
                unixSocketPath: "\(location.host)/.s.PGSQL.\(location.port)", username: location.user,
                password: location.password, database: location.database)
        }
        return .init(
            host: location.host, port: location.port, username: location.user, password: location.password,
            database: location.database, tls: try PostgresTLS.settings(location))
    }

    /// One line for an error from PostgreSQL (or the connection), naming the log without its password.
    static func describe(_ error: any Error, _ location: PostgresLocation, _ what: String) -> EventLogError {
        if let logError = error as? EventLogError { return logError }
        return .invalid("\(location): \(what): \(reason(error))")
    }

    /// The server's message for a server error; the kind of failure otherwise (never a password).
    static func reason(_ error: any Error) -> String {
        if let error = error as? PSQLError {
            if let tls = PostgresTLS.reason(error) { return tls }
            if let message = error.serverInfo?[.message] {
                let code = error.serverInfo?[.sqlState].map { " (SQLSTATE \($0))" } ?? ""
                return message + code
            }
            if let underlying = error.underlying { return "\(error.code): \(underlying)" }
            return "\(error.code)"
        }
        return "\(error)"
    }

    // MARK: The core requirements

    /// The last committed global sequence, as this store last saw it (0 when empty).
    public var lastSequence: UInt64 { state.withLock { $0.lastSequence } }

    /// The version of the stream's last event, nil when it has none.
    /// - Throws: `EventLogError.unreachable` when the server cannot be asked (never read as "no stream").
    public func streamVersion(_ stream: String) async throws -> UInt64? {
        let query: PostgresQuery = "SELECT max(stream_version) FROM hub_events WHERE stream = \(stream)"
        let rows = try await ask(query, "cannot read the version of stream \(stream)")
        guard let row = rows.first else { return nil }
        do {
            return try row.decode(Int64?.self).map(UInt64.init)
        } catch {
            throw Self.describe(error, location, "cannot read the version of stream \(stream)")
        }
    }

    /// The original result of an append that carried `commandId` (marked duplicate), nil when none did.
    /// - Throws: `EventLogError.unreachable` when the server cannot be asked.
    public func commandResult(_ commandId: String) async throws -> AppendResult? {
        let query: PostgresQuery = "SELECT first_seq, last_seq, stream_version FROM hub_commands WHERE command_id = \(commandId)"
        let rows = try await ask(query, "cannot look up command id \(commandId)")
        guard let row = rows.first else { return nil }
        do {
            let (first, last, version) = try row.decode((Int64, Int64, Int64?).self)
            return AppendResult(
                firstSequence: UInt64(first), lastSequence: UInt64(last), streamVersion: version.map(UInt64.init),
                duplicate: true)
        } catch {
            throw Self.describe(error, location, "cannot look up command id \(commandId)")
        }
    }

    /// The committed records in `from...through`, in order, asked a chunk at a time without blocking a thread.
    public func records(from: UInt64, through: UInt64) async throws -> [EventRecord] {
        var found: [EventRecord] = []
        var next = max(from, 1)
        while next <= through {
            let upper = min(through, next + Self.readChunk - 1)
            let rows = try await ask(Self.chunkQuery(from: next, through: upper), "cannot read from sequence \(next)")
            for row in rows { found.append(try Self.decode(row).0) }
            if rows.count < Int(upper - next + 1) { break }
            next = upper + 1
        }
        return found
    }

    /// One statement on the reader connection, the task suspended (no thread held) until it answers.
    /// Fails at once while the connection is lost; a failure of the connection itself is
    /// ``EventLogError/unreachable(_:)``, the server's refusal ``EventLogError/invalid(_:)``.
    func ask(_ query: PostgresQuery, _ what: String) async throws -> PostgresQueryResult {
        try failIfConnectionLost()
        do {
            return try await withinDeadline(reader.query(query, logger: logger), what)
        } catch {
            throw Self.failure(error, location, what)
        }
    }

    /// An error of a statement: the server's refusal (``describe(_:_:_:)``), or
    /// ``EventLogError/unreachable(_:)`` when the connection failed (the store connects again).
    static func failure(_ error: any Error, _ location: PostgresLocation, _ what: String) -> EventLogError {
        if let logError = error as? EventLogError { return logError }
        if let psql = error as? PSQLError, !isConnectionFailure(psql) { return describe(error, location, what) }
        return .unreachable("\(location): \(what): \(reason(error))")
    }

    /// Whether an error means the server cannot be reached or is going away (the connection failed,
    /// SQLSTATE class 08 connection exception, class 57 operator intervention such as 57P01 "terminating
    /// connection due to administrator command" at a fast shutdown), rather than a refusal of the statement.
    static func isConnectionFailure(_ error: PSQLError) -> Bool {
        guard error.code == .server else { return true }
        let state = error.serverInfo?[.sqlState] ?? ""
        return state.hasPrefix("08") || state.hasPrefix("57")
    }

    /// Rows copied out per query (the rows of one chunk are all in memory while the caller goes
    /// through them, and the next chunk is on its way).
    static let readChunk: UInt64 = 1024

    /// Calls `body` for each committed record in `from...through`, in order, until it returns false.
    public nonisolated(nonsending) func read(from: UInt64, through: UInt64, _ body: (EventRecord) throws -> Bool) async throws {
        try await readRows(from: from, through: through) { record, _ in try body(record) }
    }

    /// Reads records with their stored chain hashes, a chunk at a time. The next chunk is asked
    /// for before the caller goes through this one, so the server and the connection's thread
    /// prepare it meanwhile (the round trips were a third of a replay's time). The caller is
    /// suspended while a chunk is on its way; `body` runs on the caller's actor.
    nonisolated(nonsending) func readRows(
        from: UInt64, through: UInt64, _ body: (EventRecord, [UInt8]) throws -> Bool
    ) async throws {
        try failIfConnectionLost()
        var chunk = askForChunk(from: max(from, 1), through: through)
        while let current = chunk {
            let rows: PostgresQueryResult
            do { rows = try await withinDeadline(current.rows, "cannot read from sequence \(current.from)") } catch {
                throw Self.failure(error, location, "cannot read from sequence \(current.from)")
            }
            chunk = rows.count == current.size ? askForChunk(from: current.from + UInt64(current.size), through: through) : nil
            for row in rows {
                let (record, hash) = try Self.decode(row)
                guard try body(record, hash) else { return }
            }
        }
    }

    /// Asks for the records `from...` (at most ``readChunk`` of them, none past `through`); nil
    /// when that range is empty.
    private func askForChunk(from: UInt64, through: UInt64) -> (from: UInt64, size: Int, rows: EventLoopFuture<PostgresQueryResult>)? {
        guard from <= through else { return nil }
        let upper = min(through, from + Self.readChunk - 1)
        return (from, Int(upper - from + 1), reader.query(Self.chunkQuery(from: from, through: upper), logger: logger))
    }

    /// The records `from...through`, in order.
    static func chunkQuery(from: UInt64, through upper: UInt64) -> PostgresQuery {
        """
        SELECT \(unescaped: PostgresSchema.selectColumns) FROM hub_events \
        WHERE seq >= \(Int64(clamping: from)) AND seq <= \(Int64(clamping: upper)) ORDER BY seq
        """
    }

    /// A row of ``PostgresSchema/selectColumns``, cell by cell (decoded as one 10-column tuple, the
    /// tuple's type was instantiated at run time for every row: a quarter of a replay's samples).
    static func decode(_ row: PostgresRow) throws -> (EventRecord, [UInt8]) {
        var cells = row.makeIterator()
        guard let c0 = cells.next(), let c1 = cells.next(), let c2 = cells.next(), let c3 = cells.next(), let c4 = cells.next(),
            let c5 = cells.next(), let c6 = cells.next(), let c7 = cells.next(), let c8 = cells.next(), let c9 = cells.next()
        else {
            throw EventLogError.invalid("a hub_events row with fewer columns than \(PostgresSchema.selectColumns)")
        }
        let payload = try c8.decode(ByteBuffer.self), hash = try c9.decode(ByteBuffer.self)
        let record = EventRecord(
            sequence: UInt64(try c0.decode(Int64.self)), stream: try c1.decode(String.self),
            streamVersion: UInt64(try c2.decode(Int64.self)), type: try c3.decode(String.self),
            schemaVersion: UInt16(truncatingIfNeeded: try c4.decode(Int32.self)), timestamp: try c5.decode(Int64.self),
            causation: Causation(commandId: try c6.decode(String?.self), actor: try c7.decode(String.self)),
            payload: Array(payload.readableBytesView))
        return (record, Array(hash.readableBytesView))
    }

    // MARK: Hashes

    /// Views built from the stored rows; each record's chain hash is recomputed from the previous
    /// stored hash and compared with its own stored hash, so an altered row is reported, not handed out.
    public nonisolated(nonsending) func readViews(
        from: UInt64, through: UInt64, _ body: (RecordView) throws -> Bool
    ) async throws {
        let start = max(from, 1)
        guard var previous = try await chainHash(at: start - 1) else { return }
        var frame: [UInt8] = []
        try await readRows(from: start, through: through) { record, stored in
            frame.removeAll(keepingCapacity: true)
            let computed = try RecordFormat.appendFrame(to: &frame, record: record, previousHash: previous)
            guard computed == stored else {
                throw EventLogError.corrupt(
                    segment: "\(location) hub_events", offset: 0, sequence: record.sequence,
                    reason: "hash chain broken: the record's content or order was altered")
            }
            previous = stored
            return try frame.withUnsafeBytes { raw in
                try body(RecordView(body: UnsafeRawBufferPointer(rebasing: raw[RecordFormat.frameHeaderSize...]))!)
            }
        }
    }

    /// The chain hash stored with record `sequence` (the genesis hash for 0), nil past the last record.
    public func chainHash(at sequence: UInt64) async throws -> [UInt8]? {
        if sequence == 0 { return RecordFormat.genesisHash }
        let what = "cannot read the chain hash at \(sequence)"
        let query: PostgresQuery = "SELECT chain_hash FROM hub_events WHERE seq = \(Int64(clamping: sequence))"
        let rows = try await ask(query, what)
        guard let row = rows.first else { return nil }
        do {
            return Array(try row.decode(ByteBuffer.self).readableBytesView)
        } catch {
            throw Self.describe(error, location, what)
        }
    }

    // MARK: Waiting, faults, closing

    /// Returns once a record after `sequence` is committed; throws when the store closes or the task is cancelled.
    public func waitForAppend(after sequence: UInt64) async throws {
        let id = state.withLock { $0.waiters.newId() }
        try await AppendWaiters.suspend { waiter in
            state.withLock { state in
                // A lost connection is not a refusal: the store connects again, and the next append wakes it.
                let refusal: EventLogError? = state.closed ? .closed : nil
                return state.waiters.enter(id, after: sequence, lastSequence: state.lastSequence, refusal: refusal, waiter)
            }
        } cancelled: {
            state.withLock { $0.waiters.remove(id) }
        }
    }

    /// Why the writer stopped accepting appends, nil while it runs.
    public var writerFault: String? { state.withLock { $0.fault } }

    /// A read on a connection the server dropped is not attempted (it could wait for an answer
    /// that never comes): it fails at once with why, until the store has connected again.
    func failIfConnectionLost() throws {
        if let fault = writerFault { throw EventLogError.unreachable(fault) }
    }

    /// Times the store connected again after losing its connection.
    public var reconnections: UInt64 { state.withLock { $0.reconnections } }

    /// Transactions this store's writer has committed: fewer than its appends when concurrent
    /// appends shared one (group commit).
    public var transactionsCommitted: UInt64 { state.withLock { $0.transactions } }

    /// Statements (round trips) this store's writer has sent: one per group commit while it is the
    /// only writer, more when it must learn a stream's version or another writer appended.
    public var writerStatements: UInt64 { state.withLock { $0.statements } }

    /// Stops the writer and the connections; appends after it throw `closed`.
    public func close() async {
        let first = state.withLock { state -> Bool in
            defer { state.closing = true }
            return !state.closing
        }
        guard first else { return }
        // Let queued and in-flight appends finish (a cancelled sleep only makes the loop ask sooner).
        while state.withLock({ $0.writing || !$0.pending.isEmpty }) {
            try? await Task.sleep(nanoseconds: 2_000_000)
        }
        state.withLock { state in
            state.closed = true
            return state.waiters.takeAll()
        }.fail(EventLogError.closed)
        // Closing has no one to report to (`close()` does not throw, and the store is done with the
        // connections either way): a connection that fails to close is gone with the event loop.
        for connection in connections.withLock({ $0.all }) { try? await connection.close() }
        try? await group.shutdownGracefully()
    }
}
