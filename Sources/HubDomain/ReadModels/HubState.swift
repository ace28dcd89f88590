/// All read models, folded from the event log.
public struct HubState: Sendable, Equatable, Codable {
    public var devices = DevicesModel()
    public var energy = EnergyLedger()
    public var activations = ActivationsModel()
    public var animals = AnimalsModel()
    public var household = HouseholdModel()
    public var history = HistoryModel()
    public var audit: AuditTrail
    /// Sequence of the last applied event (0 = none).
    public private(set) var lastSequence: UInt64 = 0

    public init(auditCapacity: Int = 1000) {
        audit = AuditTrail(capacity: auditCapacity)
    }

    /// Marks an event this hub version cannot read as seen, without folding it.
    public mutating func skip(sequence: UInt64) {
        lastSequence = max(lastSequence, sequence)
    }

    /// Folds one event into every read model.
    public mutating func apply(_ event: HubEvent, context: EventContext) {
        devices.apply(event, context: context)
        energy.apply(event, context: context)
        activations.apply(event, context: context)
        animals.apply(event, context: context)
        household.apply(event, context: context)
        history.apply(event, context: context)
        audit.apply(event, context: context)
        lastSequence = context.sequence
    }
}
