/// The driver API: everything a device driver may see and do. Drivers import this module only
/// (it re-exports HubJSON, the hub's one way to read and write JSON).
///
/// A driver is made by its factory from the device's configuration, run with a `DriverContext`
/// through which it reports what the device says, and asked to execute commands. It never touches
/// the event log or the MQTT surface: the runtime turns its observations into domain commands
/// (recorded with the actor `driver:<name>`), and a switch command counts as done only when the
/// device's own report confirms it.
///
/// # Implementation requirements
///
/// - `DriverFactory.make(configuration:)` checks every setting before anything runs (read them
///   with `DriverSettings`, which refuses unknown keys) and does no I/O.
/// - `Driver.run(context:)` is the device conversation: it runs until its task is cancelled (the
///   device removed, the hub shutting down), does its concurrent work in child tasks (a task group)
///   and returns only when they have ended. It starts no unstructured `Task`.
/// - Nothing is reported after `Driver.run(context:)` returns (`DriverReportGate` does that
///   bookkeeping for reports made from `execute(_:)`).
/// - `Driver.execute(_:)` returning means "sent": the device's own `.switchState` confirms it.

/// A device's configuration as the hub holds it (from the config file or `request/device/add`).
public struct DriverConfiguration: Sendable, Equatable {
    /// The hub's id of the device (`lamp`), named in every error and observation.
    public var deviceId: String
    /// The factory's name (`"virtual"`, `"tasmota"`), which picked the driver.
    public var driver: String
    /// The driver-specific settings, as a JSON object text (e.g. `{"host":"10.0.0.5","port":230}`).
    public var settingsJSON: String

    /// A configuration.
    /// - Parameters:
    ///   - deviceId: The hub's id of the device.
    ///   - driver: The factory's name.
    ///   - settingsJSON: The driver's settings as JSON object text ("" or "{}" for none).
    public init(deviceId: String, driver: String, settingsJSON: String) {
        self.deviceId = deviceId
        self.driver = driver
        self.settingsJSON = settingsJSON
    }
}

/// One timer as a device stores it: on from `start` for `lengthMinutes`, repeating every
/// `periodMinutes` (0 = one-shot). `start` is Unix seconds, UTC.
public struct DeviceActivation: Sendable, Equatable, Hashable, CustomStringConvertible {
    /// The activation's name, unique per device.
    public var name: String
    /// When it first switches on, Unix seconds (UTC).
    public var start: Int64
    /// How long it stays on, minutes (at least 1).
    public var lengthMinutes: UInt16
    /// How often it repeats, minutes; 0 for one-shot.
    public var periodMinutes: UInt16

    /// An activation.
    /// - Parameters:
    ///   - name: The activation's name.
    ///   - start: First switch-on, Unix seconds (UTC).
    ///   - lengthMinutes: Minutes on.
    ///   - periodMinutes: Minutes between starts; 0 for one-shot.
    public init(name: String, start: Int64, lengthMinutes: UInt16, periodMinutes: UInt16) {
        self.name = name
        self.start = start
        self.lengthMinutes = lengthMinutes
        self.periodMinutes = periodMinutes
    }

    /// `name@start+lengthm/periodm`, for logs and errors.
    public var description: String { "\(name)@\(start)+\(lengthMinutes)m/\(periodMinutes)m" }
}

/// What a driver observed at the device.
public enum Observation: Sendable, Equatable {
    /// The relay state the device reports, and whether it is in manual mode (nil: the device has no such notion).
    case switchState(on: Bool, manual: Bool?)
    /// A measurement: the value in `quantity`'s unit, the time in µs since the epoch. Report every
    /// sample you get: the runtime keeps only changes beyond the deadband and one value per maximum
    /// interval, and drops non-finite values.
    case reading(quantity: Quantity, value: Double, measuredAt: Int64)
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
    /// Switch the relay on or off; the device's next `.switchState` confirms it.
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
    /// The quantities the driver reports for this device (`.reading`): the hub offers Home
    /// Assistant a sensor for each (and for any other quantity the device has reported), and no
    /// sensor for a quantity the device cannot measure. Empty for a switch without a meter.
    public var readings: Set<Quantity>
    /// Whether the hub announces this device to Home Assistant (MQTT discovery: its switch and
    /// sensors). `false` for a device that Home Assistant already discovers from another bridge (a
    /// Zigbee plug that Zigbee2MQTT announces itself), so it does not appear twice; the hub then
    /// clears any config it announced for the device before. The device is still served on the
    /// hub's own MQTT topics.
    public var announcesToHomeAssistant: Bool

    /// Capabilities.
    /// - Parameters:
    ///   - storesActivations: Whether the device runs its own activations.
    ///   - activationSlots: How many it can hold (when it stores them).
    ///   - mqttScope: The MQTT filters the driver may use; empty for drivers that do not speak MQTT.
    ///   - readings: The quantities the driver reports; empty when it reports none.
    ///   - announcesToHomeAssistant: Whether the hub announces the device to Home Assistant (default `true`).
    public init(
        storesActivations: Bool = false, activationSlots: Int = 0, mqttScope: [String] = [], readings: Set<Quantity> = [],
        announcesToHomeAssistant: Bool = true
    ) {
        self.storesActivations = storesActivations
        self.activationSlots = activationSlots
        self.mqttScope = mqttScope
        self.readings = readings
        self.announcesToHomeAssistant = announcesToHomeAssistant
    }

