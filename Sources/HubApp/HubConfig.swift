import Foundation
import HubDomain
import HubEngine
import HubHTTP
import HubLog
import HubMQTT
import HubPostgres
import Logging

/// The hub's configuration file (JSON). Every key is optional; unknown keys are errors, so a typo
/// is reported instead of silently ignored. Command-line flags override the file.
///
/// ```json
/// {
///   "mqtt": {"host": "127.0.0.1", "port": 1883, "client_id": "hub", "username": "hub",
///            "password_file": "/etc/hub/mqtt-password", "base_topic": "hub",
///            "discovery_prefix": "homeassistant", "attribution_client": "homeassistant", "keepalive": 30,
///            "tls": {"ca_file": "/etc/hub/ca.crt", "cert_file": null, "key_file": null, "insecure": false}},
///   "devices": [{"id": "lamp", "driver": "virtual", "name": "Desk lamp", "config": {}}],
///   "confirm_timeout_seconds": 5,
///   "observation_commit_delay_seconds": 10,
///   "activation_divergence": "restore",
///   "readings": {"power": {"deadband": 1, "relative": 0.02, "max_interval_seconds": 300}},
///   "log_level": "info",
///   "time_zone": "Europe/Lisbon",
///   "http": {"listen": "127.0.0.1:8080", "allowed_hosts": ["hub.home.arpa"], "idle_timeout_seconds": 30,
///            "body_timeout_seconds": 30, "max_connections": 256}
/// }
/// ```
public struct HubConfig: Sendable, Equatable {
    /// The broker connection's settings (the `[mqtt]` table).
    public typealias MQTT = MQTTSettings

    /// A device listed in the configuration file, registered at start when not registered yet.
    public struct Device: Sendable, Equatable {
        /// The device id.
        public var id: String
        /// The driver's name.
        public var driver: String
        /// The display name.
        public var name: String
        /// The driver configuration, a JSON object text.
        public var config: String

        /// A device; `config` defaults to the empty object.
        public init(id: String, driver: String, name: String, config: String = "{}") {
            self.id = id
            self.driver = driver
            self.name = name
            self.config = config
        }
    }

    /// The broker connection (the `[mqtt]` table).
    public var mqtt = MQTT()
    /// The devices registered at start.
    public var devices: [Device] = []
    /// How long a switch command waits for the driver's confirmation before it fails, in seconds.
    public var confirmTimeoutSeconds = 5.0
    /// What to do when a device's own activations differ from the log's: restore, adopt or report.
    public var activationDivergence: DivergencePolicy = .restore
    /// The beacon bridge's settings (a JSON object text), or nil when it is turned off (`"beacons": false`).
    public var beacons: String? = "{}"
    /// Per-quantity reading filter rules that replace the defaults.
    public var readingRules: [Quantity: ReadingFilter.Rule] = [:]
    /// The lowest level of diagnostics written (`log_level`; `--log-level` overrides it).
    public var logLevel: Logger.Level = .info
    /// Where to serve the API, the console, `/metrics`, `/healthz` and `/readyz` (`http.listen`;
    /// `--http` overrides it); nil: not served (`"http": false`, `--no-http`).
    public var http: HTTPSettings? = .standard
    /// `log`: the event log's PostgreSQL URL (`postgres://user@host:5432/database`); nil keeps the
    /// segment log in the data directory. `--log` overrides it.
    public var log: String?
    /// `instance`: this hub's name among several sharing the PostgreSQL `log` (hot standby: the
    /// one holding the lease is active); nil: the only hub. `--instance` overrides it.
    public var instance: String?
    /// `audit_head_seconds`: the shortest time between two signed tree heads (1 to 86400; default 300).
    public var auditHeadSeconds: Double = 300
    /// `lease_seconds`: how long the active's lease lasts unless renewed (1 to 60; default 3).
    public var leaseSeconds: Double = 3
    /// `time_zone`: the household's IANA time zone (`Europe/Lisbon`), in which the console shows
    /// and reads every time; nil: the system's (`TZ`, `/etc/localtime`).
    public var timeZone: String?
    /// `observation_commit_delay_seconds`: how long what drivers and bridges report (readings,
    /// sightings, availability) may wait for its sync, so that a household's few reports a minute
    /// share one `fdatasync` and one page (0 to 300; 0: every event is synced before the hub goes
    /// on; nil: ``defaultObservationCommitDelaySeconds(on:)`` for the data directory's disk).
    /// Commands are always synced before they are answered, and their sync carries the reports
    /// before them. `--observation-commit-delay` overrides it.
    public var observationCommitDelaySeconds: Double?

