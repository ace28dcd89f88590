import HubLog
import NIOCore
import PostgresNIO
import Synchronization

/// Appends: a queue, and one writer task that commits everything waiting in one transaction
/// (group commit).
extension PostgresEventStore {
    /// See ``QueuedAppends/enqueue(_:)``: for the writer task.
    public func enqueue(_ items: [PendingAppend]) {
        let start = state.withLock { state -> Bool? in
            if state.closing { return nil }
            if state.fault != nil { return nil }
            state.pending += items
            if state.writing { return false }
            state.writing = true
            return true
        }
        switch start {
        case nil:
            let error: EventLogError = state.withLock { $0.fault }.map { .writerStopped(reason: $0) } ?? .closed
            for item in items { item.complete(.failure(error)) }
        case true?:
            Task { await self.drain() }
        case false?:
            break
        }
    }

    /// Commits batches until the queue is empty.
    func drain() async {
        while true {
            let batch = state.withLock { state -> [Pending] in
                let batch = state.pending
                state.pending.removeAll()
                if batch.isEmpty { state.writing = false }
                return batch
            }
            if batch.isEmpty { return }
            let results = await commit(batch.map(\.request))
            for (item, result) in zip(batch, results) { item.complete(result) }
        }
    }

    /// One transaction for the batch; a server error (the connection still sound) retries each
    /// request alone so one bad request does not fail the others; a lost connection stops the writer.
    func commit(_ requests: [AppendRequest]) async -> [Result<AppendResult, Error>] {
        do {
            return try await transaction(requests)
        } catch let error as PSQLError where error.code == .server {
            _ = try? await writer.query("ROLLBACK", logger: logger).get()
            if requests.count > 1 {
                var results: [Result<AppendResult, Error>] = []
                for request in requests { results += await commit([request]) }
                return results
            }
            return [.failure(Self.describe(error, location, "append to \(requests[0].stream) refused"))]
        } catch {
            _ = try? await writer.query("ROLLBACK", logger: logger).get()
            let reason = "\(location): \(Self.reason(error)) (an append in flight may or may not have been committed)"
            state.withLock { $0.stop(reason) }
            let failed = state.withLock { state -> [Pending] in
                defer { state.pending.removeAll() }
                return state.pending
            }
            for item in failed { item.complete(.failure(EventLogError.writerStopped(reason: reason))) }
            return requests.map { _ in .failure(EventLogError.writerStopped(reason: reason)) }
        }
    }

    private func run(_ query: PostgresQuery) async throws -> PostgresQueryResult {
        try await writer.query(query, logger: logger).get()
    }

    /// The transaction: lock the head, decide each request, insert, move the head, notify, commit.
    private func transaction(_ requests: [AppendRequest]) async throws -> [Result<AppendResult, Error>] {
        _ = try await run("BEGIN")
        let head = try await run("SELECT last_seq, chain_hash FROM hub_log_head WHERE id = 1 FOR UPDATE")
        guard let headRow = head.first else { throw EventLogError.invalid("\(location): the hub_log_head row is missing") }
        let (headSequence, headHash) = try headRow.decode((Int64, ByteBuffer).self)
        if let problem = try await fenceProblem(run) {
            _ = try await run("ROLLBACK")
            return requests.map { _ in .failure(EventLogError.fenced(problem)) }
        }
        let committedLast = UInt64(headSequence)
        var nextSequence = committedLast + 1
        var hash = Array(headHash.readableBytesView)
        // What the batch needs from the tables, in two queries whatever its size (not two per request).
        var streams = try await currentVersions(of: requests)
        var commands = try await storedResults(of: requests)
        var rows: [(EventRecord, [UInt8])] = []
        var newCommands: [(String, AppendResult)] = []
        var results: [Result<AppendResult, Error>] = []
        var frame: [UInt8] = []

        for request in requests {
            if let problem = Self.textProblem(request) { // not in the lookups above either
                results.append(.failure(EventLogError.invalid(problem)))
                continue
            }
            if let id = request.causation.commandId, var again = commands[id] {
                again.duplicate = true
                results.append(.success(again))
                continue
            }
            let current: UInt64? = streams[request.stream] ?? nil
            guard request.expected.admits(current) else {
                results.append(.failure(EventLogError.wrongExpectedVersion(stream: request.stream, expected: request.expected, actual: current)))
                continue
            }
            if let problem = RecordFormat.problem(with: request) ?? Self.textProblem(request) {
                results.append(.failure(EventLogError.invalid(problem)))
                continue
            }
            let first = nextSequence
            var version = current
            for event in request.events {
                let streamVersion = version.map { $0 + 1 } ?? 0
                let record = EventRecord(sequence: nextSequence, stream: request.stream, streamVersion: streamVersion,
                                         type: event.type, schemaVersion: event.schemaVersion, timestamp: event.timestamp,
                                         causation: request.causation, payload: event.payload)
                frame.removeAll(keepingCapacity: true)
                hash = try RecordFormat.appendFrame(to: &frame, record: record, previousHash: hash)
                rows.append((record, hash))
                version = streamVersion
                nextSequence += 1
            }
            streams[request.stream] = .some(version)
            let result = AppendResult(firstSequence: first, lastSequence: nextSequence - 1, streamVersion: version, duplicate: false)
            if let id = request.causation.commandId, !request.events.isEmpty {
                commands[id] = result
                newCommands.append((id, result))
            }
            results.append(.success(result))
        }

        guard !rows.isEmpty else {
            _ = try await run("ROLLBACK")
            return results
        }
        try await insert(rows)
        try await insert(newCommands)
        let last = nextSequence - 1
        _ = try await run("UPDATE hub_log_head SET last_seq = \(Int64(last)), chain_hash = \(ByteBuffer(bytes: hash)) WHERE id = 1")
        _ = try await run("SELECT pg_notify(\(PostgresSchema.channel), \(String(last)))")
        _ = try await run("COMMIT")
        state.withLock { state in
            state.transactions += 1
            state.advance(to: last)
        }
        return results
    }

