/// The last change of one stream.
public struct StreamChange: Sendable, Equatable, Codable {
    /// The global sequence number of the change.
    public var sequence: UInt64
    /// When it was appended, µs since the Unix epoch.
    public var timestamp: Int64
    /// The event type's name.
    public var type: String
    /// Who caused it.
    public var actor: String
    /// The command id it came with, if any.
    public var commandId: String?
    /// Why, when the command declared it (`automation.porch_lights`).
    public var cause: String? = nil
}

/// One event in the audit trail's ring of recent entries.
public struct AuditEntry: Sendable, Equatable {
    /// The global sequence number.
    public var sequence: UInt64
    /// When it was appended, µs since the Unix epoch.
    public var timestamp: Int64
    /// The stream, kept as its key: the fold makes an entry for every event, and a stream's name
    /// longer than 15 bytes would be a heap allocation each time.
    public var streamKey: StreamKey
    /// The event type's name.
    public var type: String
    /// Who caused it (a user, a driver, "scheduler", ...).
    public var actor: String
    /// The command id it came with, if any.
    public var commandId: String?
    /// Why, when the command declared it (`automation.porch_lights`).
    public var cause: String? = nil

    /// The stream's name, e.g. `device/lamp`.
    public var stream: String { streamKey.stream }
    /// Built on demand, not stored: e.g. "SwitchRequested on device/lamp by mqtt:alice,
    /// automation.porch_lights" (the cause when one was declared).
    public var summary: String { "\(type) on \(stream) by \(Attribution(actor: actor, cause: cause).text)" }
}

/// Encoded with the stream's name, as before the key was kept (the snapshot's shape is unchanged).
extension AuditEntry: Codable {
    enum CodingKeys: String, CodingKey { case sequence, timestamp, stream, type, actor, commandId, cause }

    /// Decodes the snapshot form (the stream by name).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        sequence = try c.decode(UInt64.self, forKey: .sequence)
        timestamp = try c.decode(Int64.self, forKey: .timestamp)
        streamKey = try StreamKey.decoding(c.decode(String.self, forKey: .stream), at: c.codingPath + [CodingKeys.stream])
        type = try c.decode(String.self, forKey: .type)
        actor = try c.decode(String.self, forKey: .actor)
        commandId = try c.decodeIfPresent(String.self, forKey: .commandId)
        cause = try c.decodeIfPresent(String.self, forKey: .cause)
    }

    /// Encodes the snapshot form (the stream by name).
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(sequence, forKey: .sequence)
        try c.encode(timestamp, forKey: .timestamp)
        try c.encode(stream, forKey: .stream)
        try c.encode(type, forKey: .type)
        try c.encode(actor, forKey: .actor)
        try c.encodeIfPresent(commandId, forKey: .commandId)
        try c.encodeIfPresent(cause, forKey: .cause)
    }
}

/// Who changed what: last change per stream, counts per actor, and a bounded ring of recent entries.
public struct AuditTrail: Sendable, Equatable {
    /// How many recent entries the ring keeps (at least 1).
    public let capacity: Int
    /// The last change of every stream, by the stream's key (the fold's hot path: no name is built).
    public private(set) var lastByStreamKey: [StreamKey: StreamChange] = [:]
    /// How many events each actor caused.
    public private(set) var countsByActor: [String: Int] = [:]
    /// Ring storage; use `recent` for chronological order.
    private var ring: [AuditEntry] = []
    /// Index of the oldest entry once the ring is full.
    private var head: Int = 0
    /// Every event folded, including those that fell out of the ring.
    public private(set) var totalEvents: UInt64 = 0

    /// An empty trail keeping the newest `capacity` entries (at least 1).
    public init(capacity: Int = 1000) {
        self.capacity = max(1, capacity)
    }

    /// The most recent entries (at most `capacity`), oldest first.
    public var recent: [AuditEntry] {
        if ring.count < capacity { return ring }
        return Array(ring[head...] + ring[..<head])
    }

    /// The entries held, at most `capacity`.
    public var count: Int { ring.count }

    /// The last change of every stream, by the stream's name (built on each call: bind it once).
    public var lastByStream: [String: StreamChange] {
        Dictionary(uniqueKeysWithValues: lastByStreamKey.map { ($0.key.stream, $0.value) })
    }

    /// Folds one event: records the stream's last change, counts the actor, and rings the entry.
    public mutating func apply(_ event: HubEvent, context: EventContext) {
        let type = event.typeName
        let stream = event.streamKey
        totalEvents += 1
        lastByStreamKey[stream] = StreamChange(
            sequence: context.sequence, timestamp: context.timestamp, type: type,
            actor: context.actor, commandId: context.commandId, cause: context.cause)
        countsByActor[context.actor, default: 0] += 1
        let entry = AuditEntry(
            sequence: context.sequence, timestamp: context.timestamp, streamKey: stream, type: type,
            actor: context.actor, commandId: context.commandId, cause: context.cause)
        if ring.count < capacity {
            if ring.capacity < capacity { ring.reserveCapacity(capacity) }
            ring.append(entry)
        } else {
            ring[head] = entry
            head += 1
            if head == capacity { head = 0 }
        }
    }
}

/// Encoded as before the streams were kept by key: `lastByStream` an object by stream name (the
/// snapshot's shape is unchanged, so snapshots written before still restore).
extension AuditTrail: Codable {
    enum CodingKeys: String, CodingKey { case capacity, lastByStream, countsByActor, ring, head, totalEvents }

    /// Decodes the snapshot form (`lastByStream` by stream name).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        capacity = try c.decode(Int.self, forKey: .capacity)
        let byName = try c.decode([String: StreamChange].self, forKey: .lastByStream)
        var byKey: [StreamKey: StreamChange] = [:]
        byKey.reserveCapacity(byName.count)
        for (name, change) in byName {
            byKey[try StreamKey.decoding(name, at: c.codingPath + [CodingKeys.lastByStream])] = change
        }
        lastByStreamKey = byKey
        countsByActor = try c.decode([String: Int].self, forKey: .countsByActor)
        ring = try c.decode([AuditEntry].self, forKey: .ring)
        head = try c.decode(Int.self, forKey: .head)
        totalEvents = try c.decode(UInt64.self, forKey: .totalEvents)
    }

    /// Encodes the snapshot form (`lastByStream` by stream name).
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(capacity, forKey: .capacity)
        try c.encode(lastByStream, forKey: .lastByStream)
        try c.encode(countsByActor, forKey: .countsByActor)
        try c.encode(ring, forKey: .ring)
        try c.encode(head, forKey: .head)
        try c.encode(totalEvents, forKey: .totalEvents)
    }
}

extension StreamKey {
    /// A stream's name read back from an encoded read model; one that is not a stream's name fails
    /// the decoding (the snapshot is then not used, and the log is replayed).
    static func decoding(_ name: String, at path: [any CodingKey]) throws -> StreamKey {
        guard let key = StreamKey(stream: name) else {
            throw DecodingError.dataCorrupted(.init(codingPath: path, debugDescription: "\"\(name)\" is not a stream's name"))
        }
        return key
    }
}
