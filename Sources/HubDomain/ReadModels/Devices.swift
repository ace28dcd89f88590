/// A device's switch position as the read model knows it: `unknown` until the first confirmation.
public enum SwitchStatus: String, Sendable, Equatable, Codable {
    /// Confirmed on, confirmed off, or never confirmed since registration.
    case on, off, unknown

    /// The status a confirmed state shows.
    public init(_ state: SwitchState) { self = state == .on ? .on : .off }
    /// The confirmed state, nil when `unknown`.
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
    /// The state asked for.
    public var state: SwitchState
    /// When it was asked for, µs since the Unix epoch (the `SwitchRequested` event's append time).
    public var since: Int64
    /// The command id of the request, when it carried one.
    public var commandId: String?
    /// Requested by the hub's scheduler (actor `scheduler`): its confirmation has cause `schedule`.
    public var bySchedule: Bool = false
}

/// The last switch command that failed for a device.
public struct SwitchFailure: Sendable, Equatable, Codable {
    /// The state that was asked for.
    public var state: SwitchState
    /// Why it failed, as the `SwitchFailed` event said.
    public var reason: String
    /// When the failure was logged, µs since the Unix epoch.
    public var at: Int64
}

/// The last reading of each quantity (fixed fields: no hashing on the hot path).
public struct LastReadings: Sendable, Equatable, Codable {
    /// Active power, in W.
    public var power: ReadingValue?
    /// Voltage, in V.
    public var voltage: ReadingValue?
    /// Current, in A.
    public var current: ReadingValue?
    /// The energy counter, in Wh.
    public var energy: ReadingValue?
    /// Temperature, in °C.
    public var temperature: ReadingValue?
    /// Heart rate, in beats per minute.
    public var heartRate: ReadingValue?

    /// No readings yet.
    public init() {}

    /// Keeps `reading` as `quantity`'s latest unless one measured later is held.
    mutating func take(_ quantity: Quantity, _ reading: ReadingValue) {
        self[quantity] = ReadingValue.latest(self[quantity], reading)
    }

    /// The latest reading of `quantity`, nil when none was recorded.
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

/// One device as the read model knows it: identity, switch state, mode, pending command, availability, readings.
public struct DeviceRecord: Sendable, Equatable, Codable {
    /// The device id.
    public var id: String
    /// The driver's name.
    public var driver: String
    /// The display name.
    public var name: String
    /// The driver configuration, a JSON text ("{}" when none).
    public var config: String
    /// The device's own identity (MAC, serial), when registered with one.
    public var hardwareId: String?
    /// The strip this device is an outlet of (nil: a device of its own).
    public var outlet: OutletOf?
    /// When it was (last) registered, µs since the Unix epoch.
    public var registeredAt: Int64
    /// True once removed; a removed record stays until the id is registered again.
    public var removed: Bool = false
    /// When it was removed, µs since the Unix epoch; nil while active.
    public var removedAt: Int64?
    /// The last confirmed switch position.
    public var switchState: SwitchStatus = .unknown
    /// When the switch position last changed, µs since the Unix epoch.
    public var switchChangedAt: Int64?
    /// Why the switch position last changed.
    public var lastSwitchCause: SwitchCause?
    /// Manual or automatic (automatic after registration).
    public var mode: DeviceMode = .automatic
    /// A switch command sent and not yet confirmed or failed; cleared when removed.
    public var pending: PendingSwitch?
    /// The last switch failure, kept after later successes.
    public var lastFailure: SwitchFailure?
    /// nil until the first availability report.
    public var available: Bool?
    /// The reason given with the last availability report ("" until then).
    public var availabilityReason: String = ""
    /// When the last availability report was logged, µs since the Unix epoch.
    public var availableSince: Int64?
    /// Per quantity, the reading measured latest (one measured before it, logged late, goes to
    /// the history only; on equal times the later event's).
    public var lastReadings = LastReadings()

    /// The latest reading of `quantity`, nil when none was recorded.
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

    /// No devices.
    public init() {}

    /// The device with this id, removed ones included; nil when never registered.
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

    /// The active outlets of the strip `strip`, in the strip's order (empty: no such strip).
    public func outlets(of strip: String) -> [DeviceRecord] {
        records.filter { !$0.removed && $0.outlet?.strip == strip }.sorted { ($0.outlet?.number ?? 0) < ($1.outlet?.number ?? 0) }
    }

    /// Equal when they hold the same records by id (slot order aside).
    public static func == (a: DevicesModel, b: DevicesModel) -> Bool { a.byId == b.byId }

    /// Decodes the records as an array (the snapshot form).
    public init(from decoder: any Decoder) throws {
        records = try [DeviceRecord](from: decoder)
        for (i, r) in records.enumerated() { slotById[r.id] = i }
    }

    /// Encodes the records as an array (the snapshot form).
    public func encode(to encoder: any Encoder) throws { try records.encode(to: encoder) }

    /// Applies `body` to the record in place, when the device exists.
    @inline(__always)
    private mutating func update(_ id: String, _ body: (inout DeviceRecord) -> Void) {
        guard let slot = slotById[id] else { return }
        body(&records[slot])
    }

    /// Folds one event into the model; events about other things are ignored.
    public mutating func apply(_ event: HubEvent, context: EventContext) {
        switch event {
        case .deviceRegistered(let e):
            let record = DeviceRecord(
                id: e.device, driver: e.driver, name: e.name, config: e.config,
                hardwareId: e.hardwareId, outlet: e.outlet, registeredAt: context.timestamp)
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
