import Foundation
import MQTT
import Synchronization

/// A simulated Tasmota plug/relay with energy meter on a real MQTT broker, behaving like the
/// firmware (by default with its default settings: FullTopic `%prefix%/%topic%/`, prefixes
/// `cmnd`/`stat`/`tele`, StateText `OFF`/`ON`/`TOGGLE`/`HOLD`, `SetOption129 0`; MQTT 3.1.1). Topics
/// below are written for the default FullTopic; `Options.fullTopic` changes them as the firmware's
/// `GetTopic_P` does (a FullTopic without `%prefix%` gets `/%prefix%` for commands only; `%topic%`,
/// `%hostname%` and `%id%` are filled in, `//` becomes `/`).
///
/// - connects with the last will `tele/<t>/LWT` = `Offline` (retained) and publishes `Online` (retained);
/// - publishes its retained announcement `tasmota/discovery/<MAC>/config` in the firmware's format
///   (`TasDiscoverMessage`: topic, FullTopic, prefixes, relays, MAC, names, StateText) unless
///   `Options.publishDiscovery` is off (firmware before 9);
/// - obeys `cmnd/<t>/POWER` / `POWER<n>` with `ON`/`OFF`/`TOGGLE` (also `1`/`0`/`2`, any case;
///   an empty payload is a query) and answers `stat/<t>/RESULT` `{"POWER":"ON"}` plus
///   `stat/<t>/POWER` `ON` (a single-relay device says `POWER`, a multi-relay one `POWER<n>`);
///   `cmnd/<t>/STATE` answers the state on RESULT, `cmnd/<t>/TelePeriod` reads/sets the period
///   (and publishes telemetry at once); other commands answer `{"Command":"Unknown"}`;
/// - publishes `tele/<t>/STATE` and `tele/<t>/SENSOR` (`ENERGY`) right after connecting and then
///   every `telePeriod`; energy accrues with time while a relay is on; `Today` resets at local
///   midnight and on a power cycle (`restart()`), `Total` persists;
/// - like a real device it acts on *retained* commands too ("ghost switching" when someone retained
///   a `cmnd/.../POWER`); set `Options.ignoreRetainedCommands` to make it skip them.
///
/// With several relays the meter has one channel per relay: `Power`, `Current` and the other
/// measurements are arrays, one element per relay, `Voltage` is a single value (the line all
/// channels share), and `Total`, `Yesterday` and `Today` are the sum of the channels unless
/// `Options.setOption129` (then arrays too), as the firmware's `EnergyFmt` writes them. Relay
/// states are written in the `StateText` words.
public final class TasmotaSimulator: Sendable {
    /// The broker, the device's topic and relays, and the simulated load.
    public struct Options: Sendable {
        /// The broker's host.
        public var host: String
        /// The broker's port.
        public var port: Int
        /// The device's `%topic%`.
        public var topic: String
        /// How many relays (1 to 8).
        public var relays: Int
        /// Seconds between `tele/` messages (the firmware's default is 300; 10 suits a demo).
        public var telePeriod: Double
        /// The load on each relay, drawn while it is on.
        public var loadWatts: Double
        /// The energy counter (`Total`, kWh) the device starts with, per relay.
        public var initialTotalKWh: Double
        /// The broker user name, nil for none.
        public var username: String?
        /// The broker password, with `username`.
        public var password: String?
        /// Skip commands the broker delivers from its retained store (a real Tasmota obeys them).
        public var ignoreRetainedCommands: Bool
        /// The FullTopic pattern (`%prefix%`, `%topic%`, `%hostname%`, `%id%`).
        public var fullTopic: String
        /// `Prefix1`...`Prefix3`: the command, stat and tele prefixes.
        public var prefixes: [String]
        /// `StateText1`...`StateText4`: the words for off, on, toggle and hold.
        public var stateText: [String]
        /// `SetOption129 1`: `Total`, `Yesterday` and `Today` per channel instead of summed.
        public var setOption129: Bool
        /// Publish the retained `tasmota/discovery/<MAC>/config` (firmware 9 and later).
        public var publishDiscovery: Bool
        /// The MAC (12 hex digits); nil: one derived from the topic.
        public var mac: String?
        /// `FriendlyName1` (the others are `<name>2`, `<name>3`...), and the `DeviceName`.
        public var friendlyName: String

