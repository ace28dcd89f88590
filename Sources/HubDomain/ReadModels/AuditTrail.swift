/// The last change of one stream.
public struct StreamChange: Sendable, Equatable, Codable {
    public var sequence: UInt64
    public var timestamp: Int64
    public var type: String
    public var actor: String
    public var commandId: String?
}

public struct AuditEntry: Sendable, Equatable, Codable {
    public var sequence: UInt64
    public var timestamp: Int64
    public var stream: String
    public var type: String
    public var actor: String
    public var commandId: String?

    /// Built on demand, not stored: e.g. "SwitchToggled on device/lamp by alice".
    public var summary: String { "\(type) on \(stream) by \(actor)" }
}

/// Who changed what: last change per stream, counts per actor, and a bounded ring of recent entries.
public struct AuditTrail: Sendable, Equatable, Codable {
    public let capacity: Int
    public private(set) var lastByStream: [String: StreamChange] = [:]
    public private(set) var countsByActor: [String: Int] = [:]
    /// Ring storage; use `recent` for chronological order.
    private var ring: [AuditEntry] = []
    /// Index of the oldest entry once the ring is full.
    private var head: Int = 0
    public private(set) var totalEvents: UInt64 = 0

    public init(capacity: Int = 1000) {
        self.capacity = max(1, capacity)
    }

    /// The most recent entries (at most `capacity`), oldest first.
    public var recent: [AuditEntry] {
        if ring.count < capacity { return ring }
        return Array(ring[head...] + ring[..<head])
    }

    public var count: Int { ring.count }

    public mutating func apply(_ event: HubEvent, context: EventContext) {
        let type = event.typeName
        let stream = event.stream
        totalEvents += 1
        lastByStream[stream] = StreamChange(sequence: context.sequence, timestamp: context.timestamp, type: type,
                                            actor: context.actor, commandId: context.commandId)
        countsByActor[context.actor, default: 0] += 1
        let entry = AuditEntry(sequence: context.sequence, timestamp: context.timestamp, stream: stream, type: type,
                               actor: context.actor, commandId: context.commandId)
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
