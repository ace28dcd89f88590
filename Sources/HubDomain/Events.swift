// The events of the hub. Every event has schema version 1 for now.

/// A switch's on/off position; the raw value is the byte the binary codec writes.
public enum SwitchState: UInt8, Sendable, Equatable, Hashable, Codable, CaseIterable {
    /// Off (byte 0).
    case off = 0
    /// On (byte 1).
    case on = 1

    /// The wire name: "on" or "off".
    public var name: String { self == .on ? "on" : "off" }
    /// Parses the wire name ("on" or "off"); nil for anything else.
    public init?(name: String) {
        switch name {
        case "on": self = .on
        case "off": self = .off
        default: return nil
        }
    }
    /// The other position.
    public var toggled: SwitchState { self == .on ? .off : .on }
}

/// Why a switch changed; the raw value is the byte the binary codec writes.
public enum SwitchCause: UInt8, Sendable, Equatable, Hashable, Codable, CaseIterable {
    /// Confirms a switch a command asked for (MQTT, HTTP, exec, a group or a scene).
    case command = 0
    /// Switched by hand at the device.
    case manual = 1
    /// Switched by an activation's schedule.
    case schedule = 2
    /// Reported by the device with no request pending and not as manual.
    case deviceReport = 3

    /// The wire name: "command", "manual", "schedule" or "device_report".
    public var name: String {
        switch self {
        case .command: return "command"
        case .manual: return "manual"
        case .schedule: return "schedule"
        case .deviceReport: return "device_report"
        }
    }
    /// Parses the wire name; nil for anything else.
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

/// Who decides a device's switch state; the raw value is the byte the binary codec writes.
public enum DeviceMode: UInt8, Sendable, Equatable, Hashable, Codable, CaseIterable {
    /// Only commands switch it; its activations are ignored.
    case manual = 0
    /// Its activations switch it on schedule.
    case automatic = 1

    /// The wire name: "manual" or "automatic".
    public var name: String { self == .manual ? "manual" : "automatic" }
    /// Parses the wire name; nil for anything else.
    public init?(name: String) {
        switch name {
        case "manual": self = .manual
        case "automatic": self = .automatic
        default: return nil
        }
    }
}

/// What happened to an activation; the raw value is the byte the binary codec writes.
public enum ActivationChange: UInt8, Sendable, Equatable, Hashable, Codable, CaseIterable {
    /// A new activation under a new name.
    case added = 0
    /// An existing activation's times were replaced.
    case updated = 1
    /// The activation was deleted.
    case removed = 2

    /// The wire name: "added", "updated" or "removed".
    public var name: String {
        switch self {
        case .added: return "added"
        case .updated: return "updated"
        case .removed: return "removed"
        }
    }
    /// Parses the wire name; nil for anything else.
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
    /// The quantity written as `code` by the binary codec; nil for an unknown byte.
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
    /// A device, by its id.
    case device(String)
    /// An admitted animal, by its id.
    case animal(String)

    /// The device or animal id.
    public var id: String {
        switch self {
        case .device(let id), .animal(let id): return id
        }
    }
    /// "device" or "animal", as the JSON forms name it.
    public var kind: String {
        switch self {
        case .device: return "device"
        case .animal: return "animal"
        }
    }
    /// The subject's stream name in the log (`device/<id>` or `animal/<id>`).
    public var stream: String { streamKey.stream }
    /// The subject's stream.
    public var streamKey: StreamKey {
        switch self {
        case .device(let id): return .device(id)
        case .animal(let id): return .animal(id)
        }
    }
}

/// Which strip an outlet belongs to: a device registered as one outlet of a multi-outlet device (a
/// power strip, a multi-relay or multi-gang plug), whose outlets are registered together.
public struct OutletOf: Sendable, Equatable, Codable {
    /// The strip's id (the outlets are `<strip>-<number>`; the strip itself is not a device).
    public var strip: String
    /// The strip's display name.
    public var stripName: String
    /// The outlet's position on the strip, from 1.
    public var number: Int
    /// The strip's own identity (MAC, serial), when registered with one; each outlet's
    /// `hardwareId` is then `<strip hardware id>/<number>`.
    public var stripHardwareId: String?

