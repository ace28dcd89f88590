import DriverAPI

/// Makes drivers for Zigbee plugs and switches that Zigbee2MQTT bridges to the hub's broker: the
/// hub talks to Zigbee2MQTT's MQTT API, never to the Zigbee network.
///
/// Settings (JSON object; unknown keys are errors):
/// - `friendly_name` (required): the device's name in Zigbee2MQTT, used as is in its topics (it may
///   contain `/` and spaces: `living room/lamp plug`). Zigbee2MQTT's own rules apply: no `+` or `#`,
///   no control characters, no leading or trailing `/`, not ending in `/<digits>`.
/// - `base_topic` (default `zigbee2mqtt`): Zigbee2MQTT's `mqtt.base_topic`.
/// - `endpoint`: the gang of a multi-gang device this entry switches (`l1`, `l2`, `left`): the
///   driver then reads and writes `state_<endpoint>` (and `power_<endpoint>` ...).
/// - `endpoints`: a multi-gang device's gangs (`["l1","l2"]`): registering it registers one
///   outlet per gang (``outlets(of:)``), each with `endpoint` set. Not together with `endpoint`
///   or `readings`.
/// - `readings`: the meter values the device exposes (`power`, `voltage`, `current`, `energy`):
///   those are reported and declared (`DriverCapabilities.readings`). Absent: whichever of the
///   four a state message carries is reported, and none is declared.
/// - `home_assistant` (default `false`): whether the hub announces the device to Home Assistant.
///   Zigbee2MQTT announces its devices itself, so by default the hub does not, and a plug does not
///   appear twice.
///
/// Discovery reads the retained `zigbee2mqtt/bridge/devices` (the default base topic only): every
/// device whose `definition.exposes` has a switch with a `state` feature is offered.
public struct Zigbee2MQTTDriverFactory: DiscoveringDriverFactory {
    /// The driver name devices are registered with.
    public let name = "zigbee2mqtt"

    /// A factory.
    public init() {}

    /// The settings a device takes.
    public static let settingKeys: Set<String> = ["friendly_name", "base_topic", "endpoint", "endpoints", "readings", "home_assistant"]

    /// Zigbee2MQTT's default `mqtt.base_topic`.
    public static let defaultBaseTopic = "zigbee2mqtt"

    /// The quantities a Zigbee2MQTT plug may expose, with the exposed name of each (energy in kWh).
    static let meterQuantities: [Quantity] = [.power, .voltage, .current, .energy]

    /// A driver for one device (or one gang) from its settings.
    /// - Throws: A `DriverError` naming the setting that is missing, unknown or invalid.
    public func make(configuration: DriverConfiguration) throws -> any Driver {
        let settings = try Self.read(configuration)
        if !settings.endpoints.isEmpty {
            throw DriverError(
                "zigbee2mqtt settings of device \"\(configuration.deviceId)\" name the gangs \(settings.endpoints) of a multi-gang device: register it whole (the hub registers one device per gang), or give one \"endpoint\""
            )
        }
        return Zigbee2MQTTDriver(config: settings.driverConfig)
    }

    /// One outlet per gang when the settings list `endpoints`, each driven with `endpoint` set.
    /// - Returns: The outlets in the listed order, or nil for a one-gang device.
    /// - Throws: A `DriverError` naming the bad setting.
    public func outlets(of configuration: DriverConfiguration) throws -> [DriverOutlet]? {
        let settings = try Self.read(configuration)
        guard !settings.endpoints.isEmpty else { return nil }
        return settings.endpoints.enumerated().map { index, endpoint in
            var fields: [(String, JSONValue)] = [("friendly_name", .string(settings.friendlyName))]
            if settings.baseTopic != Self.defaultBaseTopic { fields.append(("base_topic", .string(settings.baseTopic))) }
            fields.append(("endpoint", .string(endpoint)))
            if settings.homeAssistant { fields.append(("home_assistant", .bool(true))) }
            return DriverOutlet(number: index + 1, name: nil, settingsJSON: JSONValue.object(fields).serialized())
        }
    }

    /// The settings of one registration, checked.
    struct Settings {
        var friendlyName: String
        var baseTopic: String
        var endpoint: String?
        var endpoints: [String]
        var readings: [Quantity]?
        var homeAssistant: Bool

        var driverConfig: Zigbee2MQTTConfig {
            Zigbee2MQTTConfig(
                friendlyName: friendlyName, baseTopic: baseTopic, endpoint: endpoint, readings: readings, homeAssistant: homeAssistant)
        }
    }