        /// One relay under `tasmota_A1B2C3` on a local broker, 60 W, `tele/` every 10 s.
        public init(
            host: String = "127.0.0.1", port: Int = 1883, topic: String = "tasmota_A1B2C3",
            relays: Int = 1, telePeriod: Double = 10, loadWatts: Double = 60,
            initialTotalKWh: Double = 0, username: String? = nil, password: String? = nil,
            ignoreRetainedCommands: Bool = false, fullTopic: String = "%prefix%/%topic%/",
            prefixes: [String] = ["cmnd", "stat", "tele"], stateText: [String] = ["OFF", "ON", "TOGGLE", "HOLD"],
            setOption129: Bool = false, publishDiscovery: Bool = true, mac: String? = nil, friendlyName: String = "Tasmota"
        ) {
            self.host = host
            self.port = port
            self.topic = topic
            self.relays = relays
            self.telePeriod = telePeriod
            self.loadWatts = loadWatts
            self.initialTotalKWh = initialTotalKWh
            self.username = username
            self.password = password
            self.ignoreRetainedCommands = ignoreRetainedCommands
            self.fullTopic = fullTopic
            self.prefixes = prefixes
            self.stateText = stateText
            self.setOption129 = setOption129
            self.publishDiscovery = publishDiscovery
            self.mac = mac
            self.friendlyName = friendlyName
        }
    }

    struct Device: Sendable {
        var relayOn: [Bool]
        var totalKWh: [Double]
        var todayKWh: [Double]
        var yesterdayKWh: [Double]
        /// Wh drawn since the last SENSOR message.
        var periodWh: [Double]
        var lastAccrual: Date
        var day: DateComponents
        var bootedAt: Date
        var totalStartTime: String
        var telePeriod: Double
        var mqttCount = 0
    }

    private struct Connection: Sendable {
        var client: MQTTClient?
        var pump: Task<Void, Never>?
        var tele: Task<Void, Never>?
        var stopped = false
    }

    /// How it was set up (relays clamped to 1...8, `telePeriod` at least 0.05 s, the MAC filled in,
    /// prefixes and StateText completed with the defaults).
    public let options: Options
    private let device: Mutex<Device>
    private let connection = Mutex(Connection())

    /// A simulator; publishes nothing until started.
    public init(options: Options = Options()) {
        var options = options
        options.relays = min(max(options.relays, 1), 8)
        options.telePeriod = max(options.telePeriod, 0.05)
        options.loadWatts = max(options.loadWatts, 0)
        let defaultPrefixes = ["cmnd", "stat", "tele"], defaultWords = ["OFF", "ON", "TOGGLE", "HOLD"]
        options.prefixes = (0..<3).map {
            $0 < options.prefixes.count && !options.prefixes[$0].isEmpty ? options.prefixes[$0] : defaultPrefixes[$0]
        }
        options.stateText = (0..<4).map {
            $0 < options.stateText.count && !options.stateText[$0].isEmpty ? options.stateText[$0] : defaultWords[$0]
        }
        options.mac = Self.validMAC(options.mac) ?? Self.mac(for: options.topic)
        self.options = options
        let now = Date()
        let n = options.relays
        device = Mutex(
            Device(
                relayOn: Array(repeating: false, count: n),
                totalKWh: Array(repeating: max(0, options.initialTotalKWh), count: n),
                todayKWh: Array(repeating: 0, count: n),
                yesterdayKWh: Array(repeating: 0, count: n),
                periodWh: Array(repeating: 0, count: n),
                lastAccrual: now, day: Self.dayOf(now), bootedAt: now,
                totalStartTime: Self.timestamp(now), telePeriod: options.telePeriod))
    }

    // MARK: - Topics

    /// The device's topic for `command` under prefix 0 (cmnd), 1 (stat) or 2 (tele): the firmware's `GetTopic_P`.
    private func topic(_ prefix: Int, _ command: String) -> String { Self.topic(options, prefix, command) }
    private var lwtTopic: String { topic(Self.tele, "LWT") }
    private static let cmnd = 0, stat = 1, tele = 2

    static func topic(_ options: Options, _ prefix: Int, _ command: String) -> String {
        var full = options.fullTopic
        if prefix == cmnd && !full.contains("%prefix%") { full += "/%prefix%" }
        full = full.replacingOccurrences(of: "%prefix%", with: options.prefixes[prefix])
            .replacingOccurrences(of: "%topic%", with: options.topic)
            .replacingOccurrences(of: "%hostname%", with: hostname(options))
            .replacingOccurrences(of: "%id%", with: options.mac ?? "")
            .replacingOccurrences(of: "#", with: "")
        while full.contains("//") { full = full.replacingOccurrences(of: "//", with: "/") }
        if !full.hasSuffix("/") { full += "/" }
        return full + command
    }