    /// Creates the link.
    public init(strip: String, stripName: String, number: Int, stripHardwareId: String? = nil) {
        self.strip = strip; self.stripName = stripName; self.number = number; self.stripHardwareId = stripHardwareId
    }
}

/// A device joined the hub under an id, with its driver and configuration.
///
/// Schema 2 adds ``outlet``: the outlets of a strip are registered by one command, one
/// `DeviceRegistered` each, appended together on the strip's stream (`device/<strip>`).
public struct DeviceRegistered: Sendable, Equatable, Codable {
    /// The device id (unique among devices not removed).
    public var device: String
    /// The driver's name, as registered with the driver host (e.g. "virtual", "kasa").
    public var driver: String
    /// The display name.
    public var name: String
    /// A JSON text, may be "{}".
    public var config: String
    /// The device's own identity (MAC, serial), unique among devices not removed; nil when not given.
    public var hardwareId: String?
    /// The strip this device is an outlet of; nil for a device of its own.
    public var outlet: OutletOf?
    /// Creates the event; `config` defaults to the empty JSON object.
    public init(
        device: String, driver: String, name: String, config: String = "{}", hardwareId: String? = nil, outlet: OutletOf? = nil
    ) {
        self.device = device; self.driver = driver; self.name = name; self.config = config; self.hardwareId = hardwareId
        self.outlet = outlet
    }
}

/// A device was given a new display name.
public struct DeviceRenamed: Sendable, Equatable, Codable {
    /// The device id.
    public var device: String
    /// The new display name.
    public var name: String
    /// Creates the event.
    public init(device: String, name: String) { self.device = device; self.name = name }
}

/// A device was removed; its id may be registered again later.
public struct DeviceRemoved: Sendable, Equatable, Codable {
    /// The device id.
    public var device: String
    /// Creates the event.
    public init(device: String) { self.device = device }
}

/// Commanded, not yet confirmed.
public struct SwitchRequested: Sendable, Equatable, Codable {
    /// The device id.
    public var device: String
    /// The state asked for.
    public var state: SwitchState
    /// Creates the event.
    public init(device: String, state: SwitchState) { self.device = device; self.state = state }
}

/// The confirmed / observed state.
public struct SwitchToggled: Sendable, Equatable, Codable {
    /// The device id.
    public var device: String
    /// The state the device is now in.
    public var state: SwitchState
    /// Why it changed.
    public var cause: SwitchCause
    /// Creates the event.
    public init(device: String, state: SwitchState, cause: SwitchCause) {
        self.device = device; self.state = state; self.cause = cause
    }
}

/// A command that was not confirmed.
public struct SwitchFailed: Sendable, Equatable, Codable {
    /// The device id.
    public var device: String
    /// The requested state.
    public var state: SwitchState
    /// Why it failed, as the driver or the hub's timeout said it (human-readable).
    public var reason: String
    /// Creates the event.
    public init(device: String, state: SwitchState, reason: String) {
        self.device = device; self.state = state; self.reason = reason
    }
}

/// A device's mode changed between manual and automatic.
public struct ModeChanged: Sendable, Equatable, Codable {
    /// The device id.
    public var device: String
    /// The new mode.
    public var mode: DeviceMode
    /// Creates the event.
    public init(device: String, mode: DeviceMode) { self.device = device; self.mode = mode }
}

/// An activation (a named on-period of a device) was added, updated or removed.
public struct ActivationChanged: Sendable, Equatable, Codable {
    /// The device id.
    public var device: String
    /// Added, updated or removed.
    public var change: ActivationChange
    /// At most 20 printable ASCII characters.
    public var name: String
    /// Unix seconds, UTC (fits a u32).
    public var start: Int64
    /// How long the device stays on, in minutes.
    public var lengthMinutes: UInt16
    /// 0 = one-shot (or a daily repeat).
    public var periodMinutes: UInt16
    /// Schema 2: repeats daily at a local time (nil in schema 1 events, which upcast unchanged).
    public var daily: DailyRepeat?
    /// Creates the event; `daily` is nil for a one-shot or periodic activation.
    public init(
        device: String, change: ActivationChange, name: String, start: Int64, lengthMinutes: UInt16, periodMinutes: UInt16,
        daily: DailyRepeat? = nil
    ) {
        self.device = device; self.change = change; self.name = name; self.start = start
        self.lengthMinutes = lengthMinutes; self.periodMinutes = periodMinutes; self.daily = daily
    }
}

/// A device became reachable or unreachable, as its driver reported.
public struct AvailabilityChanged: Sendable, Equatable, Codable {
    /// The device id.
    public var device: String
    /// True when the device answers.
    public var available: Bool
    /// Why, as the driver said it (human-readable; may be empty).
    public var reason: String
    /// Creates the event.
    public init(device: String, available: Bool, reason: String) {
        self.device = device; self.available = available; self.reason = reason
    }
}

/// A measurement of a device or an animal.
public struct ReadingRecorded: Sendable, Equatable, Codable {
    /// What was measured.
    public var subject: Subject
    /// What the value measures (its unit is `quantity.unit`).
    public var quantity: Quantity
    /// The value, in `quantity.unit`.
    public var value: Double
    /// Microseconds since the Unix epoch, UTC.
    public var measuredAt: Int64
    /// Creates the event.
    public init(subject: Subject, quantity: Quantity, value: Double, measuredAt: Int64) {
        self.subject = subject; self.quantity = quantity; self.value = value; self.measuredAt = measuredAt
    }
}

/// A device's energy counter went backwards (the device was reset); recorded before the reading that showed it.
public struct EnergyCounterReset: Sendable, Equatable, Codable {
    /// The device id.
    public var device: String
    /// The last counter value before the reset, in Wh.
    public var previousWh: Double
    /// The new, lower counter value, in Wh.
    public var newWh: Double
    /// Creates the event.
    public init(device: String, previousWh: Double, newWh: Double) {
        self.device = device; self.previousWh = previousWh; self.newWh = newWh
    }
}

/// The admission form. Used both as the `admitAnimal` command payload and as the
/// `AnimalAdmitted` event (the event is the validated, normalised form).
public struct Admission: Sendable, Equatable, Codable {
    /// The animal id (its stream is `animal/<id>`).
    public var animal: String
    /// The animal's name.
    public var name: String
    /// The gender as entered; free text.
    public var gender: String?
    /// "YYYY-MM-DD".
    public var birthDate: String?
    /// Body weight at admission, in kilograms (positive, at most `DomainLimits.maxWeightKg`).
    public var weightKg: Double
    /// The species, e.g. "dog".
    public var species: String
    /// The breed, free text.
    public var breed: String?
    /// The coat colour, free text.
    public var coat: String?
    /// The owner's name (personal data; sealed when stored with owner-data encryption).
    public var ownerName: String?
    /// The owner's address (personal data).
    public var ownerAddress: String?
    /// The owner's phone number (personal data).
    public var ownerPhone: String?
    /// Why the animal was admitted.
    public var motive: String?
    /// The veterinarian responsible.
    public var veterinarian: String?
    /// Free-text observations at admission.
    public var observations: String?
    /// A reference to a stored photo.
    public var photo: String?
    /// The beacon identity as the bridges report it (`BeaconId.canonical`).
    public var beacon: String

