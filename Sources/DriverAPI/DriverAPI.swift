/// The driver API: everything a device driver may see and do. Drivers import this module only.
///
/// A driver is created from its configuration, started with a `DriverContext` through which it
/// reports what the device says, and asked to execute commands. It never touches the event log or
/// the MQTT surface: the runtime turns its observations into commands for the domain.

/// A device's configuration as the hub holds it (from the config file or `device/add`).
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

/// What a driver observed at the device.
public enum Observation: Sendable, Equatable {
    /// The relay state the device reports, and whether it is in manual mode (nil: the device has no such notion).
    case switchState(on: Bool, manual: Bool?)
    /// A measurement: quantity raw value as in the event catalogue ("power", "voltage", "current",
    /// "energy", "temperature", "heart_rate"), value in the catalogue's unit, time in µs since the epoch.
    case reading(quantity: String, value: Double, measuredAt: Int64)
    /// Reachability of the device, with a reason a person can read.
    case availability(available: Bool, reason: String)
    /// A pending switch command could not be confirmed.
    case commandFailed(reason: String)
}

/// A command the hub asks a driver to carry out.
public enum DriverCommand: Sendable, Equatable {
    case setSwitch(on: Bool)
}

/// The hub side a running driver talks to.
public protocol DriverContext: Sendable {
    func report(_ observation: Observation) async
}

/// The protocol every driver implements.
public protocol Driver: Sendable {
    /// The name used in configuration (`"driver": "powerplug"`).
    static var name: String { get }
    init(configuration: DriverConfiguration) throws
    func start(context: any DriverContext) async throws
    func execute(_ command: DriverCommand) async throws
    func stop() async
}
