/// One event as the log stores it: the envelope every backend keeps, with an opaque payload.
///
/// The log does not interpret payloads; the domain encodes and decodes them. Global `sequence`
/// numbers start at 1 and have no gaps; `streamVersion` is dense from 0 within each stream.
public struct EventRecord: Sendable, Equatable {
    public var sequence: UInt64
    public var stream: String
    public var streamVersion: UInt64
    public var type: String
    public var schemaVersion: UInt16
    /// Microseconds since the Unix epoch, UTC, as given by the appender (the log never reads a clock).
    public var timestamp: Int64
    public var causation: Causation
    public var payload: [UInt8]

    public init(sequence: UInt64, stream: String, streamVersion: UInt64, type: String, schemaVersion: UInt16,
                timestamp: Int64, causation: Causation, payload: [UInt8]) {
        self.sequence = sequence
        self.stream = stream
        self.streamVersion = streamVersion
        self.type = type
        self.schemaVersion = schemaVersion
        self.timestamp = timestamp
        self.causation = causation
        self.payload = payload
    }
}

/// What caused an event: the command (with its id) or the driver observation behind it.
public struct Causation: Sendable, Equatable, Hashable {
    /// The command id for events appended by a command (idempotency key), or nil.
    public var commandId: String?
    /// Who or what: e.g. "mqtt:client-7", "driver:powerplug", "scheduler", "cli:import".
    public var actor: String

    public init(commandId: String? = nil, actor: String) {
        self.commandId = commandId
        self.actor = actor
    }
}

/// An event proposed for appending; the log assigns sequence and stream version.
public struct ProposedEvent: Sendable, Equatable {
    public var type: String
    public var schemaVersion: UInt16
    public var timestamp: Int64
    public var payload: [UInt8]

    public init(type: String, schemaVersion: UInt16, timestamp: Int64, payload: [UInt8]) {
        self.type = type
        self.schemaVersion = schemaVersion
        self.timestamp = timestamp
        self.payload = payload
    }
}

/// Optimistic concurrency for one stream.
public enum ExpectedVersion: Sendable, Equatable {
    /// Append whatever the stream's version.
    case any
    /// The stream must not exist yet.
    case noStream
    /// The stream's last event must have this version.
    case exact(UInt64)
}

/// One atomic append: events for one stream, all or nothing.
public struct AppendRequest: Sendable {
    public var stream: String
    public var expected: ExpectedVersion
    public var causation: Causation
    public var events: [ProposedEvent]

    public init(stream: String, expected: ExpectedVersion = .any, causation: Causation, events: [ProposedEvent]) {
        self.stream = stream
        self.expected = expected
        self.causation = causation
        self.events = events
    }
}

/// What an append returns. A retried command (same command id) returns the original result with
/// `duplicate == true` and appends nothing.
public struct AppendResult: Sendable, Equatable {
    /// First and last global sequence written (for an empty append: last == first - 1).
    public var firstSequence: UInt64
    public var lastSequence: UInt64
    /// The stream's version after the append (nil if the stream still has no events).
    public var streamVersion: UInt64?
    public var duplicate: Bool

    public init(firstSequence: UInt64, lastSequence: UInt64, streamVersion: UInt64?, duplicate: Bool) {
        self.firstSequence = firstSequence
        self.lastSequence = lastSequence
        self.streamVersion = streamVersion
        self.duplicate = duplicate
    }
}

public enum EventLogError: Error, Equatable, CustomStringConvertible {
    case wrongExpectedVersion(stream: String, expected: ExpectedVersion, actual: UInt64?)
    /// A record before the tail failed its check: the log refuses to open.
    case corrupt(segment: String, offset: UInt64, sequence: UInt64?, reason: String)
    /// fsync (or write) failed: the writer stopped and accepts nothing more.
    case writerStopped(reason: String)
    case io(path: String, operation: String, errno: Int32)
    case closed
    case invalid(String)

    public var description: String {
        switch self {
        case let .wrongExpectedVersion(stream, expected, actual):
            return "stream \(stream): expected version \(expected), actual \(actual.map(String.init) ?? "no stream")"
        case let .corrupt(segment, offset, sequence, reason):
            let seq = sequence.map { " (sequence \($0))" } ?? ""
            return "corrupt event log: segment \(segment) offset \(offset)\(seq): \(reason)"
        case let .writerStopped(reason):
            return "event log writer stopped: \(reason)"
        case let .io(path, operation, code):
            return "\(operation) \(path) failed: errno \(code)"
        case .closed:
            return "event log is closed"
        case let .invalid(message):
            return message
        }
    }
}

/// The storage protocol every backend implements (the embedded segment store; PostgreSQL later).
public protocol EventStore: Sendable {
    /// Appends atomically and returns once the events are durable (fsync'd).
    func append(_ request: AppendRequest) async throws -> AppendResult
    /// The last committed global sequence (0 when empty).
    var lastSequence: UInt64 { get }
    /// The original result of an earlier append with this command id (marked duplicate), or nil.
    func commandResult(_ commandId: String) -> AppendResult?
    /// The current version of a stream, or nil when it has no events.
    func streamVersion(_ stream: String) -> UInt64?
    /// Calls `body` for every committed record with sequence in `from...through`, in order.
    /// Return false from `body` to stop early.
    func read(from: UInt64, through: UInt64, _ body: (EventRecord) throws -> Bool) throws
    /// Returns once the log holds an event after `sequence` (at once if it already does). Throws when
    /// the store is closed or its writer stopped, or on task cancellation.
    func waitForAppend(after sequence: UInt64) async throws
}

extension EventStore {
    /// Records from `from` on, then live appends as they commit (a catch-up subscription). A slow
    /// subscriber is never dropped: it reads on from the log at its own pace.
    public func subscribe(from: UInt64) -> EventSubscription {
        EventSubscription(store: self, from: max(from, 1))
    }
}

/// A catch-up subscription: reads committed events in chunks, then waits for new appends.
public struct EventSubscription: AsyncSequence, Sendable {
    public typealias Element = EventRecord
    let store: any EventStore
    let from: UInt64
    var chunk: UInt64 = 512

    public struct AsyncIterator: AsyncIteratorProtocol {
        let store: any EventStore
        var next: UInt64
        let chunk: UInt64
        var buffer: [EventRecord] = []
        var position = 0

        public mutating func next() async throws -> EventRecord? {
            while position >= buffer.count {
                if Task.isCancelled { return nil }
                buffer.removeAll(keepingCapacity: true)
                position = 0
                var collected: [EventRecord] = []
                try store.read(from: next, through: next + chunk - 1) { collected.append($0); return true }
                buffer = collected
                if buffer.isEmpty {
                    do { try await store.waitForAppend(after: next - 1) } catch is CancellationError { return nil }
                }
            }
            let record = buffer[position]
            position += 1
            next = record.sequence + 1
            return record
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(store: store, next: from, chunk: chunk)
    }
}
