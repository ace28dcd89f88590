import DriverAPI
import Foundation

/// Makes drivers for Shelly relays and plugs that talk MQTT to the hub's broker.
///
/// Settings (JSON object; unknown keys are errors):
/// - `id` (required): Gen1 the device id under `shellies/` (e.g. `shellyplug-s-7AB1C2`); Gen2 and
///   later the MQTT topic prefix (by default the device id, e.g. `shellyplus1pm-441793ab3fb4`; a
///   custom one may have several levels, e.g. `shellies/plus1pm`).
/// - `gen`: 1, or 2 (default; Gen3 and Gen4 speak the Gen2 protocol, `3` and `4` are accepted as 2).
/// - `channel`: the relay / component index (default 0).
/// - `component` (Gen2+): what the entry reads, `switch` (a relay), or a meter without a relay:
///   `pm1` (PM Mini), `em1` (EM Gen3, EM Mini Gen4, Pro 3EM monophase), `em` (Pro 3EM triphase).
///   Default: the one the model of a default id has (`shellypmminig3-...` reads `pm1`), else `switch`.
/// - `meter`: whether the relay has a power meter; default from the model of a default id
///   (`shellyplus1-...` has none, `shellyplus1pm-...` has one), else `true`.
/// - `channels`: a multi-relay device (Pro 4PM: 4) registered as one outlet per relay (`outlets(of:)`).
///
/// Discovery: Gen1 devices answer `announce` on `shellies/announce`; Gen2/Gen3 devices publish a
/// retained `<id>/online` `true`. The settings offered say what the model has (`ShellyModel`).
public struct ShellyDriverFactory: DiscoveringDriverFactory {
    /// The driver name devices are registered with.
    public let name = "shelly"

    /// A factory.
    public init() {}

    /// The settings a Shelly device takes: `id`, `gen`, `channel`, `component`, `meter` and `channels`.
    public static let settingKeys: Set<String> = ["id", "gen", "channel", "component", "meter", "channels"]

    /// A driver for one device from its settings.
    /// - Throws: A `DriverError` naming the setting that is missing, unknown or invalid.
    public func make(configuration: DriverConfiguration) throws -> any Driver {
        ShellyDriver(config: try Self.config(configuration).config)
    }

    /// The outlets of a multi-relay device (`channels` 2 or more, e.g. `{"id":"shellypro4pm-...","channels":4}`):
    /// one per relay, numbered from 1, driven by the same settings with `channel` n-1 and without
    /// `channels`. nil for one relay (no `channels`, or 1).
    /// - Throws: A `DriverError` for bad settings, `channel` given beside `channels`, or `channels`
    ///   on a meter without a relay.
    public func outlets(of configuration: DriverConfiguration) throws -> [DriverOutlet]? {
        let (config, channels, settings) = try Self.config(configuration)
        guard channels > 1 else { return nil }
        let subject = "shelly setting \"channels\" of device \"\(configuration.deviceId)\""
        guard config.component.switchable else {
            throw DriverError(
                "\(subject) makes an outlet of each relay, but component \(config.component.rawValue) has no relay (give \"channel\" to read one meter channel)"
            )
        }
        guard !settings.has("channel") else {
            throw DriverError(
                "\(subject) makes an outlet of each relay: give either \"channel\" (one relay) or \"channels\" (all of them), not both")
        }
        guard var object = try? JSONValue.parse(Array(configuration.settingsJSON.utf8)), case .object = object else {
            throw DriverError("shelly settings of device \"\(configuration.deviceId)\" must be a JSON object")
        }
        object["channels"] = nil
        return (1...channels).map { n in
            var outlet = object
            outlet["channel"] = .number(Double(n - 1))
            return DriverOutlet(number: n, settingsJSON: outlet.sortingKeys().serialized())
        }
    }

