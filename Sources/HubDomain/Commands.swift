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
    /// A driver's observation: the device says it is on/off, maybe in manual mode.
    case reportSwitch(id: String, state: SwitchState, manual: Bool?)
    /// A driver could not confirm the pending switch command.
    case failSwitch(id: String, reason: String)
    case setActivation(device: String, op: ActivationOp, name: String, start: Int64?, lengthMinutes: Int?, periodMinutes: Int?)
    case reportAvailability(id: String, available: Bool, reason: String)
    /// A driver read back the activations a device stores itself; `policy` says how a difference
    /// from the log is reconciled.
    case reportActivations(device: String, found: [Activation], policy: DivergencePolicy)
    case recordReading(subject: Subject, quantity: Quantity, value: Double, measuredAt: Int64)
    case admitAnimal(Admission)
    case dischargeAnimal(id: String, exitWeightKg: Double, veterinarian: String?, observations: String?)
    case sightAnimal(id: String, room: String, beacon: String, at: Int64)

    /// The stable command name (used in CommandRejected and on the wire).
    public var name: String {
        switch self {
        case .registerDevice: return "register_device"
        case .renameDevice: return "rename_device"
        case .removeDevice: return "remove_device"
        case .switchDevice: return "switch"
        case .reportSwitch: return "report_switch"
        case .failSwitch: return "fail_switch"
        case .setActivation: return "set_activation"
        case .reportAvailability: return "report_availability"
        case .reportActivations: return "report_activations"
        case .recordReading: return "record_reading"
        case .admitAnimal: return "admit_animal"
        case .dischargeAnimal: return "discharge_animal"
        case .sightAnimal: return "sight_animal"
        }
    }

    /// The device or animal id the command is about.
    public var target: String? {
        switch self {
        case .registerDevice(let id, _, _, _, _): return id
        case .renameDevice(let id, _): return id
        case .removeDevice(let id): return id
        case .switchDevice(let id, _): return id
        case .reportSwitch(let id, _, _): return id
        case .failSwitch(let id, _): return id
        case .setActivation(let device, _, _, _, _, _): return device
        case .reportAvailability(let id, _, _): return id
        case .reportActivations(let device, _, _): return device
        case .recordReading(let subject, _, _, _): return subject.id
        case .admitAnimal(let a): return a.animal
        case .dischargeAnimal(let id, _, _, _): return id
        case .sightAnimal(let id, _, _, _): return id
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

    public init(maxActivationsPerDevice: Int = 10, maxNameLength: Int = 64, maxActivationNameLength: Int = 20,
                maxWeightKg: Double = 2000) {
        self.maxActivationsPerDevice = maxActivationsPerDevice
        self.maxNameLength = maxNameLength
        self.maxActivationNameLength = maxActivationNameLength
        self.maxWeightKg = maxWeightKg
    }

    public static let standard = DomainLimits()
}
