public enum SwitchStatus: String, Sendable, Equatable, Codable {
    case on, off, unknown

    public init(_ state: SwitchState) { self = state == .on ? .on : .off }
    public var state: SwitchState? {
        switch self {
        case .on: return .on
        case .off: return .off
        case .unknown: return nil
        }
    }
}

/// A switch command sent but not yet confirmed.
public struct PendingSwitch: Sendable, Equatable, Codable {
    public var state: SwitchState
    public var since: Int64
    public var commandId: String?
    /// Requested by the hub's scheduler (actor `scheduler`): its confirmation has cause `schedule`.
    public var bySchedule: Bool = false
}

public struct SwitchFailure: Sendable, Equatable, Codable {
    public var state: SwitchState
    public var reason: String
    public var at: Int64
}

/// The last reading of each quantity (fixed fields: no hashing on the hot path).
public struct LastReadings: Sendable, Equatable, Codable {
    public var power: ReadingValue?
    public var voltage: ReadingValue?
    public var current: ReadingValue?
    public var energy: ReadingValue?
    public var temperature: ReadingValue?
    public var heartRate: ReadingValue?

    public init() {}

    /// Keeps `reading` as `quantity`'s latest unless one measured later is held.
    mutating func take(_ quantity: Quantity, _ reading: ReadingValue) {
        self[quantity] = ReadingValue.latest(self[quantity], reading)
    }

    public subscript(quantity: Quantity) -> ReadingValue? {
        get {
            switch quantity {
            case .power: return power
            case .voltage: return voltage
            case .current: return current
            case .energy: return energy
            case .temperature: return temperature
            case .heartRate: return heartRate
            }
        }
        set {
            switch quantity {
            case .power: power = newValue
            case .voltage: voltage = newValue
            case .current: current = newValue
            case .energy: energy = newValue
            case .temperature: temperature = newValue
            case .heartRate: heartRate = newValue
            }
        }
    }
}

public struct DeviceRecord: Sendable, Equatable, Codable {
    public var id: String
    public var driver: String
    public var name: String
    public var config: String
    public var hardwareId: String?
    public var registeredAt: Int64
    public var removed: Bool = false
    public var removedAt: Int64?
    public var switchState: SwitchStatus = .unknown
    public var switchChangedAt: Int64?
    public var lastSwitchCause: SwitchCause?
    public var mode: DeviceMode = .automatic
    public var pending: PendingSwitch?
    public var lastFailure: SwitchFailure?
    /// nil until the first availability report.
    public var available: Bool?
    public var availabilityReason: String = ""
    public var availableSince: Int64?
    /// Per quantity, the reading measured latest (one measured before it, logged late, goes to
    /// the history only; on equal times the later event's).
    public var lastReadings = LastReadings()

    public func lastReading(_ quantity: Quantity) -> ReadingValue? { lastReadings[quantity] }

    mutating func markRemoved(at time: Int64) {
        removed = true
        removedAt = time
        pending = nil
    }

    mutating func applyToggled(_ e: SwitchToggled, at time: Int64) {
        switchState = SwitchStatus(e.state)
        switchChangedAt = time
        lastSwitchCause = e.cause
        if pending?.state == e.state { pending = nil }
    }

    mutating func applyFailed(_ e: SwitchFailed, at time: Int64) {
        pending = nil
        lastFailure = SwitchFailure(state: e.state, reason: e.reason, at: time)
    }

    mutating func applyAvailability(_ e: AvailabilityChanged, at time: Int64) {
        available = e.available
        availabilityReason = e.reason
        availableSince = time
    }

    /// Registered and not removed.
    public var isActive: Bool { !removed }
}

/// Per device id: identity, switch state, mode, pending command, availability, last readings.
/// Records live in an array with an id -> slot index, so updates mutate them in place
/// (a dictionary of large structs would move each record out and back on every event).
public struct DevicesModel: Sendable, Equatable, Codable {
    private var records: [DeviceRecord] = []
    private var slotById: [String: Int] = [:]

    public init() {}

    public subscript(id: String) -> DeviceRecord? {
        guard let slot = slotById[id] else { return nil }
        return records[slot]
    }

    /// Every device ever registered (removed ones included), keyed by id.
    public var byId: [String: DeviceRecord] {
        Dictionary(uniqueKeysWithValues: records.map { ($0.id, $0) })
    }

    /// Every device ever registered, in registration order.
    public var all: [DeviceRecord] { records }

    /// Devices that are registered and not removed, sorted by id.
    public var active: [DeviceRecord] { records.filter { !$0.removed }.sorted { $0.id < $1.id } }

    public static func == (a: DevicesModel, b: DevicesModel) -> Bool { a.byId == b.byId }

    public init(from decoder: any Decoder) throws {
        records = try [DeviceRecord](from: decoder)
        for (i, r) in records.enumerated() { slotById[r.id] = i }
    }

    public func encode(to encoder: any Encoder) throws { try records.encode(to: encoder) }

    /// Applies `body` to the record in place, when the device exists.
    @inline(__always)
    private mutating func update(_ id: String, _ body: (inout DeviceRecord) -> Void) {
        guard let slot = slotById[id] else { return }
        body(&records[slot])
    }

    public mutating func apply(_ event: HubEvent, context: EventContext) {
        switch event {
        case .deviceRegistered(let e):
            let record = DeviceRecord(
                id: e.device, driver: e.driver, name: e.name, config: e.config,
                hardwareId: e.hardwareId, registeredAt: context.timestamp)
            if let slot = slotById[e.device] {
                records[slot] = record
            } else {
                slotById[e.device] = records.count
                records.append(record)
            }
        case .deviceRenamed(let e):
            update(e.device) { $0.name = e.name }
        case .deviceRemoved(let e):
            update(e.device) { $0.markRemoved(at: context.timestamp) }
        case .switchRequested(let e):
            update(e.device) {
                $0.pending = PendingSwitch(
                    state: e.state, since: context.timestamp, commandId: context.commandId,
                    bySchedule: context.actor == Scheduling.actor)
            }
        case .switchToggled(let e):
            update(e.device) { $0.applyToggled(e, at: context.timestamp) }
        case .switchFailed(let e):
            update(e.device) { $0.applyFailed(e, at: context.timestamp) }
        case .modeChanged(let e):
            update(e.device) { $0.mode = e.mode }
        case .availabilityChanged(let e):
            update(e.device) { $0.applyAvailability(e, at: context.timestamp) }
        case .readingRecorded(let e):
            if case .device(let id) = e.subject {
                update(id) { $0.lastReadings.take(e.quantity, ReadingValue(value: e.value, measuredAt: e.measuredAt)) }
            }
        case .activationChanged, .activationsDiverged, .energyCounterReset, .groupDefined, .groupRemoved, .sceneDefined,
            .sceneRemoved, .multiSwitchRequested, .animalUnseen, .ownerDataErased, .animalAdmitted, .animalDischarged, .animalSighted,
            .commandRejected:
            return
        }
    }
}
