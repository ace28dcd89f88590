#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One event as the log stores it: the envelope every backend keeps, with an opaque payload.
///
/// The log does not interpret payloads; the domain (`HubDomain`) encodes and decodes them. A record is
/// only ever made by the store that commits it: ``EventStore/append(_:)`` assigns ``sequence`` and
/// ``streamVersion``, everything else comes from the ``AppendRequest``.
///
/// - Global ``sequence`` numbers start at 1 and have no gaps: the n-th record ever committed has
///   sequence n, in every backend.
/// - ``streamVersion`` is dense from 0 within each ``stream``: the first event of a stream has
///   version 0, the next 1, and so on.
/// - Records are never changed or removed once committed.
public struct EventRecord: Sendable, Equatable {
    /// The record's place in the whole log: 1 for the first record, then one more for each record, no gaps.
    public var sequence: UInt64
    /// The stream the event belongs to, e.g. `device/lamp`, `animal/rex`, `hub`.
    public var stream: String
    /// The record's place in its stream: 0 for the stream's first event, then one more for each, no gaps.
    public var streamVersion: UInt64
    /// The event type's name, e.g. `SwitchToggled`: what the domain decodes the payload as.
    public var type: String
    /// The version of the payload's shape for this ``type``; old versions stay readable (upcasting).
    public var schemaVersion: UInt16
    /// Microseconds since the Unix epoch, UTC, as given by the appender (the log never reads a clock).
    public var timestamp: Int64
    /// What caused the event: the command (with its id) or the driver observation behind it.
    public var causation: Causation
    /// The encoded event, opaque to the log.
    public var payload: [UInt8]