    /// Creates the form; optional fields default to nil.
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

/// The event an accepted admission records: the validated, normalised `Admission`.
public typealias AnimalAdmitted = Admission

/// An admitted animal left.
public struct AnimalDischarged: Sendable, Equatable, Codable {
    /// The animal id.
    public var animal: String
    /// Body weight at discharge, in kilograms.
    public var exitWeightKg: Double
    /// The veterinarian who signed the discharge.
    public var veterinarian: String?
    /// Free-text observations at discharge.
    public var observations: String?
    /// Creates the event.
    public init(animal: String, exitWeightKg: Double, veterinarian: String? = nil, observations: String? = nil) {
        self.animal = animal; self.exitWeightKg = exitWeightKg; self.veterinarian = veterinarian; self.observations = observations
    }
}

/// The owner contact data of an animal was erased: its key is gone, the sealed values unreadable.
public struct OwnerDataErased: Sendable, Equatable, Codable {
    /// The animal id.
    public var animal: String
    /// Creates the event.
    public init(animal: String) { self.animal = animal }
}

/// An admitted animal's beacon has not been heard for the bridge's configured silence.
public struct AnimalUnseen: Sendable, Equatable, Codable {
    /// The animal id.
    public var animal: String
    /// The room it was last seen in.
    public var lastRoom: String
    /// When it was last heard, µs since the Unix epoch.
    public var lastSeen: Int64
    /// Creates the event.
    public init(animal: String, lastRoom: String, lastSeen: Int64) {
        self.animal = animal; self.lastRoom = lastRoom; self.lastSeen = lastSeen
    }
}

/// An admitted animal's beacon was heard in a room.
public struct AnimalSighted: Sendable, Equatable, Codable {
    /// The animal id.
    public var animal: String
    /// The room, as named by the bridge that heard the beacon.
    public var room: String
    /// The beacon identity (`BeaconId.canonical`).
    public var beacon: String
    /// Microseconds since the Unix epoch, UTC.
    public var at: Int64
    /// Creates the event.
    public init(animal: String, room: String, beacon: String, at: Int64) {
        self.animal = animal; self.room = room; self.beacon = beacon; self.at = at
    }
}

/// A command the hub refused, recorded on the `hub` stream so that refusals are audited too.
public struct CommandRejected: Sendable, Equatable, Codable {
    /// The command name, e.g. "switch".
    public var command: String
    /// The device or animal id, when the command had one.
    public var target: String?
    /// The stable `Rejection.code`.
    public var code: String
    /// The human-readable reason (the `Rejection.message`).
    public var message: String
    /// The caller's command id, when it gave one, so it can match the answer.
    public var commandId: String?
    /// Creates the event.
    public init(command: String, target: String?, code: String, message: String, commandId: String?) {
        self.command = command; self.target = target; self.code = code; self.message = message; self.commandId = commandId
    }
}

/// One event of the hub: every case carries its payload struct; `type` names it in the log.
public enum HubEvent: Sendable, Equatable {
    // Large, rare payloads are boxed (`indirect`) so that a HubEvent value stays small and cheap to
    // move on the hot replay path.
    /// See `DeviceRegistered`.
    indirect case deviceRegistered(DeviceRegistered)
    /// See `DeviceRenamed`.
    case deviceRenamed(DeviceRenamed)
    /// See `DeviceRemoved`.
    case deviceRemoved(DeviceRemoved)
    /// See `SwitchRequested`.
    case switchRequested(SwitchRequested)
    /// See `SwitchToggled`.
    case switchToggled(SwitchToggled)
    /// See `SwitchFailed`.
    case switchFailed(SwitchFailed)
    /// See `ModeChanged`.
    case modeChanged(ModeChanged)
    /// See `ActivationChanged`.
    case activationChanged(ActivationChanged)
    /// See `AvailabilityChanged`.
    case availabilityChanged(AvailabilityChanged)
    /// See `ReadingRecorded`.
    case readingRecorded(ReadingRecorded)
    /// See `EnergyCounterReset`.
    case energyCounterReset(EnergyCounterReset)
    /// See `ActivationsDiverged`.
    indirect case activationsDiverged(ActivationsDiverged)
    /// See `GroupDefined`.
    indirect case groupDefined(GroupDefined)
    /// See `GroupRemoved`.
    case groupRemoved(GroupRemoved)
    /// See `SceneDefined`.
    indirect case sceneDefined(SceneDefined)
    /// See `SceneRemoved`.
    case sceneRemoved(SceneRemoved)
    /// See `MultiSwitchRequested`.
    indirect case multiSwitchRequested(MultiSwitchRequested)
    /// See `Admission` (`AnimalAdmitted`).
    indirect case animalAdmitted(AnimalAdmitted)
    /// See `AnimalDischarged`.
    indirect case animalDischarged(AnimalDischarged)
    /// See `AnimalSighted`.
    case animalSighted(AnimalSighted)
    /// See `AnimalUnseen`.
    case animalUnseen(AnimalUnseen)
    /// See `OwnerDataErased`.
    case ownerDataErased(OwnerDataErased)
    /// See `CommandRejected`.
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
        case .deviceRegistered(let e): return .device(e.outlet?.strip ?? e.device)
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
    /// `device/<id>`.
    case device(String)
    /// `animal/<id>`.
    case animal(String)
    /// `group/<id>`.
    case group(String)
    /// `scene/<id>`.
    case scene(String)
    /// `hub`: hub-wide events.
    case hub

    /// The kinds that carry an id, as they prefix a stream name.
    public enum Kind: String, Sendable, CaseIterable {
        /// The stream name's prefix before the slash.
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

    /// The stream name, as `stream`.
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
