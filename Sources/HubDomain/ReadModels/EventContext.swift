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

    /// Creates a context; `commandId` defaults to nil.
    ///
    /// - Parameter actor: the record's actor field as stored: the actor, or `<actor>#<cause>`
    ///   (``Attribution/init(stored:)``); ``actor`` is the part before the `#`. The cause is not
    ///   kept here: no read model folds it, and the context is copied for every event a replay
    ///   folds (a record's cause is read from its actor field where it is shown).
    public init(sequence: UInt64, timestamp: Int64, actor: String, commandId: String? = nil) {
        self.init(sequence: sequence, timestamp: timestamp, attributedTo: Attribution(stored: actor).actor, commandId: commandId)
    }

    /// Creates a context for an actor already split from its cause (``Attribution/actor``): what a
    /// replay that splits each distinct actor field once passes.
    public init(sequence: UInt64, timestamp: Int64, attributedTo actor: String, commandId: String?) {
        self.sequence = sequence; self.timestamp = timestamp; self.actor = actor; self.commandId = commandId
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
