// Commands: what someone (a user, a driver, the scheduler) asks the hub to do.

/// The state a switch command asks for; `toggle` means the opposite of the current state.
public enum SwitchTarget: String, Sendable, Equatable, Codable, CaseIterable {
    /// Switch on, switch off, or invert the current state.
    case on, off, toggle
}

/// What a `setActivation` command does to the named activation.
public enum ActivationOp: String, Sendable, Equatable, Codable, CaseIterable {
    /// Add a new name, update an existing one, or remove it.
    case add, update, remove
}

/// What someone (a person, a driver, the scheduler) asks the hub to do; `decide` accepts or rejects it.
public enum HubCommand: Sendable, Equatable {
    /// Registers a device under a new id (or one removed before); `config` is a JSON text.
    case registerDevice(id: String, driver: String, name: String, config: String, hardwareId: String?)
    /// Registers a multi-outlet device (a power strip): each outlet as the device `<id>-<number>`,
    /// linked to the strip `id`, in one append (the command service makes it from a `registerDevice`
    /// whose driver says the settings name a strip). The strip's id is then taken, as are its outlets'.
    case registerStrip(id: String, driver: String, name: String, hardwareId: String?, outlets: [StripOutlet])
    /// Gives a device a new display name.
    case renameDevice(id: String, name: String)
    /// Removes a device; its id may be registered again.
    case removeDevice(id: String)
    /// Asks a device to switch (from MQTT, HTTP or exec); recorded as `SwitchRequested` until the driver confirms.
    case switchDevice(id: String, target: SwitchTarget)
    /// The hub's scheduler switching a device for an activation window (actor `scheduler`): refused
    /// while the device is in manual mode, nothing when it is already in that state.
    case scheduleSwitch(id: String, state: SwitchState)
    /// A driver's observation: the device says it is on/off, maybe in manual mode.
    case reportSwitch(id: String, state: SwitchState, manual: Bool?)
    /// A driver could not confirm the pending switch command.
    case failSwitch(id: String, reason: String)
    /// `daily` makes (or keeps) it a daily-at-local-time activation; giving `periodMinutes` on an
    /// update turns a daily one back into a fixed-period one.
    case setActivation(
        device: String, op: ActivationOp, name: String, start: Int64?, lengthMinutes: Int?, periodMinutes: Int?,
        daily: DailyRepeat? = nil)
    /// A driver's report that the device became reachable or unreachable.
    case reportAvailability(id: String, available: Bool, reason: String)
    /// A driver read back the activations a device stores itself; `policy` says how a difference
    /// from the log is reconciled.
    case reportActivations(device: String, found: [Activation], policy: DivergencePolicy)
    /// A measurement; `measuredAt` in µs since the Unix epoch, refused when further ahead than `DomainLimits.readingClockSkew`.
    case recordReading(subject: Subject, quantity: Quantity, value: Double, measuredAt: Int64)
    /// Defines (or redefines) a group of registered devices.
    case defineGroup(id: String, name: String, members: [String])
    /// Deletes a group.
    case removeGroup(id: String)
    /// Every registered member to one state (toggle: off if any member is on, else on).
    case switchGroup(id: String, target: SwitchTarget)
    /// Defines (or redefines) a scene: registered devices, each with a state.
    case defineScene(id: String, name: String, targets: [DeviceTarget])
    /// Deletes a scene.
    case removeScene(id: String)
    /// A defined scene, or `all-off`: every registered device off.
    case applyScene(id: String)
    /// Admits an animal with its beacon.
    case admitAnimal(Admission)
    /// Discharges an admitted animal; `exitWeightKg` in kilograms.
    case dischargeAnimal(id: String, exitWeightKg: Double, veterinarian: String?, observations: String?)
    /// A bridge heard an admitted animal's beacon in a room; `at` in µs since the Unix epoch.
    case sightAnimal(id: String, room: String, beacon: String, at: Int64)
    /// Erase the animal's owner contact data (the runtime deletes the key that seals it).
    case eraseOwnerData(id: String)
    /// A bridge stopped hearing the animal's beacon.
    case markAnimalUnseen(id: String, lastRoom: String, lastSeen: Int64)