    /// Each requested stream's last version (nil: no stream yet), in one query.
    private func currentVersions(of requests: [AppendRequest]) async throws -> [String: UInt64?] {
        let names = Array(Set(requests.filter { Self.textProblem($0) == nil }.map(\.stream)))
        var versions: [String: UInt64?] = Dictionary(uniqueKeysWithValues: names.map { ($0, nil) })
        let rows = try await run("SELECT stream, max(stream_version) FROM hub_events WHERE stream = ANY(\(names)) GROUP BY stream")
        for row in rows {
            let (stream, version) = try row.decode((String, Int64?).self)
            versions[stream] = .some(version.map(UInt64.init))
        }
        return versions
    }

    /// The original results of the batch's command ids appended before, in one query.
    private func storedResults(of requests: [AppendRequest]) async throws -> [String: AppendResult] {
        let ids = Array(Set(requests.filter { Self.textProblem($0) == nil }.compactMap(\.causation.commandId)))
        guard !ids.isEmpty else { return [:] }
        var found: [String: AppendResult] = [:]
        let rows = try await run("SELECT command_id, first_seq, last_seq, stream_version FROM hub_commands WHERE command_id = ANY(\(ids))")
        for row in rows {
            let (id, first, last, version) = try row.decode((String, Int64, Int64, Int64?).self)
            found[id] = AppendResult(firstSequence: UInt64(first), lastSequence: UInt64(last), streamVersion: version.map(UInt64.init),
                                     duplicate: true)
        }
        return found
    }

    /// PostgreSQL's text cannot hold a NUL character; say so rather than fail the transaction.
    static func textProblem(_ request: AppendRequest) -> String? {
        let names = [request.stream, request.causation.actor, request.causation.commandId ?? ""] + request.events.map(\.type)
        if names.contains(where: { $0.utf8.contains(0) }) {
            return "append to \(request.stream): a stream, type, actor or command id with a NUL character cannot be stored in PostgreSQL"
        }
        return nil
    }

    /// Multi-row inserts of the records (at most 1,000 rows a statement: 10 parameters each).
    private func insert(_ rows: [(EventRecord, [UInt8])]) async throws {
        var start = 0
        while start < rows.count {
            let chunk = rows[start..<min(start + 1000, rows.count)]
            var bindings = PostgresBindings(capacity: chunk.count * 10)
            var values: [String] = []
            for (record, hash) in chunk {
                let base = bindings.count
                values.append("(" + (1...10).map { "$\(base + $0)" }.joined(separator: ",") + ")")
                bindings.append(Int64(record.sequence))
                bindings.append(record.stream)
                bindings.append(Int64(record.streamVersion))
                bindings.append(record.type)
                bindings.append(Int32(record.schemaVersion))
                bindings.append(record.timestamp)
                bindings.append(record.causation.commandId)
                bindings.append(record.causation.actor)
                bindings.append(ByteBuffer(bytes: record.payload))
                bindings.append(ByteBuffer(bytes: hash))
            }
            let sql = "INSERT INTO hub_events (\(PostgresSchema.selectColumns)) VALUES " + values.joined(separator: ",")
            _ = try await run(PostgresQuery(unsafeSQL: sql, binds: bindings))
            start += chunk.count
        }
    }

    private func insert(_ commands: [(String, AppendResult)]) async throws {
        guard !commands.isEmpty else { return }
        var bindings = PostgresBindings(capacity: commands.count * 4)
        var values: [String] = []
        for (id, result) in commands {
            let base = bindings.count
            values.append("(" + (1...4).map { "$\(base + $0)" }.joined(separator: ",") + ")")
            bindings.append(id)
            bindings.append(Int64(result.firstSequence))
            bindings.append(Int64(result.lastSequence))
            bindings.append(result.streamVersion.map { Int64($0) })
        }
        let sql = "INSERT INTO hub_commands (command_id, first_seq, last_seq, stream_version) VALUES " + values.joined(separator: ",")
        _ = try await run(PostgresQuery(unsafeSQL: sql, binds: bindings))
    }
}