    /// Reads and checks the settings.
    /// - Returns: The driver's configuration, the `channels` setting, and the settings read.
    static func config(_ configuration: DriverConfiguration) throws -> (config: ShellyDriverConfig, channels: Int, settings: DriverSettings)
    {
        let s = try DriverSettings(configuration, allowed: Self.settingKeys)
        let device = configuration.deviceId
        let id = try s.string("id")
        guard Self.isValidTopicPrefix(id) else {
            throw DriverError(
                "shelly setting \"id\" of device \"\(device)\" must be the device's id or MQTT topic prefix: one or more topic levels joined by /, none empty, without + or # (e.g. \"shellyplug-s-7AB1C2\", \"shellyplus1pm-441793ab3fb4\" or \"shellies/plus1pm\"), got \"\(id)\""
            )
        }
        let gen = try s.int("gen", default: 2, in: 1...4)
        let channel = try s.int("channel", default: 0, in: 0...15)
        let channels = try s.int("channels", default: 1, in: 1...16)
        let model = ShellyModel.byDeviceId(id)
        var component = model?.component ?? .switch
        if s.has("component") {
            let text = try s.string("component")
            guard let named = ShellyComponent(rawValue: text.lowercased()) else {
                let known = ShellyComponent.allCases.map(\.rawValue).joined(separator: ", ")
                throw DriverError("shelly setting \"component\" of device \"\(device)\" must be one of \(known), got \"\(text)\"")
            }
            component = named
        }
        if gen == 1 && component != .switch {
            throw DriverError(
                "shelly setting \"component\" of device \"\(device)\" must be switch for a Gen1 device (gen 1 reads shellies/<id>/relay/<n>), got \(component.rawValue)"
            )
        }
        var meter = component != .switch || model.map { $0.component != .switch || $0.meter } ?? true
        if s.has("meter") {
            meter = try s.bool("meter", default: true)
            if !meter && component != .switch {
                throw DriverError(
                    "shelly setting \"meter\" of device \"\(device)\" cannot be false for component \(component.rawValue), which is a meter"
                )
            }
        }
        let config = ShellyDriverConfig(
            id: id, generation: gen == 1 ? .gen1 : .gen2, channel: channel, component: component, meter: meter)
        return (config, channels, s)
    }

    /// The topic filters a configured device needs (its `capabilities.mqttScope`).
    public static func mqttScope(id: String, gen: Int) -> [String] {
        gen == 1 ? ["shellies/\(id)/#"] : ["\(id)/#", "\(ShellyDriverConfig.replyRoot)/\(id)/#"]
    }

    // MARK: - Discovery

    /// The topics discovery listens on: Gen1 announcements and Gen2/Gen3 `online` messages.
    public var discoveryFilters: [String] { ["shellies/announce", "+/online"] }

    /// Gen1 devices announce themselves when asked on `shellies/command`.
    public var discoveryProbes: [DriverMQTTMessage] { [DriverMQTTMessage(topic: "shellies/command", payload: Array("announce".utf8))] }

    /// The device a discovery message describes, nil when it describes none.
    public func discover(_ message: DriverMQTTMessage) -> DiscoveredDevice? {
        if message.topic == "shellies/announce" { return discoverGen1(message.payload) }
        let levels = message.topic.split(separator: "/", omittingEmptySubsequences: false)
        guard levels.count == 2, levels[1] == "online" else { return nil }
        return discoverGen2(prefix: String(levels[0]), payload: message.payload)
    }

