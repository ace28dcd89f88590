import DriverAPI

/// Makes drivers for Tasmota devices (plugs, relays, energy meters) speaking MQTT through the hub's
/// broker: the device must be configured with the hub's broker as its MQTT host.
///
/// Settings (JSON object):
/// - `topic` (required): the device's `%topic%` (e.g. `tasmota_A1B2C3`).
/// - `full_topic` (default `%prefix%/%topic%/`): the device's FullTopic pattern; `%prefix%` becomes
///   `cmnd`, `stat` or `tele`. Only `%prefix%` and `%topic%` are supported as tokens.
/// - `relay` (default 1): which relay (`POWER<n>`) this device entry switches.
/// - `relays` (default 1): how many relays the device has. With 1, Tasmota names the relay `POWER`
///   (`POWER1` is accepted in results too); with more, `POWER1`...`POWER<n>`.
/// - `energy_channel` (default 0): index into array-valued `ENERGY` fields of multi-channel meters.
///
/// Discovery: the hub subscribes to `tele/+/LWT`; a device whose last will says `Online` is offered
/// for adoption with settings `{"topic":"<t>"}` (devices with a custom FullTopic must be added by hand).
public struct TasmotaDriverFactory: DiscoveringDriverFactory {
    /// The driver name devices are registered with.
    public let name = "tasmota"

    /// How long a switch command may wait for the device's confirmation before it is reported as
    /// failed (`.commandFailed`). A confirmation arriving later is still reported as the state.
    let confirmationTimeout: Duration

    /// A factory whose drivers wait 10 s for a switch's confirmation.
    public init() { self.confirmationTimeout = .seconds(10) }

    init(confirmationTimeout: Duration) { self.confirmationTimeout = confirmationTimeout }

    static let keys: Set<String> = ["topic", "full_topic", "relay", "relays", "energy_channel"]

    /// A driver for one device from its settings.
    /// - Throws: A `DriverError` naming the setting that is missing, unknown or invalid.
    public func make(configuration: DriverConfiguration) throws -> any Driver {
        let s = try DriverSettings(configuration, allowed: Self.keys)
        let topic = try s.string("topic")
        guard TasmotaTopics.isValidTopic(topic) else {
            throw DriverError(
                "tasmota setting \"topic\" of device \"\(configuration.deviceId)\" must not contain '+', '#', NUL or empty levels (got \"\(topic)\")"
            )
        }
        let fullTopic = try s.string("full_topic", default: TasmotaTopics.defaultFullTopic)
        if let problem = TasmotaTopics.problem(withFullTopic: fullTopic) {
            throw DriverError("tasmota setting \"full_topic\" of device \"\(configuration.deviceId)\" \(problem) (got \"\(fullTopic)\")")
        }
        let relays = try s.int("relays", default: 1, in: 1...32)
        let relay = try s.int("relay", default: 1, in: 1...32)
        guard relay <= relays else {
            throw DriverError(
                "tasmota setting \"relay\" of device \"\(configuration.deviceId)\" must be from 1 to \"relays\" (\(relays)), got \(relay)")
        }
        let channel = try s.int("energy_channel", default: 0, in: 0...31)
        let topics = TasmotaTopics(topic: topic, fullTopic: fullTopic, relay: relay, relays: relays)
        return TasmotaDriver(topics: topics, energyChannel: channel, confirmationTimeout: confirmationTimeout)
    }

    /// The topic discovery listens on: every device's last will.
    public var discoveryFilters: [String] { ["tele/+/LWT"] }

    /// The device an `Online` last will describes, nil for any other message.
    public func discover(_ message: DriverMQTTMessage) -> DiscoveredDevice? {
        let levels = message.topic.split(separator: "/", omittingEmptySubsequences: false)
        guard levels.count == 3, levels[0] == "tele", levels[2] == "LWT" else { return nil }
        let topic = String(levels[1])
        guard !topic.isEmpty, TasmotaTopics.isValidTopic(topic), message.payload.count <= 64,
            TasmotaPayload.availability(message.text) == true
        else { return nil }
        let id = Self.suggestedId(for: topic)
        guard !id.isEmpty else { return nil }
        return DiscoveredDevice(
            suggestedId: id, driver: name, name: topic,
            settingsJSON: JSONValue.object([("topic", .string(topic))]).serialized(), hardwareId: nil)
    }

    /// `topic` with everything but `[A-Za-z0-9_-]` dropped, at most 64 characters.
    static func suggestedId(for topic: String) -> String {
        let allowed = topic.unicodeScalars.filter {
            ($0 >= "a" && $0 <= "z") || ($0 >= "A" && $0 <= "Z") || ($0 >= "0" && $0 <= "9") || $0 == "_" || $0 == "-"
        }
        return String(String.UnicodeScalarView(allowed.prefix(64)))
    }
}

/// The topics of one device, built from its FullTopic pattern.
struct TasmotaTopics: Sendable, Equatable {
    static let defaultFullTopic = "%prefix%/%topic%/"

    let topic: String
    let fullTopic: String
    let relay: Int
    let relays: Int

    /// `cmnd/<t>/`, `stat/<t>/`, `tele/<t>/` (always ending in `/`).
    func base(_ prefix: String) -> String {
        var s = fullTopic.replacingOccurrences(of: "%prefix%", with: prefix)
            .replacingOccurrences(of: "%topic%", with: topic)
        if !s.hasSuffix("/") { s += "/" }
        return s
    }

    var scope: [String] { ["cmnd", "stat", "tele"].map { base($0) + "#" } }

    /// The relay's command/result name: `POWER` for the only relay, else `POWER<n>`.
    var powerName: String { relays == 1 ? "POWER" : "POWER\(relay)" }
    /// Names accepted in results for this relay.
    var acceptedPowerNames: [String] { relay == 1 ? (relays == 1 ? ["POWER", "POWER1"] : ["POWER1", "POWER"]) : ["POWER\(relay)"] }

    var commandTopic: String { base("cmnd") + powerName }
    var resultTopic: String { base("stat") + "RESULT" }
    var statPowerTopics: [String] { acceptedPowerNames.map { base("stat") + $0 } }
    var lwtTopic: String { base("tele") + "LWT" }
    var stateTopic: String { base("tele") + "STATE" }
    var sensorTopic: String { base("tele") + "SENSOR" }

    static func isValidTopic(_ topic: String) -> Bool {
        !topic.isEmpty && !topic.contains("+") && !topic.contains("#") && !topic.contains("\0")
            && !topic.split(separator: "/", omittingEmptySubsequences: false).contains(where: \.isEmpty)
            && topic.utf8.count <= 200
    }

    /// Why a FullTopic pattern is unusable, or nil.
    static func problem(withFullTopic pattern: String) -> String? {
        guard pattern.contains("%prefix%") else { return "must contain %prefix%" }
        guard pattern.contains("%topic%") else { return "must contain %topic%" }
        let rest = pattern.replacingOccurrences(of: "%prefix%", with: "").replacingOccurrences(of: "%topic%", with: "")
        if rest.contains("%") { return "may use only the tokens %prefix% and %topic%" }
        if rest.contains("+") || rest.contains("#") || rest.contains("\0") { return "must not contain '+', '#' or NUL" }
        if pattern.hasPrefix("/") { return "must not start with '/'" }
        var trimmed = Substring(pattern)
        if trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        if trimmed.split(separator: "/", omittingEmptySubsequences: false).contains(where: \.isEmpty) {
            return "must not contain empty levels ('//')"
        }
        return nil
    }
}