    /// The announcement's topic, `tasmota/discovery/<MAC>/config`.
    public var discoveryTopic: String { "tasmota/discovery/\(options.mac ?? "")/config" }

    /// The word for a relay state (`StateText1` off, `StateText2` on).
    private func word(_ on: Bool) -> String { options.stateText[on ? 1 : 0] }

    /// `POWER` on a single-relay device, `POWER<n>` with several.
    private func powerName(_ relay: Int) -> String { options.relays == 1 ? "POWER" : "POWER\(relay)" }

    // MARK: - Public control

    /// The relays' states (index 0 = relay 1).
    public var relayOn: [Bool] { device.withLock { $0.relayOn } }

    /// The energy counters (kWh) per relay.
    public var totalKWh: [Double] {
        device.withLock { d in
            accrue(&d, now: Date())
            return d.totalKWh
        }
    }

    /// Connects (with the last will), announces `Online` and starts the telemetry.
    public func start() async throws {
        let ok = connection.withLock { c -> Bool in
            guard c.client == nil, !c.stopped else { return false }
            return true
        }
        guard ok else { return }
        try await connect()
    }

    /// Goes away cleanly, as a device being restarted by its user: publishes `Offline` (retained)
    /// and disconnects.
    public func stop() async {
        let (client, pump, tele) = connection.withLock { c in
            c.stopped = true
            defer { c.client = nil; c.pump = nil; c.tele = nil }
            return (c.client, c.pump, c.tele)
        }
        tele?.cancel()
        await tele?.value
        await client?.stop(finalMessage: (lwtTopic, Array("Offline".utf8), true), ackTimeout: .seconds(2))
        pump?.cancel()
        await pump?.value
    }

    /// A power cycle: the connection drops without a goodbye (the broker publishes the last will
    /// `Offline`), the device boots (`Today` resets, `Total` and the relay states are kept, like
    /// `PowerOnState 3`), reconnects and announces `Online`.
    public func restart(bootTime: Duration = .milliseconds(300)) async throws {
        let (client, pump, tele) = connection.withLock { c in
            defer { c.client = nil; c.pump = nil; c.tele = nil }
            return (c.client, c.pump, c.tele)
        }
        tele?.cancel()
        await tele?.value
        client?.abort()
        pump?.cancel()
        await pump?.value
        device.withLock { d in
            let now = Date()
            accrue(&d, now: now)
            d.todayKWh = d.todayKWh.map { _ in 0 }
            d.periodWh = d.periodWh.map { _ in 0 }
            d.bootedAt = now
        }
        try await Task.sleep(for: bootTime)
        guard !connection.withLock({ $0.stopped }) else { return }
        try await connect()
    }

    /// Someone pressed the device's button for `relay` (1-based): the relay toggles and the device
    /// reports it on `stat/<t>/RESULT` and `stat/<t>/POWER`.
    public func press(relay: Int = 1) {
        guard (1...options.relays).contains(relay) else { return }
        let on = device.withLock { d -> Bool in
            accrue(&d, now: Date())
            d.relayOn[relay - 1].toggle()
            return d.relayOn[relay - 1]
        }
        guard let client = connection.withLock({ $0.client }) else { return }
        announcePower(relay: relay, on: on, client: client)
    }

    /// Publishes `tele/<t>/STATE` and `tele/<t>/SENSOR` now (as the `TelePeriod` timer does).
    public func publishTelemetry() {
        guard let client = connection.withLock({ $0.client }) else { return }
        publishTelemetry(client)
    }

    private func publishTelemetry(_ client: MQTTClient) {
        let (state, sensor) = device.withLock { d -> (String, String) in
            let now = Date()
            accrue(&d, now: now)
            let state = stateJSON(d, now: now)
            let sensor = sensorJSON(d, now: now)
            d.periodWh = d.periodWh.map { _ in 0 }
            return (state, sensor)
        }
        _ = try? client.publish(topic(Self.tele, "STATE"), Array(state.utf8), qos: 1, retain: false)
        _ = try? client.publish(topic(Self.tele, "SENSOR"), Array(sensor.utf8), qos: 1, retain: false)
    }

    // MARK: - Connection

