// The events of the hub. Every event has schema version 1 for now.

public enum SwitchState: UInt8, Sendable, Equatable, Hashable, Codable, CaseIterable {
    case off = 0
    case on = 1

    public var name: String { self == .on ? "on" : "off" }
    public init?(name: String) {
        switch name {
        case "on": self = .on
        case "off": self = .off
        default: return nil
        }
    }
    public var toggled: SwitchState { self == .on ? .off : .on }
}

public enum SwitchCause: UInt8, Sendable, Equatable, Hashable, Codable, CaseIterable {
    case command = 0
    /// Switched by hand at the device.
    case manual = 1
    case schedule = 2
    case deviceReport = 3

    public var name: String {
        switch self {
        case .command: return "command"
        case .manual: return "manual"
        case .schedule: return "schedule"
        case .deviceReport: return "device_report"
        }
    }
    public init?(name: String) {
        switch name {
        case "command": self = .command
        case "manual": self = .manual
        case "schedule": self = .schedule
        case "device_report": self = .deviceReport
        default: return nil
        }
    }
}

public enum DeviceMode: UInt8, Sendable, Equatable, Hashable, Codable, CaseIterable {
    case manual = 0
    case automatic = 1

    public var name: String { self == .manual ? "manual" : "automatic" }
    public init?(name: String) {
        switch name {
        case "manual": self = .manual
        case "automatic": self = .automatic
        default: return nil
        }
    }
}

public enum ActivationChange: UInt8, Sendable, Equatable, Hashable, Codable, CaseIterable {
    case added = 0
    case updated = 1
    case removed = 2

    public var name: String {
        switch self {
        case .added: return "added"
        case .updated: return "updated"
        case .removed: return "removed"
        }
    }
    public init?(name: String) {
        switch name {
        case "added": self = .added
        case "updated": self = .updated
        case "removed": self = .removed
        default: return nil
        }
    }
}

/// The domain's side of `Quantity` (declared in `Quantities`, shared with the driver API).
extension Quantity {
    /// The byte used by the binary codec.
    public var code: UInt8 {
        switch self {
        case .power: return 0
        case .voltage: return 1
        case .current: return 2
        case .energy: return 3
        case .temperature: return 4
        case .heartRate: return 5
        }
    }
    public init?(code: UInt8) {
        switch code {
        case 0: self = .power
        case 1: self = .voltage
        case 2: self = .current
        case 3: self = .energy
        case 4: self = .temperature
        case 5: self = .heartRate
        default: return nil
        }
    }
    /// Quantities that can never be negative.
    public var isNonNegative: Bool {
        switch self {
        case .power, .energy, .heartRate: return true
        case .voltage, .current, .temperature: return false
        }
    }
}

/// What a reading is about.
public enum Subject: Sendable, Equatable, Hashable, Codable {
    case device(String)
    case animal(String)

    public var id: String {
        switch self {
        case .device(let id), .animal(let id): return id
        }
    }
    public var kind: String {
        switch self {
        case .device: return "device"
        case .animal: return "animal"
        }
    }
    public var stream: String { streamKey.stream }
    /// The subject's stream.
    public var streamKey: StreamKey {
        switch self {
        case .device(let id): return .device(id)
        case .animal(let id): return .animal(id)
        }
    }
}

public struct DeviceRegistered: Sendable, Equatable, Codable {
    public var device: String
    public var driver: String
    public var name: String
    /// A JSON text, may be "{}".
    public var config: String
    public var hardwareId: String?
    public init(device: String, driver: String, name: String, config: String = "{}", hardwareId: String? = nil) {
        self.device = device; self.driver = driver; self.name = name; self.config = config; self.hardwareId = hardwareId
    }
}

public struct DeviceRenamed: Sendable, Equatable, Codable {
    public var device: String
    public var name: String
    public init(device: String, name: String) { self.device = device; self.name = name }
}

public struct DeviceRemoved: Sendable, Equatable, Codable {
    public var device: String
    public init(device: String) { self.device = device }
}

/// Commanded, not yet confirmed.
public struct SwitchRequested: Sendable, Equatable, Codable {
    public var device: String
    public var state: SwitchState
    public init(device: String, state: SwitchState) { self.device = device; self.state = state }
}

/// The confirmed / observed state.
public struct SwitchToggled: Sendable, Equatable, Codable {
    public var device: String
    public var state: SwitchState
    public var cause: SwitchCause
    public init(device: String, state: SwitchState, cause: SwitchCause) {
        self.device = device; self.state = state; self.cause = cause
    }
}