    /// `{"id":"shellyplug-s-7AB1C2","model":"SHPLG-S","mac":"A4CF127AB1C2","ip":"...","new_fw":false,"fw_ver":"..."}`
    private func discoverGen1(_ payload: [UInt8]) -> DiscoveredDevice? {
        guard let json = ShellyPayload.object(payload),
            let id = json["id"]?.stringValue?.trimmingCharacters(in: .whitespacesAndNewlines),
            Self.isValidTopicId(id)
        else { return nil }
        let model = json["model"]?.stringValue.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) } ?? ""
        let mac = Self.normalizedMAC(json["mac"]?.stringValue)
        let ip = json["ip"]?.stringValue.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) } ?? ""
        var name = "Shelly \(model.isEmpty ? id : "\(model) \(id)")"
        if !ip.isEmpty && ip.count <= 64 { name += " at \(ip)" }
        return DiscoveredDevice(
            suggestedId: Self.hubId(id), driver: self.name, name: name,
            settingsJSON: Self.settingsJSON(id: id, gen: 1, model: ShellyModel.byModelNumber(model) ?? ShellyModel.byDeviceId(id)),
            hardwareId: mac ?? id)
    }

    /// `<id>/online` = `true` from a device whose id starts with "shelly".
    private func discoverGen2(prefix: String, payload: [UInt8]) -> DiscoveredDevice? {
        let lower = prefix.lowercased()
        guard lower.hasPrefix("shelly"), lower != "shellies", Self.isValidTopicId(prefix),
            ShellyPayload.bool(word: ShellyPayload.word(payload)) == true
        else { return nil }
        // The default prefix ends with the MAC: shellyplus1pm-441793ab3fb4.
        let suffix = prefix.split(separator: "-").last.map(String.init) ?? ""
        return DiscoveredDevice(
            suggestedId: Self.hubId(prefix), driver: name, name: "Shelly \(prefix)",
            settingsJSON: Self.settingsJSON(id: prefix, gen: 2, model: ShellyModel.byDeviceId(prefix)),
            hardwareId: Self.normalizedMAC(suffix) ?? prefix)
    }

    // MARK: - Helpers

    /// One or more topic levels joined by `/` (a custom prefix such as `shellies/plus1pm`), none
    /// empty, each printable and without wildcards; at most 128 characters.
    static func isValidTopicPrefix(_ prefix: String) -> Bool {
        prefix.count <= 128 && prefix.split(separator: "/", omittingEmptySubsequences: false).allSatisfy { isValidTopicId(String($0)) }
    }

    /// One topic level, printable, without wildcards; at most 128 characters.
    static func isValidTopicId(_ id: String) -> Bool {
        !id.isEmpty && id.count <= 128
            && id.unicodeScalars.allSatisfy { $0.value > 0x20 && $0.value != 0x7F && !"/+#".unicodeScalars.contains($0) }
    }

    /// 12 hex digits, upper case, without separators; nil when it is not a MAC.
    static func normalizedMAC(_ text: String?) -> String? {
        guard let text else { return nil }
        let hex = text.filter { $0 != ":" && $0 != "-" }.uppercased()
        guard hex.count == 12, hex.allSatisfy({ $0.isHexDigit && $0.isASCII }) else { return nil }
        return hex
    }

    /// A valid hub id (1 to 64 of A-Z a-z 0-9 _ -) made from the Shelly id.
    static func hubId(_ id: String) -> String {
        let mapped = String(
            id.map { c -> Character in
                c.isASCII && (c.isLetter || c.isNumber || c == "_" || c == "-") ? c : "-"
            }.prefix(64))
        return mapped.isEmpty ? "shelly" : mapped
    }

    /// The settings offered for a discovered device, keys sorted: `gen` and `id`, plus what its
    /// model has when it differs from the defaults (`component`, `meter` false, `channels`).
    static func settingsJSON(id: String, gen: Int, model: ShellyModel? = nil) -> String {
        var settings: JSONValue = .object([("gen", .number(Double(gen))), ("id", .string(id))])
        if let model {
            if model.component != .switch { settings["component"] = .string(model.component.rawValue) }
            if model.component == .switch && !model.meter { settings["meter"] = false }
            if model.component == .switch && model.channels > 1 { settings["channels"] = .number(Double(model.channels)) }
        }
        return settings.sortingKeys().serialized()
    }
}
