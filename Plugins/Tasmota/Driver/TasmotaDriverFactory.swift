import DriverAPI

/// Makes drivers for Tasmota devices (plugs, relays, power strips, energy meters) speaking MQTT
/// through the hub's broker: the device must be configured with the hub's broker as its MQTT host.
///
/// Settings (JSON object):
/// - `topic` (required): the device's `%topic%` (e.g. `tasmota_A1B2C3`).
/// - `full_topic` (default `%prefix%/%topic%/`): the device's FullTopic pattern; `%prefix%` becomes
///   the command, stat or tele prefix. Only `%prefix%` and `%topic%` are tokens here (discovery
///   fills in `%hostname%` and `%id%`). Without `%prefix%`, commands go to `<full topic>/<cmnd>/`
///   and the device's own messages come on the full topic itself, as the firmware does it.
/// - `prefixes` (default `["cmnd","stat","tele"]`): the device's `Prefix1`...`Prefix3`.
/// - `relays` (default 1): how many relays the device has. With 1, Tasmota names the relay `POWER`
///   (`POWER1` is accepted in results too); with more, `POWER1`...`POWER<n>`.
/// - `relay` (default 1): which relay (`POWER<n>`) this device entry switches. Settings with
///   several `relays` and no `relay` describe a power strip (`outlets(of:)`); a driver made from
///   them switches relay 1, as such settings always did.
/// - `energy_channel` (default 0): index into array-valued `ENERGY` fields of multi-channel meters.
/// - `state_text` (default `["OFF","ON","TOGGLE","HOLD"]`): the device's `StateText1`...`StateText4`;
///   the first two are its words for off and on in `POWER` states.
///
/// Discovery: the hub subscribes to `tasmota/discovery/+/config` (the retained announcement of
/// Tasmota 9 and later, which names topic, FullTopic, prefixes, relays, MAC, names and state
/// words) and to `tele/+/LWT` (older firmware: a last will saying `Online` is offered as
/// `{"topic":"<t>"}`; one whose device already announced itself is not offered again).
public struct TasmotaDriverFactory: DiscoveringDriverFactory {
    /// The driver name devices are registered with.
    public let name = "tasmota"

    /// How long a switch command may wait for the device's confirmation before it is reported as
    /// failed (`.commandFailed`). A confirmation arriving later is still reported as the state.
    let confirmationTimeout: Duration

    /// The last-will topics of devices that announced themselves on `tasmota/discovery/...`.
    let announced = TasmotaAnnouncements()

    /// A factory whose drivers wait 10 s for a switch's confirmation.
    public init() { self.confirmationTimeout = .seconds(10) }

    init(confirmationTimeout: Duration) { self.confirmationTimeout = confirmationTimeout }

    static let keys: Set<String> = ["topic", "full_topic", "prefixes", "relay", "relays", "energy_channel", "state_text"]

    /// A driver for one device from its settings.
    /// - Throws: A `DriverError` naming the setting that is missing, unknown or invalid.
    public func make(configuration: DriverConfiguration) throws -> any Driver {
        let settings = try TasmotaSettings(configuration)
        return TasmotaDriver(
            topics: settings.topics, energyChannel: settings.energyChannel, words: settings.words,
            confirmationTimeout: confirmationTimeout)
    }

    /// The outlets of a multi-relay device: settings with `relays` above 1 and no `relay` are a
    /// strip, one outlet per relay, each driven by the strip's settings plus `"relay": n` and
    /// `"energy_channel": n - 1` (the meter channel of relay n). nil for one device.
    /// - Throws: A `DriverError` naming the bad setting, as `make` does.
    public func outlets(of configuration: DriverConfiguration) throws -> [DriverOutlet]? {
        let settings = try TasmotaSettings(configuration)
        guard settings.topics.relays > 1, !settings.namesRelay, case .object(var members) = settings.object else { return nil }
        members.removeAll { $0.0 == "relay" || $0.0 == "energy_channel" }
        return (1...settings.topics.relays).map { n in
            let outlet = JSONValue.object(members + [("relay", .number(Double(n))), ("energy_channel", .number(Double(n - 1)))])
            return DriverOutlet(number: n, settingsJSON: outlet.serialized())
        }
    }

