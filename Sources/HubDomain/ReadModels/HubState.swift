/// All read models, folded from the event log.
public struct HubState: Sendable, Equatable, Codable {
    public var devices = DevicesModel()
    public var energy = EnergyLedger()
    public var activations = ActivationsModel()
    public var animals = AnimalsModel()
    public var household = HouseholdModel()
    /// The history read model, folded here when ``foldsHistory``; the running hub keeps its
    /// history on disk instead (`HistoryFiles`) and leaves this one empty.
    public var history = HistoryModel()
    public var foldsHistory: Bool
    public var audit: AuditTrail
    /// Sequence of the last applied event (0 = none).
    public private(set) var lastSequence: UInt64 = 0

    public init(auditCapacity: Int = 1000, foldsHistory: Bool = true) {
        audit = AuditTrail(capacity: auditCapacity)
        self.foldsHistory = foldsHistory
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
        if foldsHistory { history.apply(event, context: context) }
        audit.apply(event, context: context)
        lastSequence = context.sequence
    }
}
