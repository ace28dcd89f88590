/// What the log knows about an event besides its body.
public struct EventContext: Sendable, Equatable, Codable {
    /// Global sequence number in the log.
    public var sequence: UInt64
    /// When the event was appended, microseconds since the Unix epoch, UTC.
    public var timestamp: Int64
    /// Who caused it (a user, a driver, "scheduler", ...).
    public var actor: String
    /// The caller's command id, when the event came from a command that carried one.
    public var commandId: String?

    /// Why, when the command declared it (`automation.porch_lights`).
    public var cause: String?

    /// Creates a context; `commandId` defaults to nil.
    ///
    /// - Parameter actor: the record's actor field as stored: the actor, or `<actor>#<cause>`
    ///   (``Attribution/init(stored:)``), split here into ``actor`` and ``cause``.
    public init(sequence: UInt64, timestamp: Int64, actor: String, commandId: String? = nil) {
        self.init(sequence: sequence, timestamp: timestamp, attribution: Attribution(stored: actor), commandId: commandId)
    }

    /// Creates a context from an actor field already split: what a replay passes, which splits each
    /// distinct actor field once rather than every event's.
    public init(sequence: UInt64, timestamp: Int64, attribution: Attribution, commandId: String?) {
        self.sequence = sequence; self.timestamp = timestamp; self.actor = attribution.actor; self.commandId = commandId
        self.cause = attribution.cause
    }
}

/// A value with the time it was measured.
public struct ReadingValue: Sendable, Equatable, Codable {
    /// The measured value, in its quantity's unit.
    public var value: Double
    /// Microseconds since the Unix epoch, UTC.
    public var measuredAt: Int64
    /// Creates a value.
    public init(value: Double, measuredAt: Int64) { self.value = value; self.measuredAt = measuredAt }

    /// The latest by measurement: `new` unless `held` was measured after it (on equal times, `new`).
    static func latest(_ held: ReadingValue?, _ new: ReadingValue) -> ReadingValue {
        guard let held, held.measuredAt > new.measuredAt else { return new }
        return held
    }
}