    /// The delay when none is set: 300 s on an SD card or eMMC (``StorageDevice/isMemoryCard``),
    /// where every write moment costs the card a journal commit and its pages; 10 s elsewhere.
    package static func defaultObservationCommitDelaySeconds(on device: StorageDevice?) -> Double {
        device?.isMemoryCard == true ? 300 : 10
    }

    /// The segment log's delay for observations with the data directory at `dataDirectory`: the
    /// one set, else the default for its disk.
    public func observationCommitDelay(dataDirectory: String) -> Duration {
        let seconds =
            observationCommitDelaySeconds
            ?? Self.defaultObservationCommitDelaySeconds(on: try? StorageDevice.holding(dataDirectory).get())
        return .milliseconds(Int64((seconds * 1000).rounded()))
    }

    /// The hot standby's settings when an `instance` is named; nil: the only hub, no lease.
    public var lease: LeaseSettings? {
        instance.map { LeaseSettings(instance: $0, ttl: .milliseconds(Int64(leaseSeconds * 1000))) }
    }

    /// How the driver host treats what drivers report.
    public var driverHostOptions: DriverHostOptions {
        DriverHostOptions(
            confirmTimeout: .milliseconds(Int64(confirmTimeoutSeconds * 1000)),
            divergencePolicy: activationDivergence, readingRules: readingRules)
    }

    /// The defaults: a local broker, no devices.
    public init() {}

    /// Why the configuration file was refused: the file and what is wrong in it.
    public struct Problem: Error, CustomStringConvertible {
        /// The file's path ("" when parsed from a value).
        public var file: String
        /// What is wrong, naming the field.
        public var message: String
        /// "<file>: <message>".
        public var description: String { "\(file): \(message)" }
    }