    private func connect() async throws {
        let client = try MQTTClient(
            options: MQTTOptions(
                host: options.host, port: options.port,
                clientId: "DVES_\(options.topic.prefix(40))_\(UUID().uuidString.prefix(6))",
                username: options.username, password: options.password,
                keepAlive: 30, cleanSession: true, protocolVersion: .v311,
                will: MQTTOptions.Will(topic: lwtTopic, payload: Array("Offline".utf8), qos: 1, retain: true),
                reconnectDelay: MQTTOptions.ReconnectDelay(min: .seconds(1), max: .seconds(10))))
        try client.subscribe(topic(Self.cmnd, "#"), qos: 1)
        let pump = Task { [self] in
            for await message in client.messages { handle(message, client: client) }
        }
        do {
            try client.start()
            try await client.waitUntilConnected(timeout: .seconds(10))
        } catch {
            client.abort()
            pump.cancel()
            throw error
        }
        device.withLock { $0.mqttCount += 1 }
        _ = try? client.publish(lwtTopic, Array("Online".utf8), qos: 1, retain: true)
        if options.publishDiscovery {
            _ = try? client.publish(discoveryTopic, Array(discoveryJSON().utf8), qos: 1, retain: true)
        }
        let tele = Task { [self] in
            publishTelemetry(client)
            while !Task.isCancelled {
                let period = device.withLock { $0.telePeriod }
                do { try await Task.sleep(for: .milliseconds(Int(period * 1000))) } catch { return }
                publishTelemetry(client)
            }
        }
        let accepted = connection.withLock { c -> Bool in
            guard !c.stopped, c.client == nil else { return false }
            c.client = client
            c.pump = pump
            c.tele = tele
            return true
        }
        if !accepted {
            tele.cancel()
            await client.stop(finalMessage: nil)
            pump.cancel()
        }
    }

    private func handle(_ message: MQTTMessage, client: MQTTClient) {
        if message.retain && options.ignoreRetainedCommands { return }
        let prefix = topic(Self.cmnd, "")
        guard message.topic.hasPrefix(prefix) else { return }
        let command = message.topic.dropFirst(prefix.count).uppercased()
        let payload = String(decoding: message.payload, as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines).lowercased()

        if command.hasPrefix("POWER") {
            let digits = command.dropFirst(5)
            let relay = digits.isEmpty ? 1 : Int(digits) ?? 0
            guard (1...options.relays).contains(relay) else { return unknown(client) }
            let on = device.withLock { d -> Bool in
                accrue(&d, now: Date())
                switch payload {
                case "on", "1", "true": d.relayOn[relay - 1] = true
                case "off", "0", "false": d.relayOn[relay - 1] = false
                case "toggle", "2": d.relayOn[relay - 1].toggle()
                default: break  // empty (query) or unknown: answer the state
                }
                return d.relayOn[relay - 1]
            }
            announcePower(relay: relay, on: on, client: client)
        } else if command == "STATE" {
            let json = device.withLock { d -> String in
                accrue(&d, now: Date())
                return stateJSON(d, now: Date())
            }
            _ = try? client.publish(topic(Self.stat, "RESULT"), Array(json.utf8), qos: 1, retain: false)
        } else if command == "TELEPERIOD" {
            let period = device.withLock { d -> Double in
                if let value = Double(payload), value.isFinite {
                    // The firmware allows 10...3600 s; the simulator also allows shorter periods.
                    d.telePeriod = min(max(value, 0.05), 3600)
                }
                return d.telePeriod
            }
            _ = try? client.publish(
                topic(Self.stat, "RESULT"), Array("{\"TelePeriod\":\(Self.number(period, 0))}".utf8), qos: 1, retain: false)
            publishTelemetry(client)
        } else {
            unknown(client)
        }
    }

    private func unknown(_ client: MQTTClient) {
        _ = try? client.publish(topic(Self.stat, "RESULT"), Array("{\"Command\":\"Unknown\"}".utf8), qos: 1, retain: false)
    }

    private func announcePower(relay: Int, on: Bool, client: MQTTClient) {
        let name = powerName(relay)
        let text = word(on)
        _ = try? client.publish(topic(Self.stat, "RESULT"), Array("{\"\(name)\":\(Self.json(text))}".utf8), qos: 1, retain: false)
        _ = try? client.publish(topic(Self.stat, name), Array(text.utf8), qos: 1, retain: false)
    }

    // MARK: - Energy

