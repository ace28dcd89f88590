/// All read models, folded from the event log.
public struct HubState: Sendable, Equatable, Codable {
    /// The devices, by id.
    public var devices = DevicesModel()
    /// Energy per device, from counter readings.
    public var energy = EnergyLedger()
    /// Each device's activations.
    public var activations = ActivationsModel()
    /// The animals and the beacon index.
    public var animals = AnimalsModel()
    /// The groups and scenes.
    public var household = HouseholdModel()
    /// The history read model, folded here when ``foldsHistory``; the running hub keeps its
    /// history on disk instead (`HistoryFiles`) and leaves this one empty.
    public var history = HistoryModel()
    /// Whether `apply` folds readings into `history` (false in the running hub, which keeps history on disk).
    public var foldsHistory: Bool
    /// Who changed what, and the recent entries.
    public var audit: AuditTrail
    /// Sequence of the last applied event (0 = none).
    public private(set) var lastSequence: UInt64 = 0

    /// Empty read models; the audit ring keeps `auditCapacity` entries.
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