    /// A switch and nothing more: the hub runs the activations, no MQTT.
    public static let switchOnly = DriverCapabilities()
}

/// The hub side a running driver talks to.
///
/// The context outlives the driver's `run(context:)`, but reports made after it returns are a
/// contract violation (use `DriverReportGate` to rule them out).
public protocol DriverContext: Sendable {
    /// The device this driver runs.
    var deviceId: String { get }
    /// Hands an observation to the hub. Returns once the hub has taken it in (recorded or filtered);
    /// observations of one driver are handled in the order they are reported.
    /// - Parameter observation: What the device said.
    func report(_ observation: Observation) async
    /// The hub's broker connection scoped to `capabilities.mqttScope` (nil when the driver declared
    /// no scope, or the hub runs without MQTT).
    var mqtt: (any DriverMQTT)? { get }
}

extension DriverContext {
    /// No MQTT: the default for contexts of drivers that declared no scope.
    public var mqtt: (any DriverMQTT)? { nil }
}

/// One running device connection.
public protocol Driver: AnyObject, Sendable {
    /// What this device can do; read once, after `make`.
    var capabilities: DriverCapabilities { get }
    /// Talks to the device (connect, subscribe, read, reconnect...) until the task running it is
    /// cancelled, reporting the device's reachability with `.availability` as it changes. The hub
    /// runs it as a child task of its driver host and cancels it when the device is removed or the
    /// hub shuts down. Concurrent work (a reader beside a timer) runs in child tasks of a task group
    /// inside it, so everything the driver does has ended when it returns; nothing is reported after.
    /// - Parameter context: Where to report; valid while `run` runs.
    /// - Throws: When the driver cannot run at all (an invalid scope, a refused subscription): the
    ///   hub reports the device unavailable ("driver could not start: <error>") and does not run it
    ///   again until the device is registered again. A device that is merely unreachable is reported
    ///   with `.availability` and retried inside `run`, not thrown. Cancellation is not an error:
    ///   return (or throw `CancellationError`) when cancelled.
    func run(context: any DriverContext) async throws
    /// Sends a command to the device. Returning means "sent", not "confirmed": the device's report confirms.
    /// Called from the hub's own tasks while `run(context:)` runs (and possibly just after it
    /// returned: then throw, the driver is not running).
    /// - Parameter command: What to do.
    /// - Throws: When the command could not be sent (not connected, refused by the device): a
    ///   `.setSwitch` is recorded as failed with the error's description, a `.writeActivations` is
    ///   written again later.
    func execute(_ command: DriverCommand) async throws
}

extension Driver {
    /// `.switchOnly`, for drivers that need nothing more.
    public var capabilities: DriverCapabilities { .switchOnly }
}

/// Makes drivers of one kind; the hub picks factories by name from its configuration.
public protocol DriverFactory: Sendable {
    /// The name used in configuration (`"driver": "virtual"`).
    var name: String { get }
    /// Checks the settings and makes a driver, without I/O.
    /// - Parameter configuration: The device's id, driver name and settings.
    /// - Returns: A driver, not yet running.
    /// - Throws: A `DriverError` naming the bad setting (`DriverSettings` words them).
    func make(configuration: DriverConfiguration) throws -> any Driver
    /// The outlets of a device with these settings, when it has more than one switchable outlet (a
    /// power strip, a multi-relay or multi-gang plug): registering it then registers each outlet as
    /// a device of its own, `<id>-<number>`, recorded with the strip as its parent and driven by a
    /// driver made from the outlet's settings. nil (the default): the settings name one device.
    /// Checks the settings as `make` does, without I/O.
    /// - Parameter configuration: The strip's id, driver name and settings.
    /// - Returns: The outlets in the device's own order, or nil for a single device.
    /// - Throws: A `DriverError` naming the bad setting.
    func outlets(of configuration: DriverConfiguration) throws -> [DriverOutlet]?
}

extension DriverFactory {
    /// nil: one device per registration.
    public func outlets(of configuration: DriverConfiguration) throws -> [DriverOutlet]? { nil }
}

/// One outlet of a multi-outlet device, registered by the hub as the device `<strip>-<number>`.
public struct DriverOutlet: Sendable, Equatable {
    /// Its position in the device's own order, from 1.
    public var number: Int
    /// The device's own name for the outlet, when it has one (a Kasa strip's child alias); nil:
    /// the hub names it after the strip ("Desk strip 2").
    public var name: String?
    /// The settings (JSON object text) that drive this outlet alone, handed to `make(configuration:)`.
    public var settingsJSON: String

    /// An outlet.
    /// - Parameters:
    ///   - number: Its position, from 1.
    ///   - name: The device's own name for it, if any.
    ///   - settingsJSON: The settings that drive it alone.
    public init(number: Int, name: String? = nil, settingsJSON: String) {
        self.number = number
        self.name = name
        self.settingsJSON = settingsJSON
    }
}

/// A driver's error: a message a person can act on (it names the device and setting when there is one).
public struct DriverError: Error, Equatable, CustomStringConvertible {
    /// The whole message.
    public var message: String
    /// An error with this message.
    /// - Parameter message: What went wrong, for a person.
    public init(_ message: String) { self.message = message }
    /// The message.
    public var description: String { message }
}
