import HubLog
import NIOCore
import PostgresNIO
import Synchronization

/// Appends: a queue, and one writer task that commits everything waiting in one call of the
/// `hub_append` procedure (group commit; see ``PostgresAppendProcedure``).
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
            let error: EventLogError = state.withLock { $0.fault }.map { .unreachable($0) } ?? .closed
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
    /// After any error the writer forgets what it knew of the head and the streams.
    func commit(_ requests: [AppendRequest]) async -> [Result<AppendResult, Error>] {
        do {
            return try await transaction(requests)
        } catch let error as PSQLError where !Self.isConnectionFailure(error) {
            state.withLock { $0.view = WriterView() }
            if requests.count > 1 {
                var results: [Result<AppendResult, Error>] = []
                for request in requests { results += await commit([request]) }
                return results
            }
            return [.failure(Self.describe(error, location, "append to \(requests[0].stream) refused"))]
        } catch {
            state.withLock { $0.view = WriterView() }
            if let logError = error as? EventLogError, case .unreachable = logError { return requests.map { _ in .failure(logError) } }
            let reason = "\(location): \(Self.reason(error)) (an append in flight may or may not have been committed)"
            lose(reason)
            let failed = state.withLock { state -> [Pending] in
                defer { state.pending.removeAll() }
                return state.pending
            }
            for item in failed { item.complete(.failure(EventLogError.unreachable(reason))) }
            return requests.map { _ in .failure(EventLogError.unreachable(reason)) }
        }
    }

    private func run(_ query: PostgresQuery) async throws -> PostgresQueryResult {
        try failIfConnectionLost()
        state.withLock { $0.statements += 1 }
        return try await withinDeadline(writer.query(query, logger: logger), "a statement of the writer")
    }

    /// How often a batch is decided again because another writer appended in between, before it fails.
    static let maxMoves = 20

    /// Decide the batch against what the writer knows, and have `hub_append` check and commit it in
    /// one round trip; decide again when the database says the writer's view was stale (`moved`)
    /// or some command ids were appended before (`duplicates`).
    private func transaction(_ requests: [AppendRequest]) async throws -> [Result<AppendResult, Error>] {
        let streams = Set(requests.filter { Self.textProblem($0) == nil }.map(\.stream))
        var known: [String: AppendResult] = [:]
        var moves = 0
        while true {
            try await learn(streams)
            let (view, fence) = state.withLock { ($0.view, $0.fence) }
            guard let head = view.head else { throw EventLogError.invalid("\(location): the writer lost the log's head") }
            let plan = try AppendPlan(requests, head: head, versions: view.versions, known: known, fence: fence)
            guard plan.needsDatabase else { return plan.results }
            let rows = try await run(plan.call.query)
            guard let row = rows.first else { throw EventLogError.invalid("\(location): hub_append answered no row") }
            switch try PostgresAppendOutcome(row) {
            case .committed(let sequence, let hash):
                state.withLock { state in
                    state.view.head = WriterView.Head(sequence: sequence, hash: hash, time: plan.headTime)
                    state.view.remember(plan.versions)
                    if plan.call.rows > 0 { state.transactions += 1 }
                    return state.advance(to: sequence)
                }.resume()
                return plan.results
            case .fenced(let holder, let token, let live):
                let reason = Self.fenceReason(fence, current: holder, currentToken: token, live: live)
                return requests.map { _ in .failure(EventLogError.fenced(reason)) }
            case .moved:
                // Another writer appended: learn the new head (with its record time) afresh.
                state.withLock { $0.view = WriterView() }
                moves += 1
                if moves >= Self.maxMoves {
                    let reason =
                        "\(location): other writers appended \(moves) times while this writer decided its batch; nothing of it was appended"
                    return requests.map { _ in .failure(EventLogError.invalid(reason)) }
                }
            case .duplicates(let found):
                known.merge(found) { $1 }
            }
        }
    }

    /// Makes sure the writer knows the head and the versions of `streams`: one query when it lacks
    /// any, two when the head it knew has moved (another writer appended: all it knew is dropped).
    private func learn(_ streams: Set<String>) async throws {
        var ask = state.withLock { state in
            state.view.head == nil ? streams : streams.filter { state.view.versions[$0] == nil }
        }
        guard !ask.isEmpty || state.withLock({ $0.view.head == nil }) else { return }
        while true {
            let rows = try await run(
                """
                SELECT h.last_seq, h.chain_hash, (SELECT ts FROM hub_events e WHERE e.seq = h.last_seq), s.name, \
                (SELECT max(stream_version) FROM hub_events e WHERE e.stream = s.name) \
                FROM hub_log_head h LEFT JOIN unnest(\(Array(ask))::text[]) AS s(name) ON true WHERE h.id = 1
                """)
            var head: WriterView.Head?
            var found: [String: UInt64?] = [:]
            for row in rows {
                let (sequence, hash, time, name, version) = try row.decode((Int64, ByteBuffer, Int64?, String?, Int64?).self)
                head = WriterView.Head(sequence: UInt64(sequence), hash: Array(hash.readableBytesView), time: time ?? .min)
                if let name { found[name] = .some(version.map(UInt64.init)) }
            }
            guard let head else { throw EventLogError.invalid("\(location): the hub_log_head row is missing") }
            let complete = state.withLock { state -> Bool in
                let same = state.view.head.map { $0.sequence == head.sequence && $0.hash == head.hash } ?? false
                if !same { state.view = WriterView(head: head) }
                state.view.remember(found)
                return same || ask == streams
            }
            if complete { return }
            ask = streams
        }
    }

    /// Why an append was fenced, from what `hub_append` found in `hub_lease`.
    static func fenceReason(_ fence: (holder: String, token: Int64)?, current: String, currentToken: Int64, live: Bool) -> String {
        let (holder, token) = fence ?? ("", 0)
        if current == holder && currentToken == token {
            return "instance \(holder)'s lease (token \(token)) expired before it was renewed; nothing was appended"
        }
        return "instance \(current) holds the lease now (token \(currentToken), this instance \(holder) had \(token)); nothing was appended"
    }

    /// PostgreSQL's text cannot hold a NUL character; say so rather than fail the transaction.
    static func textProblem(_ request: AppendRequest) -> String? {
        let names = [request.stream, request.causation.actor, request.causation.commandId ?? ""] + request.events.map(\.type)
        if names.contains(where: { $0.utf8.contains(0) }) {
            return "append to \(request.stream): a stream, type, actor or command id with a NUL character cannot be stored in PostgreSQL"
        }
        return nil
    }
}

/// What the writer knows of the log between its commits: the head and the last version of the
/// streams it has met. Only the writer task reads or changes it; `hub_append` checks the head in
/// every transaction, so a stale view is never acted on.
struct WriterView {
    /// The log's last record: its sequence, chain hash and timestamp (`Int64.min` for an empty log).
    struct Head {
        var sequence: UInt64
        var hash: [UInt8]
        var time: Int64
    }

    var head: Head?
    /// Stream to its last version (nil: the stream has no events yet).
    var versions: [String: UInt64?] = [:]

    /// Streams remembered at most; more, and the writer starts again from the streams it meets.
    static let maxStreams = 100_000

    mutating func remember(_ changed: [String: UInt64?]) {
        if versions.count + changed.count > Self.maxStreams { versions.removeAll() }
        versions.merge(changed) { $1 }
    }
}
