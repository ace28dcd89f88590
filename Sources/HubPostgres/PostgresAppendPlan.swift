import HubLog

/// A batch decided against the writer's view of the log: each request's answer, the records with
/// their chain hashes and the new command ids (as one ``PostgresAppendCall``), and the streams'
/// versions after it. Pure: the database confirms the view when it runs the call.
struct AppendPlan {
    var call: PostgresAppendCall
    /// One per request, in order; valid only once the call has committed.
    var results: [Result<AppendResult, Error>] = []
    /// The batch's streams and their versions after it.
    var versions: [String: UInt64?] = [:]
    /// False when every request was refused for what it is, without asking the database.
    var needsDatabase = false
    /// The timestamp of the newest record once the call has committed (record time only moves forward).
    var headTime: Int64

    /// - Parameters:
    ///   - head: The last sequence, chain hash and record timestamp the writer knows (`Int64.min`
    ///     for an empty log): no record gets a timestamp earlier than the one before it.
    ///   - versions: The last version of every stream of the batch (nil: no events yet).
    ///   - known: Command ids the database said were appended before, with their results.
    ///   - fence: The lease every append must hold, if any.
    init(
        _ requests: [AppendRequest], head: WriterView.Head, versions view: [String: UInt64?],
        known commands: [String: AppendResult], fence: (holder: String, token: Int64)?
    ) throws {
        call = PostgresAppendCall(headSequence: head.sequence, headHash: head.hash, fence: fence)
        var commands = commands
        var ids: Set<String> = []
        var next = head.sequence + 1
        var hash = head.hash
        headTime = head.time
        var frame: [UInt8] = []
        for request in requests {
            if let problem = PostgresEventStore.textProblem(request) {
                results.append(.failure(EventLogError.invalid(problem)))
                continue
            }
            needsDatabase = true
            if let id = request.causation.commandId {
                if var again = commands[id] {
                    again.duplicate = true
                    results.append(.success(again))
                    continue
                }
                ids.insert(id)
            }
            guard let current = versions[request.stream] ?? view[request.stream] else {
                throw EventLogError.invalid("append to \(request.stream): the writer does not know the stream's version")
            }
            guard request.expected.admits(current) else {
                results.append(
                    .failure(EventLogError.wrongExpectedVersion(stream: request.stream, expected: request.expected, actual: current)))
                continue
            }
            if let problem = RecordFormat.problem(with: request) {
                results.append(.failure(EventLogError.invalid(problem)))
                continue
            }
            let first = next
            var version = current
            for event in request.events {
                let streamVersion = version.map { $0 + 1 } ?? 0
                headTime = max(headTime, event.timestamp)
                let record = EventRecord(
                    sequence: next, stream: request.stream, streamVersion: streamVersion,
                    type: event.type, schemaVersion: event.schemaVersion, timestamp: headTime,
                    causation: request.causation, payload: event.payload)
                frame.removeAll(keepingCapacity: true)
                hash = try RecordFormat.appendFrame(to: &frame, record: record, previousHash: hash)
                call.add(record, hash: hash)
                version = streamVersion
                next += 1
            }
            versions[request.stream] = .some(version)
            let result = AppendResult(firstSequence: first, lastSequence: next - 1, streamVersion: version, duplicate: false)
            if let id = request.causation.commandId, !request.events.isEmpty {
                commands[id] = result
                call.add(command: id, result)
            }
            results.append(.success(result))
        }
        call.ids = Array(ids)
    }
}
