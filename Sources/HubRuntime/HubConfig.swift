import Foundation
import HubDomain

/// The hub's configuration file (JSON). Every key is optional; unknown keys are errors, so a typo
/// is reported instead of silently ignored. Command-line flags override the file.
///
/// ```json
/// {
///   "mqtt": {"host": "127.0.0.1", "port": 1883, "client_id": "hub", "username": "hub",
///            "password_file": "/etc/hub/mqtt-password", "base_topic": "hub",
///            "discovery_prefix": "homeassistant", "keepalive": 30,
///            "tls": {"ca_file": "/etc/hub/ca.crt", "cert_file": null, "key_file": null, "insecure": false}},
///   "devices": [{"id": "lamp", "driver": "virtual", "name": "Desk lamp", "config": {}}],
///   "confirm_timeout_seconds": 5,
///   "activation_divergence": "restore",
///   "readings": {"power": {"deadband": 1, "relative": 0.02, "max_interval_seconds": 300}}
/// }
/// ```
public struct HubConfig: Sendable, Equatable {
    public struct MQTT: Sendable, Equatable {
        public var enabled = true
        public var host = "127.0.0.1"
        public var port = 1883
        public var clientId = "hub"
        public var username: String?
        public var password: String?
        public var baseTopic = "hub"
        public var discoveryPrefix = "homeassistant"
        public var keepAlive = 30
        public var caFile: String?
        public var certFile: String?
        public var keyFile: String?
        public var tlsInsecure = false
        public init() {}
    }

    public struct Device: Sendable, Equatable {
        public var id: String
        public var driver: String
        public var name: String
        public var config: String

        public init(id: String, driver: String, name: String, config: String = "{}") {
            self.id = id
            self.driver = driver
            self.name = name
            self.config = config
        }
    }

    public var mqtt = MQTT()
    public var devices: [Device] = []
    public var confirmTimeoutSeconds = 5.0
    /// What to do when a device's own activations differ from the log's: restore, adopt or report.
    public var activationDivergence: DivergencePolicy = .restore
    /// The beacon bridge's settings (a JSON object text), or nil when it is turned off (`"beacons": false`).
    public var beacons: String? = "{}"
    /// Per-quantity reading filter rules that replace the defaults.
    public var readingRules: [Quantity: ReadingFilter.Rule] = [:]

    /// How the driver host treats what drivers report.
    public var driverHostOptions: DriverHostOptions {
        DriverHostOptions(confirmTimeout: .milliseconds(Int64(confirmTimeoutSeconds * 1000)),
                          divergencePolicy: activationDivergence, readingRules: readingRules)
    }

    public init() {}

    public struct Problem: Error, CustomStringConvertible {
        public var file: String
        public var message: String
        public var description: String { "\(file): \(message)" }
    }

