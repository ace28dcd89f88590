/// Every event type, its name in the log and its current schema version: the one table of event
/// type names. The log, the JSON feed (`hub/events/...`), the binary and JSON codecs, the audit
/// trail and the benchmarks all take the name from here (`HubEvent.type.rawValue`).
///
/// Names are part of the log's format: a case may be added, never renamed or removed.
public enum EventType: String, Sendable, Equatable, Hashable, CaseIterable, Codable {
    case deviceRegistered = "DeviceRegistered"
    case deviceRenamed = "DeviceRenamed"
    case deviceRemoved = "DeviceRemoved"
    case switchRequested = "SwitchRequested"
    case switchToggled = "SwitchToggled"
    case switchFailed = "SwitchFailed"
    case modeChanged = "ModeChanged"
    case activationChanged = "ActivationChanged"
    case availabilityChanged = "AvailabilityChanged"
    case readingRecorded = "ReadingRecorded"
    case energyCounterReset = "EnergyCounterReset"
    case animalAdmitted = "AnimalAdmitted"
    case animalDischarged = "AnimalDischarged"
    case animalSighted = "AnimalSighted"
    case commandRejected = "CommandRejected"
    case activationsDiverged = "ActivationsDiverged"
    case groupDefined = "GroupDefined"
    case groupRemoved = "GroupRemoved"
    case sceneDefined = "SceneDefined"
    case sceneRemoved = "SceneRemoved"
    case multiSwitchRequested = "MultiSwitchRequested"
    case animalUnseen = "AnimalUnseen"
    case ownerDataErased = "OwnerDataErased"

    /// The schema version written for new events of this type (`ActivationChanged` is at 2, every
    /// other type at 1). Older versions stay readable (upcasting).
    public var currentSchemaVersion: UInt16 {
        self == .activationChanged ? 2 : 1
    }
}