/// A command that was not confirmed.
public struct SwitchFailed: Sendable, Equatable, Codable {
    public var device: String
    /// The requested state.
    public var state: SwitchState
    public var reason: String
    public init(device: String, state: SwitchState, reason: String) {
        self.device = device; self.state = state; self.reason = reason
    }
}

public struct ModeChanged: Sendable, Equatable, Codable {
    public var device: String
    public var mode: DeviceMode
    public init(device: String, mode: DeviceMode) { self.device = device; self.mode = mode }
}

public struct ActivationChanged: Sendable, Equatable, Codable {
    public var device: String
    public var change: ActivationChange
    /// At most 20 printable ASCII characters.
    public var name: String
    /// Unix seconds, UTC (fits a u32).
    public var start: Int64
    public var lengthMinutes: UInt16
    /// 0 = one-shot (or a daily repeat).
    public var periodMinutes: UInt16
    /// Schema 2: repeats daily at a local time (nil in schema 1 events, which upcast unchanged).
    public var daily: DailyRepeat?
    public init(
        device: String, change: ActivationChange, name: String, start: Int64, lengthMinutes: UInt16, periodMinutes: UInt16,
        daily: DailyRepeat? = nil
    ) {
        self.device = device; self.change = change; self.name = name; self.start = start
        self.lengthMinutes = lengthMinutes; self.periodMinutes = periodMinutes; self.daily = daily
    }
}

public struct AvailabilityChanged: Sendable, Equatable, Codable {
    public var device: String
    public var available: Bool
    public var reason: String
    public init(device: String, available: Bool, reason: String) {
        self.device = device; self.available = available; self.reason = reason
    }
}

public struct ReadingRecorded: Sendable, Equatable, Codable {
    public var subject: Subject
    public var quantity: Quantity
    public var value: Double
    /// Microseconds since the Unix epoch, UTC.
    public var measuredAt: Int64
    public init(subject: Subject, quantity: Quantity, value: Double, measuredAt: Int64) {
        self.subject = subject; self.quantity = quantity; self.value = value; self.measuredAt = measuredAt
    }
}

public struct EnergyCounterReset: Sendable, Equatable, Codable {
    public var device: String
    public var previousWh: Double
    public var newWh: Double
    public init(device: String, previousWh: Double, newWh: Double) {
        self.device = device; self.previousWh = previousWh; self.newWh = newWh
    }
}

/// The admission form. Used both as the `admitAnimal` command payload and as the
/// `AnimalAdmitted` event (the event is the validated, normalised form).
public struct Admission: Sendable, Equatable, Codable {
    public var animal: String
    public var name: String
    public var gender: String?
    /// "YYYY-MM-DD".
    public var birthDate: String?
    public var weightKg: Double
    public var species: String
    public var breed: String?
    public var coat: String?
    public var ownerName: String?
    public var ownerAddress: String?
    public var ownerPhone: String?
    public var motive: String?
    public var veterinarian: String?
    public var observations: String?
    /// A reference to a stored photo.
    public var photo: String?
    /// The beacon identity as the bridges report it (`BeaconId.canonical`).
    public var beacon: String

    public init(
        animal: String, name: String, gender: String? = nil, birthDate: String? = nil, weightKg: Double,
        species: String, breed: String? = nil, coat: String? = nil, ownerName: String? = nil,
        ownerAddress: String? = nil, ownerPhone: String? = nil, motive: String? = nil,
        veterinarian: String? = nil, observations: String? = nil, photo: String? = nil, beacon: String
    ) {
        self.animal = animal; self.name = name; self.gender = gender; self.birthDate = birthDate
        self.weightKg = weightKg; self.species = species; self.breed = breed; self.coat = coat
        self.ownerName = ownerName; self.ownerAddress = ownerAddress; self.ownerPhone = ownerPhone
        self.motive = motive; self.veterinarian = veterinarian; self.observations = observations
        self.photo = photo; self.beacon = beacon
    }
}

public typealias AnimalAdmitted = Admission

public struct AnimalDischarged: Sendable, Equatable, Codable {
    public var animal: String
    public var exitWeightKg: Double
    public var veterinarian: String?
    public var observations: String?
    public init(animal: String, exitWeightKg: Double, veterinarian: String? = nil, observations: String? = nil) {
        self.animal = animal; self.exitWeightKg = exitWeightKg; self.veterinarian = veterinarian; self.observations = observations
    }
}

/// The owner contact data of an animal was erased: its key is gone, the sealed values unreadable.
public struct OwnerDataErased: Sendable, Equatable, Codable {
    public var animal: String
    public init(animal: String) { self.animal = animal }
}