    private func accrue(_ d: inout Device, now: Date) {
        let day = Self.dayOf(now)
        if day != d.day {
            d.yesterdayKWh = d.todayKWh
            d.todayKWh = d.todayKWh.map { _ in 0 }
            d.day = day
        }
        let seconds = max(0, now.timeIntervalSince(d.lastAccrual))
        d.lastAccrual = now
        for i in d.relayOn.indices where d.relayOn[i] {
            let wh = options.loadWatts * seconds / 3600
            d.totalKWh[i] += wh / 1000
            d.todayKWh[i] += wh / 1000
            d.periodWh[i] += wh
        }
    }

    private func stateJSON(_ d: Device, now: Date) -> String {
        let uptime = Int(max(0, now.timeIntervalSince(d.bootedAt)))
        var s = "{\"Time\":\"\(Self.timestamp(now))\",\"Uptime\":\"\(Self.uptime(uptime))\",\"UptimeSec\":\(uptime),"
        s += "\"Heap\":28,\"SleepMode\":\"Dynamic\",\"Sleep\":50,\"LoadAvg\":19,\"MqttCount\":\(d.mqttCount),"
        for i in d.relayOn.indices {
            s += "\"\(powerName(i + 1))\":\(Self.json(word(d.relayOn[i]))),"
        }
        s +=
            "\"Wifi\":{\"AP\":1,\"SSId\":\"simulated\",\"BSSId\":\"30:B5:C2:00:00:01\",\"Channel\":6,\"Mode\":\"11n\",\"RSSI\":86,\"Signal\":-57,\"LinkCount\":1,\"Downtime\":\"0T00:00:03\"}}"
        return s
    }

    private func sensorJSON(_ d: Device, now: Date) -> String {
        let voltage = 230 + Double.random(in: -2...2)
        var power: [Double] = [], apparent: [Double] = [], reactive: [Double] = [], factor: [Double] = [], current: [Double] = []
        for on in d.relayOn {
            let p = on ? options.loadWatts : 0
            let pf = on && p > 0 ? 0.99 : 0
            let s = pf > 0 ? p / pf : 0
            power.append(p)
            factor.append(pf)
            apparent.append(s)
            reactive.append(s > p ? (s * s - p * p).squareRoot() : 0)
            current.append(voltage > 0 ? s / voltage : 0)
        }
        func field(_ values: [Double], _ decimals: Int) -> String {
            values.count == 1
                ? Self.number(values[0], decimals) : "[" + values.map { Self.number($0, decimals) }.joined(separator: ",") + "]"
        }
        // Total, Yesterday and Today: summed over the channels unless SetOption129 1 (EnergyFmt's "single = 2").
        func counter(_ values: [Double]) -> String {
            options.setOption129 ? field(values, 3) : Self.number(values.reduce(0, +), 3)
        }
        var e = "\"TotalStartTime\":\"\(d.totalStartTime)\",\"Total\":\(counter(d.totalKWh)),"
        e += "\"Yesterday\":\(counter(d.yesterdayKWh)),\"Today\":\(counter(d.todayKWh)),"
        e += "\"Period\":\(field(d.periodWh, 0)),\"Power\":\(field(power, 0)),\"ApparentPower\":\(field(apparent, 0)),"
        e += "\"ReactivePower\":\(field(reactive, 0)),\"Factor\":\(field(factor, 2)),"
        e += "\"Voltage\":\(Self.number(voltage, 0)),\"Current\":\(field(current, 3))"
        return "{\"Time\":\"\(Self.timestamp(now))\",\"ENERGY\":{\(e)}}"
    }

    // MARK: - Announcement

    /// The retained announcement, as the firmware's `TasDiscoverMessage` (xdrv_12_discovery.ino)
    /// writes it: 8 friendly names (null past the relays), relay types (1 = plain relay), switch
    /// and button fields of a device without them, the SetOptions it reports.
    func discoveryJSON() -> String {
        let n = options.relays
        let names = (0..<8).map { i in i < n ? Self.json(i == 0 ? options.friendlyName : "\(options.friendlyName)\(i + 1)") : "null" }
        let relays = (0..<8).map { $0 < n ? "1" : "0" }
        var s = "{\"ip\":\"127.0.0.1\",\"dn\":\(Self.json(options.friendlyName)),\"fn\":[\(names.joined(separator: ","))],"
        s += "\"hn\":\(Self.json(Self.hostname(options))),\"mac\":\"\(options.mac ?? "")\",\"md\":\"Simulated\",\"ty\":0,\"if\":0,"
        s += "\"ofln\":\"Offline\",\"onln\":\"Online\",\"state\":[\(options.stateText.map(Self.json).joined(separator: ","))],"
        s += "\"sw\":\"13.2.0\",\"t\":\(Self.json(options.topic)),\"ft\":\(Self.json(options.fullTopic)),"
        s += "\"tp\":[\(options.prefixes.map(Self.json).joined(separator: ","))],\"rl\":[\(relays.joined(separator: ","))],"
        s += "\"swc\":[-1,-1,-1,-1,-1,-1,-1,-1],\"swn\":[null,null,null,null,null,null,null,null],\"btn\":[0,0,0,0,0,0,0,0],"
        s += "\"so\":{\"4\":0,\"11\":0,\"13\":0,\"17\":0,\"20\":0,\"30\":0,\"68\":0,\"73\":0,\"82\":0,\"114\":0,\"117\":0},"
        s += "\"lk\":0,\"lt_st\":0,\"bat\":0,\"dslp\":0,\"sho\":[],\"sht\":[],\"ver\":1}"
        return s
    }