    /// Makes a record. Only stores (which assign sequences and versions) and readers of exported
    /// files make records; appenders propose events with ``ProposedEvent``.
    ///
    /// - Parameters:
    ///   - sequence: The global sequence number (from 1, gapless).
    ///   - stream: The stream's name.
    ///   - streamVersion: The version within the stream (from 0, gapless).
    ///   - type: The event type's name.
    ///   - schemaVersion: The payload's schema version.
    ///   - timestamp: Microseconds since the Unix epoch, UTC.
    ///   - causation: The command or observation that caused the event.
    ///   - payload: The encoded event.
    public init(
        sequence: UInt64, stream: String, streamVersion: UInt64, type: String, schemaVersion: UInt16,
        timestamp: Int64, causation: Causation, payload: [UInt8]
    ) {
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
///
/// Every event of one ``AppendRequest`` shares its causation. A ``commandId`` makes the append
/// idempotent: the store remembers it for ever, and a later append with the same id appends nothing
/// and returns the first append's ``AppendResult`` marked ``AppendResult/duplicate``.
public struct Causation: Sendable, Equatable, Hashable {
    /// The command id for events appended by a command (the idempotency key), or nil for events
    /// nobody may retry (driver observations, scheduler ticks).
    public var commandId: String?
    /// Who or what: e.g. "mqtt:client-7", "driver:powerplug", "scheduler", "cli:import".
    public var actor: String

    /// Makes a causation.
    ///
    /// - Parameters:
    ///   - commandId: The command's id (the idempotency key), or nil.
    ///   - actor: Who or what caused the events.
    public init(commandId: String? = nil, actor: String) {
        self.commandId = commandId
        self.actor = actor
    }
}

/// An event proposed for appending; the store assigns its sequence and stream version.
public struct ProposedEvent: Sendable, Equatable {
    /// The event type's name (see ``EventRecord/type``).
    public var type: String
    /// The payload's schema version (see ``EventRecord/schemaVersion``).
    public var schemaVersion: UInt16
    /// Microseconds since the Unix epoch, UTC; the store keeps it as given.
    public var timestamp: Int64
    /// The encoded event, opaque to the log.
    public var payload: [UInt8]

    /// Proposes an event.
    ///
    /// - Parameters:
    ///   - type: The event type's name.
    ///   - schemaVersion: The payload's schema version.
    ///   - timestamp: Microseconds since the Unix epoch, UTC.
    ///   - payload: The encoded event.
    public init(type: String, schemaVersion: UInt16, timestamp: Int64, payload: [UInt8]) {
        self.type = type
        self.schemaVersion = schemaVersion
        self.timestamp = timestamp
        self.payload = payload
    }
}

/// Optimistic concurrency for one stream: what the appender believes the stream's version to be.
///
/// The store checks it against the stream's committed version at the moment it commits, and refuses
/// the whole append with ``EventLogError/wrongExpectedVersion(stream:expected:actual:)`` when they differ
/// (a retried command id is answered as a duplicate before this check).
public enum ExpectedVersion: Sendable, Equatable {
    /// Append whatever the stream's version.
    case any
    /// The stream must have no events yet.
    case noStream
    /// The stream's last event must have this version.
    case exact(UInt64)

    /// Whether a stream whose last version is `current` (nil: no events yet) may take the append;
    /// every store checks with this, so the rule is written once.
    public func admits(_ current: UInt64?) -> Bool {
        switch self {
        case .any: true
        case .noStream: current == nil
        case .exact(let version): current == version
        }
    }
}

/// One atomic append: events for one stream, all committed or none.
public struct AppendRequest: Sendable {
    /// The stream every event of the request goes to.
    public var stream: String
    /// The stream version the appender expects (optimistic concurrency).
    public var expected: ExpectedVersion
    /// The cause shared by every event; its command id makes the append idempotent.
    public var causation: Causation
    /// The events, in order; they get consecutive sequences and stream versions. May be empty.
    public var events: [ProposedEvent]
    /// When the append may return: once durable (``Durability/immediate``), or once committed and
    /// readable with its durability a bounded delay away (``Durability/observation``).
    public var durability: Durability

    /// Makes an append request.
    ///
    /// - Parameters:
    ///   - stream: The stream to append to.
    ///   - expected: The version the stream must have (default: any).
    ///   - causation: The command or observation behind the events.
    ///   - events: The events to append, in order.
    ///   - durability: Durable before the append returns (the default), or an observation's
    ///     bounded delay. A request with a command id is always immediate.
    public init(
        stream: String, expected: ExpectedVersion = .any, causation: Causation, events: [ProposedEvent],
        durability: Durability = .immediate
    ) {
        self.stream = stream
        self.expected = expected
        self.causation = causation
        self.events = events
        self.durability = durability
    }

    /// Whether the append must be durable before it returns: immediate requests, and every request
    /// with a command id (a client waits on it, and idempotency is remembered for good).
    public var needsDurability: Bool { durability == .immediate || causation.commandId != nil }
}

/// How durable an append is when it returns (see ``EventStore``'s durability classes).
public enum Durability: Sendable, Equatable {
    /// Durable before the append returns: a command, anything a client waits on.
    case immediate
    /// What a device or bridge reports (readings, sightings, availability): committed, ordered and
    /// readable when the append returns, and durable at the latest after the store's commit delay,
    /// with the next immediate append (whose commit carries it), or when the store closes. A power
    /// cut may lose the observations of the last delay; a killed process loses nothing.
    case observation
}

/// What an append returns. A retried command (same command id) returns the original result with
/// ``duplicate`` set and appends nothing.
public struct AppendResult: Sendable, Equatable {
    /// The global sequence of the first event written.
    public var firstSequence: UInt64
    /// The global sequence of the last event written (for an empty append: `firstSequence - 1`).
    public var lastSequence: UInt64
    /// The stream's version after the append (nil if the stream still has no events).
    public var streamVersion: UInt64?
    /// True when the command id had been appended before: nothing was written, and the sequences
    /// are those of the original append.
    public var duplicate: Bool

    /// Makes a result (stores make these).
    ///
    /// - Parameters:
    ///   - firstSequence: The sequence of the first event written.
    ///   - lastSequence: The sequence of the last event written.
    ///   - streamVersion: The stream's version after the append, or nil.
    ///   - duplicate: Whether this answers a retried command id.
    public init(firstSequence: UInt64, lastSequence: UInt64, streamVersion: UInt64?, duplicate: Bool) {
        self.firstSequence = firstSequence
        self.lastSequence = lastSequence
        self.streamVersion = streamVersion
        self.duplicate = duplicate
    }
}

/// Why the log refused something. Every backend throws these, so callers handle one set of errors.
public enum EventLogError: Error, Equatable, CustomStringConvertible {
    /// The stream's version was not the one the append expected; nothing was appended.
    case wrongExpectedVersion(stream: String, expected: ExpectedVersion, actual: UInt64?)
    /// A committed record failed its check: the log refuses to open (or `verify` reports it).
    /// `segment` and `offset` name where (a segment file and byte offset, or a backend's equivalent).
    case corrupt(segment: String, offset: UInt64, sequence: UInt64?, reason: String)
    /// A write or sync failed: the writer stopped and accepts nothing more (nothing unacknowledged is
    /// assumed durable).
    case writerStopped(reason: String)
    /// A system call failed.
    case io(path: String, operation: String, errno: Int32)
    /// The file system holding `path` is full (`ENOSPC`, or `EDQUOT`: the quota is used up) when
    /// `operation` (a write, creating a file or a directory) needed space. Nothing of the append was
    /// kept: the store cut what it had written back to the last whole record and goes on; the same
    /// append succeeds once space is freed. Distinct from ``io(path:operation:errno:)`` and
    /// ``writerStopped(reason:)``: a failed fsync is never reported as this.
    case storageFull(path: String, operation: String, errno: Int32)
    /// The store was closed.
    case closed
    /// The request cannot be stored (e.g. a name or payload too large), or the store was used wrongly.
    case invalid(String)
    /// A read-only open found no event log at the place it names (no directory or segment, or a
    /// database without the hub's tables): a fact about the place, not a failure to read it.
    case noLog(String)
    /// This process no longer holds the lease that lets one hub of several append (a hot standby took
    /// over: see docs/operations.md); nothing was appended, and this process never appends again.
    case fenced(String)
    /// The log's server cannot be reached now (the connection to the database was lost, or it
    /// refused a read): nothing was appended, unless the reason says an append was in flight (then it
    /// may or may not have been committed). The store reconnects on its own; the same request, with
    /// the same command id, may be sent again once it has.
    case unreachable(String)

    /// One line naming what failed and where.
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
        case let .storageFull(path, operation, code):
            let cause = code == EDQUOT ? "the disk quota is used up (EDQUOT)" : "no space left on device (ENOSPC)"
            return "the disk is full: \(operation) \(path) failed: \(cause); nothing was written"
        case .closed:
            return "event log is closed"
        case let .invalid(message), let .noLog(message):
            return message
        case let .fenced(reason):
            return "not the active hub: \(reason)"
        case let .unreachable(reason):
            return "the event log cannot be reached: \(reason)"
        }
    }
}
