import DriverAPI
import Foundation
import Synchronization

/// Reading Tasmota's own announcement, the retained `tasmota/discovery/<MAC>/config` that firmware
/// 9 and later publishes (`TasDiscoverMessage` in `xdrv_12_discovery.ino`): `t` the topic, `ft`
/// the FullTopic, `tp` the three prefixes, `rl` the type of each relay (1 = a plain relay, 2 = a
/// light, 3 = a shutter, 0 = none), `mac`, `dn` the device name, `fn` the friendly names, `hn` the
/// host name and `state` the StateText words. An empty payload (discovery switched off with
/// `SetOption19 1`) or anything unreadable announces nothing; nothing here traps.
enum TasmotaDiscovery {
    /// Where the announcements are.
    static let configFilter = "tasmota/discovery/+/config"
    /// Larger announcements are not read (a real one is about 1 KB).
    static let maxBytes = 8 * 1024

    /// An announced device, and the topic of its last will (to recognise its `LWT` later).
    struct Found: Equatable {
        var device: DiscoveredDevice
        var lwtTopic: String
    }

    /// The MAC level of `tasmota/discovery/<MAC>/config` (12 hex digits, upper-cased), else nil.
    static func mac(inConfigTopic topic: String) -> String? {
        let levels = topic.split(separator: "/", omittingEmptySubsequences: false)
        guard levels.count == 4, levels[0] == "tasmota", levels[1] == "discovery", levels[3] == "config" else { return nil }
        return normalizedMAC(String(levels[2]))
    }

    /// The device an announcement describes, offered with the settings that drive it.
    static func announcement(_ message: DriverMQTTMessage, driver: String) -> Found? {
        guard let topicMAC = mac(inConfigTopic: message.topic), message.payload.count <= maxBytes,
            let config = TasmotaPayload.object(message.payload)
        else { return nil }
        // The MAC the device names must be the one in the topic it announced on.
        if let named = config["mac"] {
            guard let text = named.stringValue, normalizedMAC(text) == topicMAC else { return nil }
        }
        guard let topic = config["t"]?.stringValue, TasmotaTopics.isValidTopic(topic) else { return nil }
        guard let fullTopic = fullTopic(config, mac: topicMAC) else { return nil }
        guard let prefixes = strings(config["tp"], default: TasmotaTopics.defaultPrefixes), prefixes.count == 3 else { return nil }
        guard let words = strings(config["state"], default: TasmotaStateText.defaultWords), let stateText = TasmotaStateText(words)
        else { return nil }
        guard let relays = relays(config["rl"]) else { return nil }

        var settings: [(String, JSONValue)] = [("topic", .string(topic))]
        if fullTopic != TasmotaTopics.defaultFullTopic { settings.append(("full_topic", .string(fullTopic))) }
        if prefixes != TasmotaTopics.defaultPrefixes { settings.append(("prefixes", .array(prefixes.map { .string($0) }))) }
        if relays.count > 1 { settings.append(("relays", .number(Double(relays.count)))) }
        if let relay = relays.relay { settings.append(("relay", .number(Double(relay)))) }
        if !stateText.isStandard { settings.append(("state_text", .array(stateText.words.map { .string($0) }))) }
        let settingsJSON = JSONValue.object(settings).serialized()

        // Offer only what drives a device: the driver's own check of the settings.
        let configuration = DriverConfiguration(deviceId: "discovered", driver: driver, settingsJSON: settingsJSON)
        guard let checked = try? TasmotaSettings(configuration) else { return nil }
        let id = TasmotaDriverFactory.suggestedId(for: topic)
        guard !id.isEmpty else { return nil }
        let device = DiscoveredDevice(
            suggestedId: id, driver: driver, name: name(config, strip: relays.count > 1 && relays.relay == nil) ?? topic,
            settingsJSON: settingsJSON, hardwareId: topicMAC)
        return Found(device: device, lwtTopic: checked.topics.lwtTopic)
    }

    /// 12 hex digits upper-cased (colons and dashes dropped), else nil.
    static func normalizedMAC(_ text: String) -> String? {
        let hex = text.filter { $0 != ":" && $0 != "-" }
        guard hex.utf8.count == 12, hex.utf8.allSatisfy({ ($0 >= 48 && $0 <= 57) || ($0 >= 65 && $0 <= 70) || ($0 >= 97 && $0 <= 102) })
        else { return nil }
        return hex.uppercased()
    }