/// An admitted animal's beacon has not been heard for the bridge's configured silence.
public struct AnimalUnseen: Sendable, Equatable, Codable {
    public var animal: String
    public var lastRoom: String
    /// When it was last heard, µs since the Unix epoch.
    public var lastSeen: Int64
    public init(animal: String, lastRoom: String, lastSeen: Int64) {
        self.animal = animal; self.lastRoom = lastRoom; self.lastSeen = lastSeen
    }
}

public struct AnimalSighted: Sendable, Equatable, Codable {
    public var animal: String
    public var room: String
    public var beacon: String
    /// Microseconds since the Unix epoch, UTC.
    public var at: Int64
    public init(animal: String, room: String, beacon: String, at: Int64) {
        self.animal = animal; self.room = room; self.beacon = beacon; self.at = at
    }
}

public struct CommandRejected: Sendable, Equatable, Codable {
    /// The command name, e.g. "switch".
    public var command: String
    /// The device or animal id, when the command had one.
    public var target: String?
    /// The stable `Rejection.code`.
    public var code: String
    public var message: String
    public var commandId: String?
    public init(command: String, target: String?, code: String, message: String, commandId: String?) {
        self.command = command; self.target = target; self.code = code; self.message = message; self.commandId = commandId
    }
}

public enum HubEvent: Sendable, Equatable {
    // Large, rare payloads are boxed (`indirect`) so that a HubEvent value stays small and cheap to
    // move on the hot replay path.
    indirect case deviceRegistered(DeviceRegistered)
    case deviceRenamed(DeviceRenamed)
    case deviceRemoved(DeviceRemoved)
    case switchRequested(SwitchRequested)
    case switchToggled(SwitchToggled)
    case switchFailed(SwitchFailed)
    case modeChanged(ModeChanged)
    case activationChanged(ActivationChanged)
    case availabilityChanged(AvailabilityChanged)
    case readingRecorded(ReadingRecorded)
    case energyCounterReset(EnergyCounterReset)
    indirect case activationsDiverged(ActivationsDiverged)
    indirect case groupDefined(GroupDefined)
    case groupRemoved(GroupRemoved)
    indirect case sceneDefined(SceneDefined)
    case sceneRemoved(SceneRemoved)
    indirect case multiSwitchRequested(MultiSwitchRequested)
    indirect case animalAdmitted(AnimalAdmitted)
    indirect case animalDischarged(AnimalDischarged)
    case animalSighted(AnimalSighted)
    case animalUnseen(AnimalUnseen)
    case ownerDataErased(OwnerDataErased)
    indirect case commandRejected(CommandRejected)

    /// Every type name, in `EventType`'s order.
    public static let allTypeNames: [String] = EventType.allCases.map(\.rawValue)

    /// The newest schema version of any type.
    public static let currentSchemaVersion: UInt16 = EventType.allCases.map(\.currentSchemaVersion).max() ?? 1

    /// The schema version written for new events of `type` (1 for a name this build does not know).
    public static func currentSchemaVersion(of type: String) -> UInt16 {
        EventType(rawValue: type)?.currentSchemaVersion ?? 1
    }

    /// This event's type.
    public var type: EventType {
        switch self {
        case .deviceRegistered: return .deviceRegistered
        case .deviceRenamed: return .deviceRenamed
        case .deviceRemoved: return .deviceRemoved
        case .switchRequested: return .switchRequested
        case .switchToggled: return .switchToggled
        case .switchFailed: return .switchFailed
        case .modeChanged: return .modeChanged
        case .activationChanged: return .activationChanged
        case .availabilityChanged: return .availabilityChanged
        case .readingRecorded: return .readingRecorded
        case .energyCounterReset: return .energyCounterReset
        case .animalAdmitted: return .animalAdmitted
        case .animalDischarged: return .animalDischarged
        case .animalSighted: return .animalSighted
        case .commandRejected: return .commandRejected
        case .activationsDiverged: return .activationsDiverged
        case .groupDefined: return .groupDefined
        case .groupRemoved: return .groupRemoved
        case .sceneDefined: return .sceneDefined
        case .sceneRemoved: return .sceneRemoved
        case .multiSwitchRequested: return .multiSwitchRequested
        case .animalUnseen: return .animalUnseen
        case .ownerDataErased: return .ownerDataErased
        }
    }

    /// This event's type name in the log (`type.rawValue`).
    public var typeName: String { type.rawValue }

    /// The schema version this build writes for this event.
    public var schemaVersion: UInt16 { type.currentSchemaVersion }

    /// The stream this event belongs to: `device/<id>`, `animal/<id>`, `group/<id>`, `scene/<id>` or `hub`.
    public var stream: String { streamKey.stream }

