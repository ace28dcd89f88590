// Commands: what someone (a user, a driver, the scheduler) asks the hub to do.

public enum SwitchTarget: String, Sendable, Equatable, Codable, CaseIterable {
    case on, off, toggle
}

public enum ActivationOp: String, Sendable, Equatable, Codable, CaseIterable {
    case add, update, remove
}

public enum HubCommand: Sendable, Equatable {
    case registerDevice(id: String, driver: String, name: String, config: String, hardwareId: String?)
    case renameDevice(id: String, name: String)
    case removeDevice(id: String)
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
    case reportAvailability(id: String, available: Bool, reason: String)
    /// A driver read back the activations a device stores itself; `policy` says how a difference
    /// from the log is reconciled.
    case reportActivations(device: String, found: [Activation], policy: DivergencePolicy)
    case recordReading(subject: Subject, quantity: Quantity, value: Double, measuredAt: Int64)
    case defineGroup(id: String, name: String, members: [String])
    case removeGroup(id: String)
    /// Every registered member to one state (toggle: off if any member is on, else on).
    case switchGroup(id: String, target: SwitchTarget)
    case defineScene(id: String, name: String, targets: [DeviceTarget])
    case removeScene(id: String)
    /// A defined scene, or `all-off`: every registered device off.
    case applyScene(id: String)
    case admitAnimal(Admission)
    case dischargeAnimal(id: String, exitWeightKg: Double, veterinarian: String?, observations: String?)
    case sightAnimal(id: String, room: String, beacon: String, at: Int64)
    /// Erase the animal's owner contact data (the runtime deletes the key that seals it).
    case eraseOwnerData(id: String)
    /// A bridge stopped hearing the animal's beacon.
    case markAnimalUnseen(id: String, lastRoom: String, lastSeen: Int64)

    /// The stable command name (used in CommandRejected and on the wire).
    public var name: String {
        switch self {
        case .registerDevice: return "register_device"
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

/// Limits the decisions apply; the defaults match the reference devices.
public struct DomainLimits: Sendable, Equatable {
    /// Activation slots per device (the TCP plug has 10).
    public var maxActivationsPerDevice: Int
    public var maxNameLength: Int
    public var maxActivationNameLength: Int
    public var maxWeightKg: Double
    /// How far past the hub's clock a reading's measured time may lie, µs (60 s): the clock skew
    /// allowed between a device or a person's clock and the hub's. A reading dated later is
    /// refused (`reading_in_future`), so that it cannot stand as the latest ahead of the ones to come.
    public var readingClockSkew: Int64

    public init(
        maxActivationsPerDevice: Int = 10, maxNameLength: Int = 64, maxActivationNameLength: Int = 20,
        maxWeightKg: Double = 2000, readingClockSkew: Int64 = 60_000_000
    ) {
        self.maxActivationsPerDevice = maxActivationsPerDevice
        self.maxNameLength = maxNameLength
        self.maxActivationNameLength = maxActivationNameLength
        self.maxWeightKg = maxWeightKg
        self.readingClockSkew = readingClockSkew
    }

    public static let standard = DomainLimits()
}