    public static func load(path: String) throws -> HubConfig {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw Problem(file: path, message: "cannot be read")
        }
        let value: JSONValue
        do { value = try JSONValue.parse([UInt8](data)) } catch { throw Problem(file: path, message: "not valid JSON: \(error)") }
        do { return try parse(value) } catch let problem as Problem { throw Problem(file: path, message: problem.message) }
    }

    public static func parse(_ value: JSONValue) throws -> HubConfig {
        var config = HubConfig()
        let root = try Reader(value, path: "")
        try root.allow(["mqtt", "devices", "confirm_timeout_seconds", "activation_divergence", "readings", "beacons"])
        switch value["beacons"] {
        case nil, .null?: break
        case .bool(let on)?: config.beacons = on ? "{}" : nil
        case .object?: config.beacons = value["beacons"]!.serialized()
        default: throw root.problem("beacons", "must be false (off) or the beacon bridge's settings object")
        }
        if let policy = try root.string("activation_divergence") {
            guard let p = DivergencePolicy(name: policy) else {
                throw root.problem("activation_divergence", "must be \"restore\", \"adopt\" or \"report\", not \"\(policy)\"")
            }
            config.activationDivergence = p
        }
        if let readingsValue = value["readings"] {
            let r = try Reader(readingsValue, path: "readings.")
            try r.allow(Set(Quantity.allCases.map(\.rawValue)))
            for quantity in Quantity.allCases {
                guard let ruleValue = readingsValue[quantity.rawValue] else { continue }
                let q = try Reader(ruleValue, path: "readings.\(quantity.rawValue).")
                try q.allow(["deadband", "relative", "max_interval_seconds"])
                let defaults = ReadingFilter.defaultRules[quantity]!
                let deadband = try q.number("deadband") ?? defaults.deadband
                guard deadband >= 0, deadband.isFinite else { throw q.problem("deadband", "must be a number of at least 0 \(quantity.unit)") }
                let relative = try q.number("relative") ?? defaults.relative
                guard relative >= 0, relative <= 1 else { throw q.problem("relative", "must be a fraction from 0 to 1 (0.02 = 2 %)") }
                let interval = try q.number("max_interval_seconds") ?? defaults.maxIntervalSeconds
                guard interval >= 1, interval <= 86_400 else { throw q.problem("max_interval_seconds", "must be between 1 and 86400") }
                config.readingRules[quantity] = ReadingFilter.Rule(deadband: deadband, relative: relative, maxIntervalSeconds: interval)
            }
        }
        if let timeout = try root.number("confirm_timeout_seconds") {
            guard timeout > 0, timeout <= 600 else { throw root.problem("confirm_timeout_seconds", "must be between 0 and 600 seconds") }
            config.confirmTimeoutSeconds = timeout
        }
        if let mqttValue = value["mqtt"] {
            let m = try Reader(mqttValue, path: "mqtt.")
            try m.allow(["enabled", "host", "port", "client_id", "username", "password", "password_file", "base_topic",
                         "discovery_prefix", "keepalive", "tls"])
            if let v = try m.bool("enabled") { config.mqtt.enabled = v }
            if let v = try m.string("host") { config.mqtt.host = v }
            if let v = try m.integer("port", in: 1...65535) { config.mqtt.port = v }
            if let v = try m.string("client_id") { config.mqtt.clientId = v }
            config.mqtt.username = try m.string("username")
            config.mqtt.password = try m.string("password")
            if let file = try m.string("password_file") {
                guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
                    throw m.problem("password_file", "cannot read \(file)")
                }
                config.mqtt.password = text.trimmingCharacters(in: .whitespacesAndNewlines)
            }
            if let v = try m.string("base_topic") {
                guard MQTTNames.isValidBase(v) else { throw m.problem("base_topic", "must be a topic without + or # and without leading or trailing /") }
                config.mqtt.baseTopic = v
            }
            if let v = try m.string("discovery_prefix") {
                guard MQTTNames.isValidBase(v) else { throw m.problem("discovery_prefix", "must be a topic without + or #") }
                config.mqtt.discoveryPrefix = v
            }
            if let v = try m.integer("keepalive", in: 5...3600) { config.mqtt.keepAlive = v }
            if let tlsValue = mqttValue["tls"] {
                let t = try Reader(tlsValue, path: "mqtt.tls.")
                try t.allow(["ca_file", "cert_file", "key_file", "insecure"])
                config.mqtt.caFile = try t.string("ca_file")
                config.mqtt.certFile = try t.string("cert_file")
                config.mqtt.keyFile = try t.string("key_file")
                if let v = try t.bool("insecure") { config.mqtt.tlsInsecure = v }
                if (config.mqtt.certFile == nil) != (config.mqtt.keyFile == nil) {
                    throw t.problem("cert_file", "a client certificate needs both cert_file and key_file")
                }
            }
        }
        if let devicesValue = value["devices"] {
            guard case .array(let items) = devicesValue else { throw root.problem("devices", "must be a list") }
            var seen = Set<String>()
            for (index, item) in items.enumerated() {
                let d = try Reader(item, path: "devices[\(index)].")
                try d.allow(["id", "driver", "name", "config"])
                guard let id = try d.string("id") else { throw d.problem("id", "is required") }
                guard Identifier.isValid(id) else { throw d.problem("id", "\"\(id)\" is not 1 to 64 of A-Z a-z 0-9 _ -") }
                guard seen.insert(id).inserted else { throw d.problem("id", "\"\(id)\" is listed twice") }
                guard let driver = try d.string("driver") else { throw d.problem("driver", "is required") }
                let settings: String
                switch item["config"] {
                case nil, .null?: settings = "{}"
                case .object?: settings = item["config"]!.serialized()
                default: throw d.problem("config", "must be a JSON object")
                }
                config.devices.append(Device(id: id, driver: driver, name: try d.string("name") ?? id, config: settings))
            }
        }
        return config
    }

    /// Typed access to one JSON object, with problems that name the key's path.
    struct Reader {
        let value: JSONValue
        let path: String
        init(_ value: JSONValue, path: String) throws {
            guard case .object = value else {
                throw Problem(file: "", message: path.isEmpty ? "the top level must be a JSON object" : "\(path.dropLast()) must be a JSON object")
            }
            self.value = value
            self.path = path
        }
        func problem(_ key: String, _ message: String) -> Problem { Problem(file: "", message: "\(path)\(key) \(message)") }
        func allow(_ keys: Set<String>) throws {
            guard case .object(let fields) = value else { return }
            for (key, _) in fields where !keys.contains(key) {
                throw Problem(file: "", message: "unknown key \(path)\(key) (known: \(keys.sorted().joined(separator: ", ")))")
            }
        }
        func string(_ key: String) throws -> String? {
            switch value[key] {
            case nil, .null?: return nil
            case .string(let s)?: return s
            default: throw problem(key, "must be a string")
            }
        }
        func bool(_ key: String) throws -> Bool? {
            switch value[key] {
            case nil, .null?: return nil
            case .bool(let b)?: return b
            default: throw problem(key, "must be true or false")
            }
        }
        func number(_ key: String) throws -> Double? {
            switch value[key] {
            case nil, .null?: return nil
            case .number(let d)?: return d
            default: throw problem(key, "must be a number")
            }
        }
        func integer(_ key: String, in range: ClosedRange<Int>) throws -> Int? {
            guard let d = try number(key) else { return nil }
            guard d.rounded() == d, d >= Double(range.lowerBound), d <= Double(range.upperBound) else {
                throw problem(key, "must be a whole number from \(range.lowerBound) to \(range.upperBound)")
            }
            return Int(d)
        }
    }
}

/// Rules for topic names the operator configures.
public enum MQTTNames {
    public static func isValidBase(_ topic: String) -> Bool {
        !topic.isEmpty && !topic.contains("+") && !topic.contains("#") && !topic.hasPrefix("/") && !topic.hasSuffix("/")
            && !topic.contains("//") && !topic.unicodeScalars.contains { $0.value == 0 }
    }
}