    /// Stream kind and id without building the stream string (used by hot paths).
    public var streamKey: StreamKey {
        switch self {
        case .deviceRegistered(let e): return .device(e.device)
        case .deviceRenamed(let e): return .device(e.device)
        case .deviceRemoved(let e): return .device(e.device)
        case .switchRequested(let e): return .device(e.device)
        case .switchToggled(let e): return .device(e.device)
        case .switchFailed(let e): return .device(e.device)
        case .modeChanged(let e): return .device(e.device)
        case .activationChanged(let e): return .device(e.device)
        case .availabilityChanged(let e): return .device(e.device)
        case .readingRecorded(let e):
            switch e.subject {
            case .device(let id): return .device(id)
            case .animal(let id): return .animal(id)
            }
        case .energyCounterReset(let e): return .device(e.device)
        case .activationsDiverged(let e): return .device(e.device)
        case .groupDefined(let e): return .group(e.group)
        case .groupRemoved(let e): return .group(e.group)
        case .sceneDefined(let e): return .scene(e.scene)
        case .sceneRemoved(let e): return .scene(e.scene)
        case .multiSwitchRequested(let e):
            // `origin` is a group's or scene's stream, or "all".
            return StreamKey(stream: e.origin) ?? .hub
        case .animalAdmitted(let e): return .animal(e.animal)
        case .animalDischarged(let e): return .animal(e.animal)
        case .animalSighted(let e): return .animal(e.animal)
        case .animalUnseen(let e): return .animal(e.animal)
        case .ownerDataErased(let e): return .animal(e.animal)
        case .commandRejected: return .hub
        }
    }
}

/// A stream of the log: its kind and id. The one place stream names are built (`stream`) and read
/// (`init?(stream:)`); nothing else formats or parses `"device/<id>"`.
///
/// | case | stream |
/// |---|---|
/// | `.device("lamp")` | `device/lamp` |
/// | `.animal("rex")` | `animal/rex` |
/// | `.group("kitchen")` | `group/kitchen` |
/// | `.scene("movie")` | `scene/movie` |
/// | `.hub` | `hub` (hub-wide events: rejections, all-off) |
public enum StreamKey: Sendable, Equatable, Hashable, CustomStringConvertible {
    case device(String)
    case animal(String)
    case group(String)
    case scene(String)
    case hub

    /// The kinds that carry an id, as they prefix a stream name.
    public enum Kind: String, Sendable, CaseIterable {
        case device, animal, group, scene
    }

    /// The stream name in the log (`device/lamp`, `hub`).
    public var stream: String {
        // One append to a literal prefix: every event folded builds its stream's name.
        switch self {
        case .device(let id): return "device/" + id
        case .animal(let id): return "animal/" + id
        case .group(let id): return "group/" + id
        case .scene(let id): return "scene/" + id
        case .hub: return "hub"
        }
    }

    /// The stream name (the same as `stream`; kept for existing callers).
    public var name: String { stream }

    public var description: String { stream }

    /// The kind, nil for `.hub`.
    public var kind: Kind? {
        switch self {
        case .device: return .device
        case .animal: return .animal
        case .group: return .group
        case .scene: return .scene
        case .hub: return nil
        }
    }

    /// The device, animal, group or scene id; nil for `.hub`.
    public var id: String? {
        switch self {
        case .device(let id), .animal(let id), .group(let id), .scene(let id): return id
        case .hub: return nil
        }
    }

    /// The device id when this is a device stream.
    public var deviceId: String? { if case .device(let id) = self { return id }; return nil }
    /// The animal id when this is an animal stream.
    public var animalId: String? { if case .animal(let id) = self { return id }; return nil }
    /// The group id when this is a group stream.
    public var groupId: String? { if case .group(let id) = self { return id }; return nil }
    /// The scene id when this is a scene stream.
    public var sceneId: String? { if case .scene(let id) = self { return id }; return nil }

    /// A stream of `kind` with `id`.
    public init(_ kind: Kind, _ id: String) {
        switch kind {
        case .device: self = .device(id)
        case .animal: self = .animal(id)
        case .group: self = .group(id)
        case .scene: self = .scene(id)
        }
    }

    /// Reads a stream name: `hub`, or `<kind>/<id>` with a known kind and a non-empty id (which may
    /// itself contain `/`). Nil for anything else.
    /// - Parameter stream: A stream name from the log (`EventRecord.stream`) or a topic.
    public init?(stream: String) {
        if stream == "hub" { self = .hub; return }
        guard let slash = stream.firstIndex(of: "/"), let kind = Kind(rawValue: String(stream[..<slash])) else { return nil }
        let id = String(stream[stream.index(after: slash)...])
        guard !id.isEmpty else { return nil }
        self.init(kind, id)
    }
}
