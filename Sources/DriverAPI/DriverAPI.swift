/// The driver API: everything a device driver may see and do. Drivers import this module only.
///
/// A driver is made by its factory from the device's configuration, started with a `DriverContext`
/// through which it reports what the device says, and asked to execute commands. It never touches
/// the event log or the MQTT surface: the runtime turns its observations into domain commands
/// (recorded with the actor `driver:<name>`), and a switch command counts as done only when the
/// device's own report confirms it.

/// A device's configuration as the hub holds it (from the config file or `request/device/add`).
public struct DriverConfiguration: Sendable, Equatable {
    public var deviceId: String
    public var driver: String
    /// The driver-specific settings, as a JSON object text (e.g. `{"host":"10.0.0.5","port":230}`).
    public var settingsJSON: String

    public init(deviceId: String, driver: String, settingsJSON: String) {
        self.deviceId = deviceId
        self.driver = driver
        self.settingsJSON = settingsJSON
    }
}

/// One timer as a device stores it: on from `start` for `lengthMinutes`, repeating every
/// `periodMinutes` (0 = one-shot). `start` is Unix seconds, UTC.
public struct DeviceActivation: Sendable, Equatable, Hashable, CustomStringConvertible {
    public var name: String
    public var start: Int64
    public var lengthMinutes: UInt16
    public var periodMinutes: UInt16

    public init(name: String, start: Int64, lengthMinutes: UInt16, periodMinutes: UInt16) {
        self.name = name
        self.start = start
        self.lengthMinutes = lengthMinutes
        self.periodMinutes = periodMinutes
    }

    public var description: String { "\(name)@\(start)+\(lengthMinutes)m/\(periodMinutes)m" }
}

/// What a driver observed at the device.
public enum Observation: Sendable, Equatable {
    /// The relay state the device reports, and whether it is in manual mode (nil: the device has no such notion).
    case switchState(on: Bool, manual: Bool?)
    /// A measurement. `quantity` is the event catalogue's name ("power", "voltage", "current",
    /// "energy", "temperature", "heart_rate"), the value in the catalogue's unit (energy: the device's
    /// own cumulative counter in Wh), the time in µs since the epoch. Report every sample you get:
    /// the runtime keeps only changes beyond the deadband and one value per maximum interval.
    case reading(quantity: String, value: Double, measuredAt: Int64)
    /// Reachability of the device, with a reason a person can read.
    case availability(available: Bool, reason: String)
    /// A pending switch command could not be carried out (the reason says why).
    case commandFailed(reason: String)
    /// The activations the device itself holds, in its slot order (drivers with `storesActivations`).
    /// Report after connecting, after every write, and whenever the device's list is read back.
    case activations([DeviceActivation])
}

/// A command the hub asks a driver to carry out.
public enum DriverCommand: Sendable, Equatable {
    case setSwitch(on: Bool)
    /// Make the device hold exactly these activations (drivers with `storesActivations`), then read
    /// them back and report them with `.activations`.
    case writeActivations([DeviceActivation])
}

/// What a kind of device can do beyond switching.
public struct DriverCapabilities: Sendable, Equatable {
    /// The device stores and runs its activations itself (the seed's TCP plug): the hub writes the
    /// log's activations to it and compares what it reads back. Otherwise the activations are the hub's to run.
    public var storesActivations: Bool
    /// How many activation slots the device has (when it stores them).
    public var activationSlots: Int
    /// MQTT-native devices: the topic filters this driver may subscribe and publish to (e.g.
    /// `["cmnd/plug1/#", "stat/plug1/#", "tele/plug1/#"]`); the context's `mqtt` handle is scoped to them.
    public var mqttScope: [String]

    public init(storesActivations: Bool = false, activationSlots: Int = 0, mqttScope: [String] = []) {
        self.storesActivations = storesActivations
        self.activationSlots = activationSlots
        self.mqttScope = mqttScope
    }

    public static let switchOnly = DriverCapabilities()
}

/// The hub side a running driver talks to.
public protocol DriverContext: Sendable {
    var deviceId: String { get }
    func report(_ observation: Observation) async
    /// The hub's broker connection scoped to `capabilities.mqttScope` (nil when the driver declared
    /// no scope, or the hub runs without MQTT).
    var mqtt: (any DriverMQTT)? { get }
}

extension DriverContext {
    public var mqtt: (any DriverMQTT)? { nil }
}

/// One running device connection.
public protocol Driver: AnyObject, Sendable {
    /// What this device can do; read once, after `make`.
    var capabilities: DriverCapabilities { get }
    /// Starts talking to the device (connect, subscribe...). Must return promptly; keep working in a task.
    func start(context: any DriverContext) async throws
    /// Sends a command to the device. Returning means "sent", not "confirmed": the device's report confirms.
    func execute(_ command: DriverCommand) async throws
    /// Stops and releases everything.
    func stop() async
}

extension Driver {
    public var capabilities: DriverCapabilities { .switchOnly }
}

/// Makes drivers of one kind; the hub picks factories by name from its configuration.
public protocol DriverFactory: Sendable {
    /// The name used in configuration (`"driver": "virtual"`).
    var name: String { get }
    /// Checks the settings and makes a driver; throws a `DriverError` naming the bad setting.
    func make(configuration: DriverConfiguration) throws -> any Driver
}

public struct DriverError: Error, Equatable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