    /// Reads and parses the file at `path`.
    /// - Throws: `Problem` when it cannot be read, is not JSON, or a field is wrong.
    public static func load(path: String) throws -> HubConfig {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw Problem(file: path, message: "cannot be read")
        }
        let value: JSONValue
        do { value = try JSONValue.parse([UInt8](data)) } catch { throw Problem(file: path, message: "not valid JSON: \(error)") }
        do { return try parse(value) } catch let problem as Problem { throw Problem(file: path, message: problem.message) }
    }

    /// Parses a configuration value.
    /// - Throws: `Problem` (with no file) naming the wrong field.
    public static func parse(_ value: JSONValue) throws -> HubConfig {
        do { return try read(value) } catch let error as JSONFieldError { throw Problem(file: "", message: error.description) }
    }

    /// Reads the configuration with the shared strict reader (HubJSON's `JSONObjectReader`): every
    /// problem names the key's path (`mqtt.tls.cert_file`, `devices[2].id`).
    static func read(_ value: JSONValue) throws -> HubConfig {
        var config = HubConfig()
        let root = try JSONObjectReader(value)
        try root.allow([
            "mqtt", "devices", "confirm_timeout_seconds", "activation_divergence", "readings", "beacons", "log_level", "http", "log",
            "instance", "lease_seconds", "time_zone", "observation_commit_delay_seconds",
            "audit_head_seconds"
        ])
        if let zone = try root.string("time_zone") {
            guard TimeZone(identifier: zone) != nil else {
                throw root.invalid(
                    "time_zone",
                    "\"\(zone)\" is not a time zone this machine knows (an IANA name such as \"Europe/Lisbon\"; tzdata has them)")
            }
            config.timeZone = zone
        }
        if let instance = try root.string("instance") {
            if let problem = LeaseSettings.problem(instance: instance) { throw root.invalid("instance", problem) }
            config.instance = instance
        }
        if let seconds = try root.number("lease_seconds", in: 1...60) { config.leaseSeconds = seconds }
        if let seconds = try root.number("observation_commit_delay_seconds", in: 0...300) { config.observationCommitDelaySeconds = seconds }
        if let seconds = try root.number("audit_head_seconds", in: 1...86_400) { config.auditHeadSeconds = seconds }
        if let log = try root.string("log") {
            guard PostgresLocation.isURL(log) else {
                throw root.wrongType(
                    "log", "a postgres:// URL such as \"postgres://hub@db.example:5432/hub\", not \"\(PostgresLocation.masked(log))\"")
            }
            do { _ = try PostgresLocation(url: log) } catch { throw root.invalid("log", "\(error)") }
            config.log = log
        }
        if let level = try root.string("log_level") {
            guard let l = Logger.Level(rawValue: level) else {
                throw root.wrongType(
                    "log_level", "one of \(Logger.Level.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")), not \"\(level)\"")
            }
            config.logLevel = l
        }
        if case .bool(let on)? = root["http"] {
            guard !on else {
                throw root.wrongType("http", "false (no HTTP listener) or an object such as {\"listen\": \"127.0.0.1:8080\"}")
            }
            config.http = nil
        } else if let http = try root.object("http") {
            config.http = try readHTTP(http)
        }
        switch root["beacons"] {
        case nil: break
        case .bool(let on)?: config.beacons = on ? "{}" : nil
        case .object?: config.beacons = root["beacons"]!.serialized()
        default: throw root.wrongType("beacons", "false (off) or the beacon bridge's settings object")
        }
        if let policy = try root.string("activation_divergence") {
            guard let p = DivergencePolicy(name: policy) else {
                throw root.wrongType("activation_divergence", "\"restore\", \"adopt\" or \"report\", not \"\(policy)\"")
            }
            config.activationDivergence = p
        }
        if let readings = try root.object("readings") {
            try readings.allow(Quantity.allCases.map(\.rawValue))
            for quantity in Quantity.allCases {
                guard let q = try readings.object(quantity.rawValue) else { continue }
                try q.allow(["deadband", "relative", "max_interval_seconds"])
                let defaults = ReadingFilter.defaultRules[quantity]!
                let deadband = try q.number("deadband") ?? defaults.deadband
                guard deadband >= 0, deadband.isFinite else { throw q.wrongType("deadband", "a number of at least 0 \(quantity.unit)") }
                let relative = try q.number("relative") ?? defaults.relative
                guard relative >= 0, relative <= 1 else { throw q.wrongType("relative", "a fraction from 0 to 1 (0.02 = 2 %)") }
                let interval = try q.number("max_interval_seconds") ?? defaults.maxIntervalSeconds
                guard interval >= 1, interval <= 86_400 else { throw q.wrongType("max_interval_seconds", "between 1 and 86400") }
                config.readingRules[quantity] = ReadingFilter.Rule(deadband: deadband, relative: relative, maxIntervalSeconds: interval)
            }
        }
        if let timeout = try root.number("confirm_timeout_seconds") {
            guard timeout > 0, timeout <= 600 else { throw root.wrongType("confirm_timeout_seconds", "between 0 and 600 seconds") }
            config.confirmTimeoutSeconds = timeout
        }
        if let m = try root.object("mqtt") {
            try readMQTT(m, into: &config.mqtt)
        }
        if let devices = try root.objects("devices") {
            var seen = Set<String>()
            for d in devices {
                try d.allow(["id", "driver", "name", "config"])
                let id = try d.require("id", d.string)
                guard Identifier.isValid(id) else { throw d.invalid("id", "\"\(id)\" is not 1 to 64 of A-Z a-z 0-9 _ -") }
                guard seen.insert(id).inserted else { throw d.invalid("id", "\"\(id)\" is listed twice") }
                let driver = try d.require("driver", d.string)
                let settings = try d.object("config")?.value.serialized() ?? "{}"
                config.devices.append(Device(id: id, driver: driver, name: try d.string("name") ?? id, config: settings))
            }
        }
        return config
    }

    /// `http`: where to listen, which `Host` names to accept, the timeouts and the connection limit.
    static func readHTTP(_ http: JSONObjectReader) throws -> HTTPSettings {
        try http.allow(["listen", "allowed_hosts", "idle_timeout_seconds", "body_timeout_seconds", "max_connections"])
        var settings = HTTPSettings.standard
        if let listen = try http.string("listen") {
            do { settings = try HTTPSettings(parsing: listen) } catch { throw http.invalid("listen", "\(error)") }
        }
        for name in try http.strings("allowed_hosts") ?? [] {
            guard let host = HostCheck.configuredName(name) else {
                throw http.invalid(
                    "allowed_hosts",
                    "\"\(name)\" is not a host name or address (a name such as hub.home.arpa, without scheme, port or path)")
            }
            settings.allowedHosts.append(host)
        }
        if let seconds = try http.number("idle_timeout_seconds", in: 1...3600) {
            settings.idleTimeout = .milliseconds(Int64(seconds * 1000))
        }
        if let seconds = try http.number("body_timeout_seconds", in: 1...3600) {
            settings.bodyTimeout = .milliseconds(Int64(seconds * 1000))
        }
        if let limit = try http.integer("max_connections", in: 1...100_000) { settings.maxConnections = limit }
        return settings
    }

    static func readMQTT(_ m: JSONObjectReader, into mqtt: inout MQTT) throws {
        try m.allow([
            "enabled", "host", "port", "client_id", "username", "password", "password_file", "base_topic",
            "discovery_prefix", "attribution_client", "keepalive", "tls"
        ])
        if let v = try m.bool("enabled") { mqtt.enabled = v }
        if let v = try m.string("host") { mqtt.host = v }
        if let v = try m.integer("port", in: 1...65535) { mqtt.port = v }
        if let v = try m.string("client_id") { mqtt.clientId = v }
        mqtt.username = try m.string("username")
        mqtt.password = try m.string("password")
        if let file = try m.string("password_file") {
            guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
                throw m.invalid("password_file", "cannot read \(file)")
            }
            mqtt.password = text.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        if let v = try m.string("base_topic") {
            guard MQTTNames.isValidBase(v) else {
                throw m.wrongType("base_topic", "a topic without + or # and without leading or trailing /")
            }
            mqtt.baseTopic = v
        }
        if let v = try m.string("discovery_prefix") {
            guard MQTTNames.isValidBase(v) else { throw m.wrongType("discovery_prefix", "a topic without + or #") }
            mqtt.discoveryPrefix = v
        }
        if let v = try m.string("attribution_client") {
            if let refusal = ClientName.problem(v) { throw m.invalid("attribution_client", refusal.message) }
            mqtt.attributionClient = v
        }
        if let v = try m.integer("keepalive", in: 5...3600) { mqtt.keepAlive = v }
        if let t = try m.object("tls") {
            try t.allow(["ca_file", "cert_file", "key_file", "insecure"])
            mqtt.caFile = try t.string("ca_file")
            mqtt.certFile = try t.string("cert_file")
            mqtt.keyFile = try t.string("key_file")
            if let v = try t.bool("insecure") { mqtt.tlsInsecure = v }
            if (mqtt.certFile == nil) != (mqtt.keyFile == nil) {
                throw t.invalid("cert_file", "a client certificate needs both cert_file and key_file")
            }
        }
    }
}

/// Rules for topic names the operator configures.