    static func read(_ configuration: DriverConfiguration) throws -> Settings {
        let s = try DriverSettings(configuration, allowed: settingKeys)
        let device = configuration.deviceId
        func bad(_ key: String, _ what: String) -> DriverError {
            DriverError("zigbee2mqtt setting \"\(key)\" of device \"\(device)\" \(what)")
        }
        // Read untrimmed: the name is the topic, byte for byte.
        let raw: String?
        do { raw = try s.reader.string("friendly_name") } catch { throw s.error(error) }
        guard let friendlyName = raw else { throw s.error(JSONFieldError(path: "friendly_name", kind: .missing)) }
        if let problem = friendlyNameProblem(friendlyName) {
            throw bad("friendly_name", "\(problem) (got \"\(friendlyName)\")")
        }
        let baseTopic = try s.string("base_topic", default: defaultBaseTopic)
        if let problem = baseTopicProblem(baseTopic) {
            throw bad("base_topic", "\(problem) (got \"\(baseTopic)\")")
        }
        var endpoint: String?
        if s.has("endpoint") {
            let e = try s.string("endpoint")
            guard isValidEndpoint(e) else {
                throw bad("endpoint", "must be an endpoint name of letters, digits and _ (l1, left), got \"\(e)\"")
            }
            endpoint = e
        }
        var endpoints: [String] = []
        do { endpoints = try s.reader.strings("endpoints") ?? [] } catch { throw s.error(error) }
        if s.has("endpoints") {
            guard (2...16).contains(endpoints.count) else { throw bad("endpoints", "must list 2 to 16 endpoints, got \(endpoints.count)") }
            for e in endpoints where !isValidEndpoint(e) {
                throw bad("endpoints", "must list endpoint names of letters, digits and _ (l1, left), got \"\(e)\"")
            }
            guard Set(endpoints).count == endpoints.count else { throw bad("endpoints", "lists an endpoint twice (\(endpoints))") }
            if endpoint != nil { throw bad("endpoints", "cannot be given with \"endpoint\"") }
            if s.has("readings") { throw bad("readings", "cannot be given with \"endpoints\": each gang reads its own") }
        }
        var readings: [Quantity]?
        if s.has("readings") {
            let names: [String]
            do { names = try s.reader.strings("readings") ?? [] } catch { throw s.error(error) }
            var picked = Set<Quantity>()
            for n in names {
                guard let q = meterQuantities.first(where: { $0.rawValue == n }) else {
                    throw bad("readings", "must list quantities of power, voltage, current, energy; got \"\(n)\"")
                }
                picked.insert(q)
            }
            readings = meterQuantities.filter(picked.contains)
        }
        let homeAssistant = try s.bool("home_assistant", default: false)
        return Settings(
            friendlyName: friendlyName, baseTopic: baseTopic, endpoint: endpoint, endpoints: endpoints, readings: readings,
            homeAssistant: homeAssistant)
    }

    // MARK: - Discovery

    /// The retained device list of a Zigbee2MQTT bridge on the default base topic.
    public var discoveryFilters: [String] { ["\(Self.defaultBaseTopic)/bridge/devices"] }

    /// The first device `bridge/devices` offers (see ``discoverAll(_:)``).
    public func discover(_ message: DriverMQTTMessage) -> DiscoveredDevice? { discoverAll(message).first }

    /// Every switchable device in a `bridge/devices` list: each device whose `definition.exposes`
    /// has a `switch` with a `state` feature. A device with two or more switch endpoints is offered
    /// with `endpoints` (one outlet each); one with a meter with the `readings` its exposes name
    /// (power in W, voltage in V, current in A, energy in kWh). The coordinator, disabled devices,
    /// devices not yet interviewed (no definition) and anything without a switch are not offered.
    public func discoverAll(_ message: DriverMQTTMessage) -> [DiscoveredDevice] {
        guard message.topic == discoveryFilters[0], message.payload.count <= Zigbee2MQTTPayload.maxDeviceListBytes,
            let list = try? JSONValue.parse(message.payload), let devices = list.arrayValue
        else { return [] }
        var out: [DiscoveredDevice] = []
        var ids = Set<String>()
        for device in devices.prefix(2000) {
            guard let offer = Self.offer(device) else { continue }
            // Two names that map to one hub id: the later one gets the IEEE address appended.
            var id = offer.suggestedId
            if ids.contains(id), let hw = offer.hardwareId { id = Self.hubId("\(id)-\(hw)") }
            guard ids.insert(id).inserted else { continue }
            var d = offer
            d.suggestedId = id
            out.append(d)
        }
        return out
    }

    /// The offer for one entry of `bridge/devices`, nil when it is not a switch.
    static func offer(_ device: JSONValue) -> DiscoveredDevice? {
        guard case .object = device,
            device["type"]?.stringValue != "Coordinator",
            device["disabled"]?.boolValue != true,
            let name = device["friendly_name"]?.stringValue, friendlyNameProblem(name) == nil,
            let definition = device["definition"], case .object = definition,
            let exposes = definition["exposes"]?.arrayValue
        else { return nil }
        let found = Zigbee2MQTTExposes(exposes)
        guard found.hasPlainSwitch || !found.switchEndpoints.isEmpty else { return nil }
        var fields: [(String, JSONValue)] = [("friendly_name", .string(name))]
        if found.switchEndpoints.count >= 2 {
            fields.append(("endpoints", .array(found.switchEndpoints.map { .string($0) })))
        } else {
            let endpoint = found.hasPlainSwitch ? nil : found.switchEndpoints.first
            if let endpoint { fields.append(("endpoint", .string(endpoint))) }
            let readings = meterQuantities.filter { found.meters[endpoint ?? ""]?.contains($0) == true }
            if !readings.isEmpty { fields.append(("readings", .array(readings.map { .string($0.rawValue) }))) }
        }
        let ieee = device["ieee_address"]?.stringValue.flatMap { $0.isEmpty || $0.count > 64 ? nil : $0.lowercased() }
        var title = name
        if let vendor = definition["vendor"]?.stringValue, let model = definition["model"]?.stringValue,
            vendor.count <= 64, model.count <= 64
        {
            title += " (\(vendor) \(model))"
        }
        return DiscoveredDevice(
            suggestedId: hubId(name), driver: "zigbee2mqtt", name: title, settingsJSON: JSONValue.object(fields).serialized(),
            hardwareId: ieee)
    }

