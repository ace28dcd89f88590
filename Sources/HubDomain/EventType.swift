/// Every event type, its name in the log and its current schema version: the one table of event
/// type names. The log, the JSON feed (`hub/events/...`), the binary and JSON codecs, the audit
/// trail and the benchmarks all take the name from here (`HubEvent.type.rawValue`).
///
/// Names are part of the log's format: a case may be added, never renamed or removed.
public enum EventType: String, Sendable, Equatable, Hashable, CaseIterable, Codable {
    /// `DeviceRegistered`.
    case deviceRegistered = "DeviceRegistered"
    /// `DeviceRenamed`.
    case deviceRenamed = "DeviceRenamed"
    /// `DeviceRemoved`.
    case deviceRemoved = "DeviceRemoved"
    /// `SwitchRequested`.
    case switchRequested = "SwitchRequested"
    /// `SwitchToggled`.
    case switchToggled = "SwitchToggled"
    /// `SwitchFailed`.
    case switchFailed = "SwitchFailed"
    /// `ModeChanged`.
    case modeChanged = "ModeChanged"
    /// `ActivationChanged` (schema 2: daily repeats).
    case activationChanged = "ActivationChanged"
    /// `AvailabilityChanged`.
    case availabilityChanged = "AvailabilityChanged"
    /// `ReadingRecorded`.
    case readingRecorded = "ReadingRecorded"
    /// `EnergyCounterReset`.
    case energyCounterReset = "EnergyCounterReset"
    /// `AnimalAdmitted`.
    case animalAdmitted = "AnimalAdmitted"
    /// `AnimalDischarged`.
    case animalDischarged = "AnimalDischarged"
    /// `AnimalSighted`.
    case animalSighted = "AnimalSighted"
    /// `CommandRejected`.
    case commandRejected = "CommandRejected"
    /// `ActivationsDiverged`.
    case activationsDiverged = "ActivationsDiverged"
    /// `GroupDefined`.
    case groupDefined = "GroupDefined"
    /// `GroupRemoved`.
    case groupRemoved = "GroupRemoved"
    /// `SceneDefined`.
    case sceneDefined = "SceneDefined"
    /// `SceneRemoved`.
    case sceneRemoved = "SceneRemoved"
    /// `MultiSwitchRequested`.
    case multiSwitchRequested = "MultiSwitchRequested"
    /// `AnimalUnseen`.
    case animalUnseen = "AnimalUnseen"
    /// `OwnerDataErased`.
    case ownerDataErased = "OwnerDataErased"

    /// The schema version written for new events of this type (`ActivationChanged` and
    /// `DeviceRegistered` are at 2, every other type at 1). Older versions stay readable (upcasting).
    public var currentSchemaVersion: UInt16 {
        self == .activationChanged || self == .deviceRegistered ? 2 : 1
    }

    /// The version of the event catalogue this build writes: raised with every new event type and
    /// every new schema version of one (2: `DeviceRegistered` 2, a strip's outlets). Recorded as the
    /// `events` part of a data directory's `format.json`, so an older hub refuses a log holding
    /// events it could not decode, before it opens anything.
    public static let catalogVersion = 2
}