    /// The stable command name (used in CommandRejected and on the wire).
    public var name: String {
        switch self {
        case .registerDevice, .registerStrip: return "register_device"
        case .renameDevice: return "rename_device"
        case .removeDevice: return "remove_device"
        case .switchDevice: return "switch"
        case .scheduleSwitch: return "schedule_switch"
        case .reportSwitch: return "report_switch"
        case .failSwitch: return "fail_switch"
        case .setActivation: return "set_activation"
        case .reportAvailability: return "report_availability"
        case .reportActivations: return "report_activations"
        case .recordReading: return "record_reading"
        case .defineGroup: return "define_group"
        case .removeGroup: return "remove_group"
        case .switchGroup: return "switch_group"
        case .defineScene: return "define_scene"
        case .removeScene: return "remove_scene"
        case .applyScene: return "apply_scene"
        case .admitAnimal: return "admit_animal"
        case .dischargeAnimal: return "discharge_animal"
        case .sightAnimal: return "sight_animal"
        case .markAnimalUnseen: return "mark_animal_unseen"
        case .eraseOwnerData: return "erase_owner_data"
        }
    }

    /// The device or animal id the command is about.
    public var target: String? {
        switch self {
        case .registerDevice(let id, _, _, _, _): return id
        case .registerStrip(let id, _, _, _, _): return id
        case .renameDevice(let id, _): return id
        case .removeDevice(let id): return id
        case .switchDevice(let id, _): return id
        case .scheduleSwitch(let id, _): return id
        case .reportSwitch(let id, _, _): return id
        case .failSwitch(let id, _): return id
        case .setActivation(let device, _, _, _, _, _, _): return device
        case .reportAvailability(let id, _, _): return id
        case .reportActivations(let device, _, _): return device
        case .recordReading(let subject, _, _, _): return subject.id
        case .defineGroup(let id, _, _), .removeGroup(let id), .switchGroup(let id, _): return id
        case .defineScene(let id, _, _), .removeScene(let id), .applyScene(let id): return id
        case .admitAnimal(let a): return a.animal
        case .dischargeAnimal(let id, _, _, _): return id
        case .sightAnimal(let id, _, _, _): return id
        case .markAnimalUnseen(let id, _, _): return id
        case .eraseOwnerData(let id): return id
        }
    }
}

/// One outlet of a strip being registered: its position, its own name if the device gives one, and
/// the driver settings that drive it alone.
public struct StripOutlet: Sendable, Equatable {
    /// Its position on the strip, from 1 (the device is `<strip>-<number>`).
    public var number: Int
    /// The device's own name for it; nil: `<strip name> <number>`.
    public var name: String?
    /// The driver settings for this outlet, a JSON object text.
    public var config: String

    /// An outlet.
    public init(number: Int, name: String? = nil, config: String) {
        self.number = number; self.name = name; self.config = config
    }
}

/// Limits the decisions apply; the defaults match the reference devices.
public struct DomainLimits: Sendable, Equatable {
    /// Activation slots per device (the TCP plug has 10).
    public var maxActivationsPerDevice: Int
    /// The longest device, group or scene name, in characters.
    public var maxNameLength: Int
    /// The longest activation name, in characters.
    public var maxActivationNameLength: Int
    /// The heaviest weight an admission or discharge may give, in kilograms.
    public var maxWeightKg: Double
    /// How far past the hub's clock a reading's measured time may lie, µs (60 s): the clock skew
    /// allowed between a device or a person's clock and the hub's. A reading dated later is
    /// refused (`reading_in_future`), so that it cannot stand as the latest ahead of the ones to come.
    public var readingClockSkew: Int64
    /// How long before an animal's admission its vitals may have been measured, µs (6 h): triage
    /// vitals, taken before the admission form was saved, belong to the stay (never to an earlier one).
    public var triageWindow: Int64

    /// Limits with the reference defaults unless given.
    public init(
        maxActivationsPerDevice: Int = 10, maxNameLength: Int = 64, maxActivationNameLength: Int = 20,
        maxWeightKg: Double = 2000, readingClockSkew: Int64 = 60_000_000, triageWindow: Int64 = 6 * 3_600_000_000
    ) {
        self.triageWindow = triageWindow
        self.maxActivationsPerDevice = maxActivationsPerDevice
        self.maxNameLength = maxNameLength
        self.maxActivationNameLength = maxActivationNameLength
        self.maxWeightKg = maxWeightKg
        self.readingClockSkew = readingClockSkew
    }

    /// The reference defaults.
    public static let standard = DomainLimits()
}
