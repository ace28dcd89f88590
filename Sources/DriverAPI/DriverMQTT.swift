/// MQTT for drivers of MQTT-native devices (Tasmota, Shelly) and for beacon bridges: a handle on
/// the hub's own broker connection, scoped to the topics the driver declared
/// (`DriverCapabilities.mqttScope`). It never reaches the hub's own topics or another device's.

/// One message on a topic the driver subscribed to.
public struct DriverMQTTMessage: Sendable, Equatable {
    /// The topic it arrived on (or is to be published to).
    public var topic: String
    /// The raw payload bytes (read JSON with `JSONValue.parse(payload)`).
    public var payload: [UInt8]
    /// Delivered from the broker's retained store (e.g. a device's last will `Offline`).
    public var retained: Bool

    /// A message.
    /// - Parameters:
    ///   - topic: Its topic.
    ///   - payload: Its bytes.
    ///   - retained: Whether it came from the broker's retained store.
    public init(topic: String, payload: [UInt8], retained: Bool = false) {
        self.topic = topic
        self.payload = payload
        self.retained = retained
    }

    /// The payload as text (invalid UTF-8 replaced).
    public var text: String { String(decoding: payload, as: UTF8.self) }
}

/// The hub's broker connection as a driver sees it.
public protocol DriverMQTT: Sendable {
    /// Every message on the filters this handle subscribed to, in arrival order. Subscriptions are
    /// restored by the hub after a reconnect.
    var messages: AsyncStream<DriverMQTTMessage> { get }
    /// Subscribes at QoS 1; messages arrive on `messages`.
    /// - Parameter filter: A topic filter within the driver's scope (wildcards allowed).
    /// - Throws: A `DriverError` for a filter outside the driver's scope.
    func subscribe(_ filter: String) throws
    /// Publishes at QoS 1 (never retain a command: a retained command re-switches a device on every
    /// reconnect). Returning means queued for the broker, not delivered.
    /// - Parameters:
    ///   - topic: A topic within the driver's scope (no wildcards).
    ///   - payload: The bytes to send.
    ///   - retain: Whether the broker keeps it for later subscribers.
    /// - Throws: A `DriverError` for a topic outside the driver's scope.
    func publish(_ topic: String, _ payload: [UInt8], retain: Bool) throws
}

/// Whether `topic` matches the MQTT filter `filter` (`+` one level, `#` the rest).
/// - Parameters:
///   - topic: A topic name (no wildcards).
///   - filter: A topic filter.
/// - Returns: `true` when a subscription to `filter` receives messages on `topic`.
public func mqttTopic(_ topic: String, matches filter: String) -> Bool {
    let t = topic.split(separator: "/", omittingEmptySubsequences: false)
    let f = filter.split(separator: "/", omittingEmptySubsequences: false)
    var i = 0
    while i < f.count {
        if f[i] == "#" { return true }
        guard i < t.count else { return false }
        if f[i] != "+" && f[i] != t[i] { return false }
        i += 1
    }
    return i == t.count
}

/// A device found on the broker (its announcement or last will), offered to the user for adoption
/// with `request/device/add` rather than added silently.
public struct DiscoveredDevice: Sendable, Equatable {
    /// A suggested device id (valid hub id characters).
    public var suggestedId: String
    /// The factory that found it (`"tasmota"`), to register it with.
    public var driver: String
    /// A name for people (the device's own friendly name when it announces one).
    public var name: String
    /// The `config` object to register it with, as JSON text.
    public var settingsJSON: String
    /// The device's own identity (MAC, Shelly id), when known.
    public var hardwareId: String?

    /// A discovered device.
    /// - Parameters:
    ///   - suggestedId: A valid hub id for it.
    ///   - driver: The factory's name.
    ///   - name: A name for people.
    ///   - settingsJSON: The settings object (JSON text) that drives it.
    ///   - hardwareId: The device's own identity, when known (the hub refuses a second device with it).
    public init(suggestedId: String, driver: String, name: String, settingsJSON: String, hardwareId: String? = nil) {
        self.suggestedId = suggestedId
        self.driver = driver
        self.name = name
        self.settingsJSON = settingsJSON
        self.hardwareId = hardwareId
    }
}