    /// `ft` with `%hostname%` (`hn`) and `%id%` (the MAC, as the firmware fills it in) resolved,
    /// `#` dropped and `//` made `/` as the firmware does; nil when absent tokens cannot be
    /// resolved or the pattern is unusable.
    static func fullTopic(_ config: JSONValue, mac: String) -> String? {
        guard let raw = config["ft"] else { return TasmotaTopics.defaultFullTopic }
        guard var ft = raw.stringValue, !ft.isEmpty, ft.utf8.count <= 200 else { return nil }
        if ft.contains("%hostname%") {
            guard let host = config["hn"]?.stringValue, TasmotaTopics.isValidTopic(host), !host.contains("/") else { return nil }
            ft = ft.replacingOccurrences(of: "%hostname%", with: host)
        }
        ft = ft.replacingOccurrences(of: "%id%", with: mac).replacingOccurrences(of: "#", with: "")
        while ft.contains("//") { ft = ft.replacingOccurrences(of: "//", with: "/") }
        return TasmotaTopics.problem(withFullTopic: ft) == nil ? ft : nil
    }

    /// A list of strings, `fallback` when absent; nil when it is anything else.
    static func strings(_ value: JSONValue?, default fallback: [String]) -> [String]? {
        guard let value else { return fallback }
        guard let items = value.arrayValue, items.count <= 8 else { return nil }
        var out: [String] = []
        for item in items {
            guard let s = item.stringValue else { return nil }
            out.append(s)
        }
        return out
    }

    /// What the device's relays make: how many relays the settings count and which one a single
    /// entry names.
    struct Relays: Equatable {
        /// The settings' `relays` (1 when the device has no plain relay to split).
        var count: Int
        /// The settings' `relay`, when one plain relay sits behind lights or shutters.
        var relay: Int?
    }

    /// The plain relays (type 1) of `rl`: those from relay 1 on, up to the first that is not
    /// plain, are the outlets (`relays`); a single plain relay behind a light or shutter is named
    /// as `relay` (with `relays` the highest relay in use, so its name is `POWER<n>`); a device
    /// without plain relays is offered as one device. nil for a malformed list.
    static func relays(_ value: JSONValue?) -> Relays? {
        guard let value else { return Relays(count: 1) }
        guard let items = value.arrayValue, items.count <= 32 else { return nil }
        var types: [Int] = []
        for item in items {
            guard let d = item.doubleValue, d == d.rounded(), d >= 0, d <= 255 else { return nil }
            types.append(Int(d))
        }
        let leading = types.prefix { $0 == 1 }.count
        if leading > 0 { return Relays(count: leading) }
        guard let first = types.firstIndex(of: 1) else { return Relays(count: 1) }
        let highest = (types.lastIndex { $0 != 0 } ?? first) + 1
        return Relays(count: highest, relay: first + 1)
    }

    /// The device's own name: its first friendly name (the first relay's), else its device name;
    /// for a `strip` the device name first. Trimmed, at most 100 characters.
    static func name(_ config: JSONValue, strip: Bool = false) -> String? {
        let friendly = config["fn"]?.arrayValue?.first?.stringValue, device = config["dn"]?.stringValue
        for candidate in strip ? [device, friendly] : [friendly, device] {
            let trimmed = (candidate ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
            if !trimmed.isEmpty && !trimmed.contains("\0") { return String(trimmed.prefix(100)) }
        }
        return nil
    }
}

/// The last-will topics of the devices that announced themselves (by MAC, at most 4096), so a
/// device seen on both discovery filters is offered once, from its announcement.
final class TasmotaAnnouncements: Sendable {
    private let lwtByMAC = Mutex<[String: String]>([:])
    static let limit = 4096

    /// Records (or, with nil, forgets) the last-will topic of the device with this MAC.
    func set(mac: String, lwtTopic: String?) {
        lwtByMAC.withLock { map in
            guard let lwtTopic else { map[mac] = nil; return }
            if map[mac] == nil && map.count >= Self.limit { return }
            map[mac] = lwtTopic
        }
    }

    /// Whether an announced device has this last-will topic.
    func contains(lwtTopic: String) -> Bool { lwtByMAC.withLock { $0.values.contains(lwtTopic) } }
}