    /// The topics discovery listens on: the retained announcements and every device's last will.
    public var discoveryFilters: [String] { [TasmotaDiscovery.configFilter, "tele/+/LWT"] }

    /// The device an announcement (`tasmota/discovery/<MAC>/config`) or an `Online` last will
    /// (`tele/<t>/LWT`, for firmware without the announcement) describes; nil for anything else,
    /// for garbage, and for a last will of a device that announced itself.
    public func discover(_ message: DriverMQTTMessage) -> DiscoveredDevice? {
        if message.topic.hasPrefix("tasmota/discovery/") {
            let found = TasmotaDiscovery.announcement(message, driver: name)
            if let mac = TasmotaDiscovery.mac(inConfigTopic: message.topic) {
                announced.set(mac: mac, lwtTopic: found?.lwtTopic)
            }
            return found?.device
        }
        let levels = message.topic.split(separator: "/", omittingEmptySubsequences: false)
        guard levels.count == 3, levels[0] == "tele", levels[2] == "LWT" else { return nil }
        let topic = String(levels[1])
        guard !topic.isEmpty, TasmotaTopics.isValidTopic(topic), message.payload.count <= 64,
            TasmotaPayload.availability(message.text) == true, !announced.contains(lwtTopic: message.topic)
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

/// One device's settings, checked: what `make` and `outlets(of:)` both read.
struct TasmotaSettings {
    let topics: TasmotaTopics
    let energyChannel: Int
    let words: TasmotaStateText
    /// The settings name a `relay` (one relay of a multi-relay device), not the whole device.
    let namesRelay: Bool
    /// The settings object as given.
    let object: JSONValue

    init(_ configuration: DriverConfiguration) throws {
        let s = try DriverSettings(configuration, allowed: TasmotaDriverFactory.keys)
        let device = configuration.deviceId
        let topic = try s.string("topic")
        guard TasmotaTopics.isValidTopic(topic) else {
            throw DriverError(
                "tasmota setting \"topic\" of device \"\(device)\" must not contain '+', '#', NUL or empty levels (got \"\(topic)\")")
        }
        let fullTopic = try s.string("full_topic", default: TasmotaTopics.defaultFullTopic)
        if let problem = TasmotaTopics.problem(withFullTopic: fullTopic) {
            throw DriverError("tasmota setting \"full_topic\" of device \"\(device)\" \(problem) (got \"\(fullTopic)\")")
        }
        let prefixes: [String]
        do { prefixes = try s.reader.strings("prefixes") ?? TasmotaTopics.defaultPrefixes } catch { throw s.error(error) }
        guard prefixes.count == 3, prefixes.allSatisfy({ TasmotaTopics.isValidTopic($0) && $0.utf8.count <= 32 }) else {
            throw DriverError(
                "tasmota setting \"prefixes\" of device \"\(device)\" must be three topic levels (command, stat, tele) without '+', '#', NUL or empty levels, e.g. [\"cmnd\",\"stat\",\"tele\"]"
            )
        }
        let relays = try s.int("relays", default: 1, in: 1...32)
        let relay = try s.int("relay", default: 1, in: 1...32)
        guard relay <= relays else {
            throw DriverError("tasmota setting \"relay\" of device \"\(device)\" must be from 1 to \"relays\" (\(relays)), got \(relay)")
        }
        energyChannel = try s.int("energy_channel", default: 0, in: 0...31)
        let text: [String]
        do { text = try s.reader.strings("state_text") ?? TasmotaStateText.defaultWords } catch { throw s.error(error) }
        guard let words = TasmotaStateText(text) else {
            throw DriverError(
                "tasmota setting \"state_text\" of device \"\(device)\" must list 2 to 4 words (off, on, toggle, hold) of 1 to 32 characters, off and on different, e.g. [\"OFF\",\"ON\",\"TOGGLE\",\"HOLD\"]"
            )
        }
        self.words = words
        namesRelay = s.has("relay")
        object = s.reader.value
        topics = TasmotaTopics(topic: topic, fullTopic: fullTopic, prefixes: prefixes, relay: relay, relays: relays)
    }
}

/// The topics of one device, built from its FullTopic pattern and prefixes as the firmware does.
struct TasmotaTopics: Sendable, Equatable {
    static let defaultFullTopic = "%prefix%/%topic%/"
    static let defaultPrefixes = ["cmnd", "stat", "tele"]

    /// Which of the three prefixes.
    enum Prefix: Int, Sendable { case cmnd = 0, stat, tele }

    let topic: String
    let fullTopic: String
    let prefixes: [String]
    let relay: Int
    let relays: Int

    init(topic: String, fullTopic: String, prefixes: [String] = TasmotaTopics.defaultPrefixes, relay: Int, relays: Int) {
        self.topic = topic
        self.fullTopic = fullTopic
        self.prefixes = prefixes.count == 3 ? prefixes : Self.defaultPrefixes
        self.relay = relay
        self.relays = relays
    }

    /// `cmnd/<t>/`, `stat/<t>/`, `tele/<t>/` (always ending in `/`). A FullTopic without
    /// `%prefix%` gets `/%prefix%` appended for commands only (Tasmota's `GetTopic_P`), and `//`
    /// becomes `/`.
    func base(_ prefix: Prefix) -> String {
        var pattern = fullTopic
        if prefix == .cmnd && !pattern.contains("%prefix%") { pattern += "/%prefix%" }
        var s = pattern.replacingOccurrences(of: "%prefix%", with: prefixes[prefix.rawValue])
            .replacingOccurrences(of: "%topic%", with: topic)
        while s.contains("//") { s = s.replacingOccurrences(of: "//", with: "/") }
        if !s.hasSuffix("/") { s += "/" }
        return s
    }

    /// The filters the driver may use: its command, stat and tele levels (fewer when two coincide).
    var scope: [String] { unique([base(.cmnd), base(.stat), base(.tele)].map { $0 + "#" }) }
    /// The filters the driver subscribes to: the device's stat and tele levels.
    var subscriptions: [String] { unique([base(.stat), base(.tele)].map { $0 + "#" }) }

    /// The relay's command/result name: `POWER` for the only relay, else `POWER<n>`.
    var powerName: String { relays == 1 ? "POWER" : "POWER\(relay)" }
    /// Names accepted in results for this relay.
    var acceptedPowerNames: [String] { relay == 1 ? (relays == 1 ? ["POWER", "POWER1"] : ["POWER1", "POWER"]) : ["POWER\(relay)"] }

    var commandTopic: String { base(.cmnd) + powerName }
    var resultTopic: String { base(.stat) + "RESULT" }
    var statPowerTopics: [String] { acceptedPowerNames.map { base(.stat) + $0 } }
    var lwtTopic: String { base(.tele) + "LWT" }
    var stateTopic: String { base(.tele) + "STATE" }
    var sensorTopic: String { base(.tele) + "SENSOR" }

    private func unique(_ filters: [String]) -> [String] {
        var seen: Set<String> = []
        return filters.filter { seen.insert($0).inserted }
    }

    static func isValidTopic(_ topic: String) -> Bool {
        !topic.isEmpty && !topic.contains("+") && !topic.contains("#") && !topic.contains("\0")
            && !topic.split(separator: "/", omittingEmptySubsequences: false).contains(where: \.isEmpty)
            && topic.utf8.count <= 200
    }

    /// Why a FullTopic pattern is unusable, or nil. A leading `/` is allowed (`/%topic%/%prefix%/`
    /// is a real configuration); an empty level elsewhere is not.
    static func problem(withFullTopic pattern: String) -> String? {
        guard pattern.contains("%prefix%") || pattern.contains("%topic%") else { return "must contain %prefix% or %topic%" }
        let rest = pattern.replacingOccurrences(of: "%prefix%", with: "").replacingOccurrences(of: "%topic%", with: "")
        if rest.contains("%") { return "may use only the tokens %prefix% and %topic%" }
        if rest.contains("+") || rest.contains("#") || rest.contains("\0") { return "must not contain '+', '#' or NUL" }
        if pattern.utf8.count > 200 { return "must be at most 200 bytes" }
        var trimmed = Substring(pattern)
        if trimmed.hasPrefix("/") { trimmed = trimmed.dropFirst() }
        if trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        if trimmed.isEmpty || trimmed.split(separator: "/", omittingEmptySubsequences: false).contains(where: \.isEmpty) {
            return "must not contain empty levels ('//')"
        }
        return nil
    }
}
