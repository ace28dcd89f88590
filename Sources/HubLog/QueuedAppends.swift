/// One append waiting for a store's writer, and how to answer it.
public struct PendingAppend: Sendable {
    /// What to append.
    public var request: AppendRequest
    /// Called once with the append's result or error, from the writer.
    public var complete: @Sendable (Result<AppendResult, Error>) -> Void

    /// Creates a pending append.
    public init(request: AppendRequest, complete: @escaping @Sendable (Result<AppendResult, Error>) -> Void) {
        self.request = request
        self.complete = complete
    }
}

/// A store whose appends wait in a queue for one writer, which commits what has gathered together
/// (group commit): the segment store's writer thread, the PostgreSQL store's writer task.
/// ``append(_:)`` and ``appendAll(_:)`` are the same for every such store, read-only refusal included.
public protocol QueuedAppends: EventStore {
    /// True when the store takes no appends (it has no writer).
    var readOnly: Bool { get }
    /// Hands appends to the writer; each is answered through its `complete`, once.
    func enqueue(_ items: [PendingAppend])
}

extension QueuedAppends {
    /// See ``EventStore/append(_:)``: queued for the writer, answered after its commit is durable.
    public func append(_ request: AppendRequest) async throws -> AppendResult {
        if readOnly { throw Self.readOnlyRefusal }
        return try await withCheckedThrowingContinuation { continuation in
            enqueue([PendingAppend(request: request, complete: { continuation.resume(with: $0) })])
        }
    }

    /// Appends several requests in this order, enqueued together (so they share one commit when the
    /// writer is idle). Each gets its own result; a failed one does not stop the others.
    public func appendAll(_ requests: [AppendRequest]) async -> [Result<AppendResult, Error>] {
        if requests.isEmpty { return [] }
        if readOnly { return requests.map { _ in .failure(Self.readOnlyRefusal) } }
        return await withCheckedContinuation { continuation in
            let collector = ResultCollector(count: requests.count) { continuation.resume(returning: $0) }
            enqueue(
                requests.enumerated().map { index, request in
                    PendingAppend(request: request, complete: { collector.set(index, $0) })
                })
        }
    }

    static var readOnlyRefusal: EventLogError { .invalid("the event log was opened read-only") }
}