    // MARK: - Rules

    /// Why Zigbee2MQTT itself would refuse this friendly name (its `validateFriendlyName`), nil when it is valid.
    static func friendlyNameProblem(_ name: String) -> String? {
        if name.isEmpty { return "must not be empty" }
        if name.utf8.count > 200 { return "must be at most 200 bytes" }
        if name.hasPrefix("/") || name.hasSuffix("/") { return "must not start or end with /" }
        if name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) { return "must not contain control characters" }
        if name.contains("+") || name.contains("#") { return "must not contain the MQTT wildcards + and #" }
        if let slash = name.lastIndex(of: "/"), name[name.index(after: slash)...].allSatisfy({ $0.isASCII && $0.isNumber }) {
            return "must not end with /<digits> (Zigbee2MQTT reads that as an endpoint)"
        }
        if name.split(separator: "/", omittingEmptySubsequences: false).contains(where: \.isEmpty) {
            return "must not contain empty topic levels (//)"
        }
        return nil
    }

    /// Why a base topic is unusable, nil when it is fine.
    static func baseTopicProblem(_ base: String) -> String? {
        if base.utf8.count > 200 { return "must be at most 200 bytes" }
        if base.contains("+") || base.contains("#") || base.unicodeScalars.contains(where: { $0.value < 0x20 }) {
            return "must not contain +, # or control characters"
        }
        if base.split(separator: "/", omittingEmptySubsequences: false).contains(where: \.isEmpty) {
            return "must not start or end with / or contain empty levels"
        }
        return nil
    }

    /// An endpoint name as Zigbee2MQTT writes it in `state_<endpoint>`: 1 to 32 of `[A-Za-z0-9_]`.
    static func isValidEndpoint(_ e: String) -> Bool {
        !e.isEmpty && e.count <= 32 && e.unicodeScalars.allSatisfy { $0.isASCII && (ASCIIText.isAlphanumeric($0) || $0 == "_") }
    }

    /// A valid hub id (1 to 64 of A-Z a-z 0-9 _ -) made from a friendly name: other characters (`/`,
    /// spaces) become `-`.
    static func hubId(_ name: String) -> String {
        let mapped = String(
            name.unicodeScalars.map { c -> Character in
                ASCIIText.isAlphanumeric(c) || c == "_" || c == "-" ? Character(c) : "-"
            }.prefix(64))
        return mapped.isEmpty ? "zigbee" : mapped
    }
}

/// ASCII letters and digits (without Foundation).
enum ASCIIText {
    static func isAlphanumeric(_ c: Unicode.Scalar) -> Bool {
        (c >= "a" && c <= "z") || (c >= "A" && c <= "Z") || (c >= "0" && c <= "9")
    }
}

/// What a device's `definition.exposes` offers: a switch without an endpoint, switches on named
/// endpoints, and meter values by endpoint ("" for none) in the hub's quantities, only where the
/// unit is the one the driver converts from (W, V, A, kWh: a battery's `voltage` in mV is no mains voltage).
struct Zigbee2MQTTExposes {
    var hasPlainSwitch = false
    var switchEndpoints: [String] = []
    var meters: [String: Set<Quantity>] = [:]

    init(_ exposes: [JSONValue]) {
        for expose in exposes.prefix(500) {
            guard case .object = expose, let type = expose["type"]?.stringValue else { continue }
            let endpoint = expose["endpoint"]?.stringValue
            if type == "switch" {
                guard let features = expose["features"]?.arrayValue else { continue }
                for feature in features {
                    guard feature["name"]?.stringValue == "state" else { continue }
                    let e = feature["endpoint"]?.stringValue ?? endpoint
                    if let e {
                        if Zigbee2MQTTDriverFactory.isValidEndpoint(e), !switchEndpoints.contains(e) { switchEndpoints.append(e) }
                    } else {
                        hasPlainSwitch = true
                    }
                }
            } else if type == "numeric", let name = expose["name"]?.stringValue {
                let unit = expose["unit"]?.stringValue
                let quantity: Quantity?
                switch (name, unit) {
                case ("power", "W"): quantity = .power
                case ("voltage", "V"): quantity = .voltage
                case ("current", "A"): quantity = .current
                case ("energy", "kWh"): quantity = .energy
                default: quantity = nil
                }
                if let quantity { meters[endpoint ?? "", default: []].insert(quantity) }
            }
        }
    }
}