    /// The firmware's default host name, `<topic>-<chip id & 0x1FFF>` (here from the MAC).
    static func hostname(_ options: Options) -> String {
        let low = Int(options.mac?.suffix(4) ?? "", radix: 16) ?? 0
        return "\(options.topic.prefix(24))-" + String(format: "%04d", low & 0x1FFF)
    }

    /// A MAC derived from the topic (FNV-1a), with an Espressif prefix: distinct topics, distinct MACs.
    static func mac(for topic: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in topic.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return "DC4F22" + String(format: "%06X", UInt32(truncatingIfNeeded: hash) & 0xFF_FFFF)
    }

    /// 12 hex digits upper-cased (colons dropped), else nil.
    static func validMAC(_ text: String?) -> String? {
        guard let hex = text?.filter({ $0 != ":" }), hex.count == 12, hex.allSatisfy(\.isHexDigit) else { return nil }
        return hex.uppercased()
    }

    /// `text` as a JSON string.
    static func json(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 { out += String(format: "\\u%04x", scalar.value) } else { out.unicodeScalars.append(scalar) }
            }
        }
        return out + "\""
    }

    // MARK: - Formatting

    static func number(_ value: Double, _ decimals: Int) -> String {
        String(format: "%.\(decimals)f", value.isFinite ? value : 0)
    }

    static func dayOf(_ date: Date) -> DateComponents {
        Calendar.current.dateComponents([.year, .month, .day], from: date)
    }

    /// Local time as Tasmota prints it: `2021-06-27T15:03:44`.
    static func timestamp(_ date: Date) -> String {
        let c = Calendar.current.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d", c.year ?? 0, c.month ?? 0, c.day ?? 0,
            c.hour ?? 0, c.minute ?? 0, c.second ?? 0)
    }

    /// `1T02:03:04` (days T hh:mm:ss).
    static func uptime(_ seconds: Int) -> String {
        String(format: "%dT%02d:%02d:%02d", seconds / 86_400, seconds % 86_400 / 3600, seconds % 3600 / 60, seconds % 60)
    }

    // MARK: - Command line

    /// Runs `count` simulated devices until the task is cancelled (`hub sim tasmota`). With
    /// `count` > 1 the topics are `<topic>_1`...`<topic>_<count>`.
    public static func runForever(
        options: Options, count: Int = 1,
        print output: @Sendable (String) -> Void = { Swift.print($0) }
    ) async throws {
        var simulators: [TasmotaSimulator] = []
        do {
            for i in 0..<max(1, count) {
                var o = options
                if count > 1 { o.topic = "\(options.topic)_\(i + 1)" }
                let simulator = TasmotaSimulator(options: o)
                try await simulator.start()
                simulators.append(simulator)
                let relays = simulator.options.relays
                let power = Self.topic(simulator.options, cmnd, relays == 1 ? "POWER" : "POWER1")
                output(
                    "tasmota simulator \(o.topic) (MAC \(simulator.options.mac ?? ""), \(relays) relay\(relays == 1 ? "" : "s"), \(number(simulator.options.loadWatts, 0)) W) on MQTT \(o.host):\(o.port), tele every \(number(simulator.options.telePeriod, 1)) s; switch with: mosquitto_pub -t \(power) -m TOGGLE"
                )
            }
            while !Task.isCancelled { try await Task.sleep(nanoseconds: 3_600_000_000_000) }
        } catch {
            for simulator in simulators { await simulator.stop() }
            if error is CancellationError { return }
            throw error
        }
        for simulator in simulators { await simulator.stop() }
    }
}