/// Factories of MQTT-native drivers may find devices on the broker.
public protocol DiscoveringDriverFactory: DriverFactory {
    /// Filters the hub subscribes to on the factory's behalf (e.g. `tele/+/LWT`).
    var discoveryFilters: [String] { get }
    /// The device this message announces, if any. Called for every message on `discoveryFilters`;
    /// must not throw or trap on hostile payloads.
    /// - Parameter message: A message on one of the discovery filters.
    /// - Returns: The device, or nil when the message announces none.
    func discover(_ message: DriverMQTTMessage) -> DiscoveredDevice?
    /// Every device this message announces: a bridge's device list (Zigbee2MQTT's retained
    /// `bridge/devices`) names many. The hub offers each. Must not throw or trap on hostile payloads.
    /// Default: what `discover(_:)` finds, if anything.
    /// - Parameter message: A message on one of the discovery filters.
    /// - Returns: The devices, in the message's order; empty when it announces none.
    func discoverAll(_ message: DriverMQTTMessage) -> [DiscoveredDevice]
    /// Messages the hub publishes once its discovery listens, asking devices to announce themselves
    /// (Shelly Gen1: `announce` on `shellies/command`). Default: none.
    var discoveryProbes: [DriverMQTTMessage] { get }
}

extension DiscoveringDriverFactory {
    /// No probes.
    public var discoveryProbes: [DriverMQTTMessage] { [] }

    /// The one device `discover(_:)` finds, if any.
    public func discoverAll(_ message: DriverMQTTMessage) -> [DiscoveredDevice] { discover(message).map { [$0] } ?? [] }
}

// MARK: - Bridges

/// What a beacon bridge reports: facts about beacons, never raw observations.
public protocol BridgeContext: Sendable {
    /// The hub's broker connection, scoped to the bridge's filters.
    var mqtt: any DriverMQTT { get }
    /// A beacon's nearest room changed (after smoothing and hysteresis). Logged for admitted animals.
    /// - Parameters:
    ///   - beacon: The beacon's id (as configured, else its natural id).
    ///   - room: Its new nearest room.
    ///   - at: When, µs since the epoch.
    func sighted(beacon: String, room: String, at: Int64) async
    /// A beacon is still in `room` (at most every few seconds per beacon): live presence, not logged.
    /// - Parameters:
    ///   - beacon: The beacon's id.
    ///   - room: Its current room.
    ///   - at: When, µs since the epoch.
    func present(beacon: String, room: String, at: Int64) async
    /// A beacon has not been heard for the configured silence. Logged for admitted animals.
    /// - Parameters:
    ///   - beacon: The beacon's id.
    ///   - lastRoom: Where it was last heard.
    ///   - lastSeen: When it was last heard, µs since the epoch.
    func unseen(beacon: String, lastRoom: String, lastSeen: Int64) async
}

/// A long-running source of observations that is not one device (BLE beacon bridges).
public protocol Bridge: AnyObject, Sendable {
    /// The MQTT filters the bridge reads; the hub subscribes to them for it.
    var mqttScope: [String] { get }
    /// Reads the bridge's messages and reports facts until the task running it is cancelled (the
    /// hub shutting down). Concurrent work runs in child tasks of a task group inside it, so all of
    /// it has ended, and nothing is reported, once it returns.
    /// - Parameter context: Where to report; valid while `run` runs.
    /// - Throws: When the bridge cannot run (the hub reports the problem and runs without the bridge).
    func run(context: any BridgeContext) async throws
}

/// Makes a bridge from its settings; the hub picks it by name.
public protocol BridgeFactory: Sendable {
    /// The name in configuration (`"beacons"`).
    var name: String { get }
    /// Checks the settings and makes the bridge, without I/O.
    /// - Parameter settingsJSON: A JSON object text; empty means all defaults.
    /// - Returns: A bridge, not yet running.
    /// - Throws: A `DriverError` naming the bad setting.
    func make(settingsJSON: String) throws -> any Bridge
}
