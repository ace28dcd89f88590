import Foundation
import HubJSON
import MQTT
import Synchronization

/// A Shelly relay with a power meter on an MQTT broker, as the real devices behave:
///
/// - Gen1 (Plug S): `shellies/<id>/relay/0` `on|off`, `.../relay/0/power` W, `.../relay/0/energy`
///   watt-minutes since boot (reset by `reboot()`), every `statusPeriod` and after every command;
///   obeys `shellies/<id>/relay/0/command` `on|off|toggle`; answers `announce` on `shellies/command`
///   (or `shellies/<id>/command`) on `shellies/announce`, and `update` with its status.
/// - Gen2+ (`Options.Model`: Plus 1PM, Plus 1 without a meter, PM Mini Gen3 with `pm1:0` and no
///   relay, Pro 4PM with `switch:0` to `switch:3`): NotifyStatus on `<id>/events/rpc` with only the
///   changed fields (aenergy every period, temperature now and then, output and apower on change);
///   with `statusNotifications` (the device's status_ntf option) also the full status on
///   `<id>/status/<component>` when it changes; RPC on `<id>/rpc` (`Switch.Set`, `Switch.Toggle`,
///   `Switch.GetStatus`, `PM1.GetStatus`, `Shelly.GetStatus` as the model has them; anything else
///   gets an error) answered on `<src>/rpc`; simple control on `<id>/command/switch:<n>` and
///   `status_update` on `<id>/command`.
///
/// Both publish a retained `online` `true` when connected; the last will is `false` (retained).
public final class ShellySimulator: Sendable {
    /// The broker, the generation, model and identity, and the simulated load.
    public struct Options: Sendable {
        /// A Gen2+ model, as its components are.
        public enum Model: String, Sendable, CaseIterable {
            /// Shelly Plus 1PM (`SNSW-001P16EU`): `switch:0` with a meter.
            case plus1pm
            /// Shelly Plus 1 (`SNSW-001X16EU`): `switch:0` without a meter (`output`, `temperature` only).
            case plus1
            /// Shelly PM Mini Gen3 (`S3PM-001PCEU16`): `pm1:0`, a meter without a relay (the load always draws).
            case pmmini
            /// Shelly Pro 4PM (`SPSW-104PE16EU`): `switch:0` to `switch:3`, each with a meter.
            case pro4pm

            /// Its switches or meter channels.
            public var channels: Int { self == .pro4pm ? 4 : 1 }
            /// Whether it meters.
            public var meter: Bool { self != .plus1 }
            /// Whether it has relays.
            public var relays: Bool { self != .pmmini }
            /// The component type of its channels.
            var component: String { self == .pmmini ? "pm1" : "switch" }
            /// The model part of its default id.
            var idKind: String {
                switch self {
                case .plus1pm: return "shellyplus1pm"
                case .plus1: return "shellyplus1"
                case .pmmini: return "shellypmminig3"
                case .pro4pm: return "shellypro4pm"
                }
            }
        }

        /// The broker's host.
        public var host: String
        /// The broker's port.
        public var port: Int
        /// 1, or 2 (Gen2+ protocol).
        public var gen: Int
        /// The device id (Gen1, under `shellies/`) or topic prefix (Gen2); nil = the default for `gen` and `model`.
        public var id: String?
        /// What the load draws while the relay is on, W (each channel's).
        public var loadWatts: Double
        /// Seconds between periodic reports (real Gen1 devices report every 30 s).
        public var statusPeriod: Double
        /// The broker user name, nil for none.
        public var username: String?
        /// The broker password, with `username`.
        public var password: String?
        /// Mains voltage, V.
        public var voltage: Double
        /// Gen2+: the model simulated.
        public var model: Model
        /// Gen2+: the status_ntf option (full statuses on `<id>/status/<component>` beside the
        /// NotifyStatus deltas). Real devices ship with it off.
        public var statusNotifications: Bool

        /// A Gen2 Plus 1PM on a local broker, a 60 W load at 230 V, reporting every 10 s, status_ntf on.
        public init(
            host: String = "127.0.0.1", port: Int = 1883, gen: Int = 2, id: String? = nil,
            loadWatts: Double = 60, statusPeriod: Double = 10,
            username: String? = nil, password: String? = nil, voltage: Double = 230,
            model: Model = .plus1pm, statusNotifications: Bool = true
        ) {
            self.host = host
            self.port = port
            self.gen = gen
            self.id = id
            self.loadWatts = loadWatts
            self.statusPeriod = statusPeriod
            self.username = username
            self.password = password
            self.voltage = voltage
            self.model = model
            self.statusNotifications = statusNotifications
        }

        /// The Gen1 device id used when none is given (a Plug S).
        public static let defaultGen1Id = "shellyplug-s-7AB1C2"
        /// The Gen2 topic prefix used when none is given (a Plus 1PM).
        public static let defaultGen2Id = "shellyplus1pm-441793ab3fb4"

        /// The id in use.
        public var deviceId: String {
            if let id { return id }
            return gen == 1 ? Self.defaultGen1Id : model == .plus1pm ? Self.defaultGen2Id : "\(model.idKind)-441793ab3fb4"
        }
    }

    private struct Channel: Sendable {
        var relayOn = false
        /// Gen2: aenergy.total.
        var totalWh: Double = 0
        var publishedPower: Double?
    }

    private struct State: Sendable {
        var client: MQTTClient?
        var tasks: [Task<Void, Never>] = []
        var stopped = false
        var channels: [Channel]
        /// Gen1: since boot.
        var wattMinutes: Double = 0
        var lastAccrual = ContinuousClock.now
        var temperatureC = 38.5
        var ticks = 0
    }

    /// How it was set up.
    public let options: Options
    /// The device id (Gen1) or topic prefix (Gen2) in use.
    public var deviceId: String { options.deviceId }
    private let state: Mutex<State>

    /// A simulator; publishes nothing until `start()`.
    public init(options: Options = Options()) {
        self.options = options
        let count = options.gen == 1 ? 1 : options.model.channels
        // A meter without a relay measures its load all the time.
        state = Mutex(State(channels: Array(repeating: Channel(relayOn: options.gen != 1 && !options.model.relays), count: count)))
    }

    private var isGen1: Bool { options.gen == 1 }
    private var model: Options.Model { options.model }
    private var channelCount: Int { isGen1 ? 1 : model.channels }
    private var onlineTopic: String { isGen1 ? "shellies/\(deviceId)/online" : "\(deviceId)/online" }
    private var gen1Base: String { "shellies/\(deviceId)" }
    private func key(_ channel: Int) -> String { "\(model.component):\(channel)" }

    /// Relay 0. Setting it is a local switch (like the button): the device reports the change.
    public var relayOn: Bool {
        get { relay(0) }
        set { setRelay(newValue, channel: 0, source: "local", always: false) }
    }

    /// Whether relay `channel` is on (false for a channel the model lacks).
    /// - Parameter channel: From 0.
    /// - Returns: Its state.
    public func relay(_ channel: Int) -> Bool {
        state.withLock { s in s.channels.indices.contains(channel) ? s.channels[channel].relayOn : false }
    }

    /// The device's button: toggles relay 0.
    public func press() {
        guard isGen1 || model.relays else { return }
        let on = !relayOn
        setRelay(on, channel: 0, source: "button", always: false)
    }

    /// Reboots: the Gen1 energy counter starts again from 0; the device announces itself as after boot.
    public func reboot() {
        state.withLock { s in
            accrue(&s)
            s.wattMinutes = 0
            for i in s.channels.indices { s.channels[i].publishedPower = nil }
        }
        publish(onlineTopic, "true", retain: true)
        publishFullStatus(source: "init")
    }

    // MARK: - Lifecycle

    /// Connects to the broker and publishes `online` and the full status.
    /// - Throws: `MQTTError` when the client cannot be made or subscribe, `.stopped` when already started or stopped.
    public func start() async throws {
        var mqttOptions = MQTTOptions(
            host: options.host, port: options.port,
            clientId: "\(deviceId)-\(UInt32.random(in: 0...UInt32.max))",
            username: options.username, password: options.password,
            cleanSession: true,
            will: .init(topic: onlineTopic, payload: Array("false".utf8), qos: 1, retain: true))
        mqttOptions.reconnectDelay = .init(min: .seconds(1), max: .seconds(5))
        let client = try MQTTClient(options: mqttOptions)
        let topics =
            isGen1
            ? ["\(gen1Base)/relay/0/command", "\(gen1Base)/command", "shellies/command"]
            : ["\(deviceId)/rpc", "\(deviceId)/command"]
                + (model.relays ? (0..<channelCount).map { "\(deviceId)/command/switch:\($0)" } : [])
        for topic in topics { try client.subscribe(topic, qos: 1) }
        let ok = state.withLock { s -> Bool in
            guard !s.stopped, s.client == nil else { return false }
            s.client = client
            s.lastAccrual = .now
            return true
        }
        guard ok else {
            throw MQTTError(kind: .stopped, host: options.host, port: options.port, detail: "simulator already started or stopped")
        }
        let events = Task { [self] in
            for await event in client.connectionEvents {
                if case .connected = event { announceOnline() }
            }
        }
        let messages = Task { [self] in
            for await message in client.messages { handle(message) }
        }
        let period = max(0.05, options.statusPeriod)
        let ticker = Task { [self] in
            while !Task.isCancelled {
                guard (try? await Task.sleep(for: .seconds(period))) != nil else { return }
                tick()
            }
        }
        state.withLock { $0.tasks = [events, messages, ticker] }
        try client.start()
        do {
            try await client.waitUntilConnected(timeout: .seconds(10))
        } catch {
            await stop()
            throw error
        }
    }

    /// Disconnects cleanly, leaving `online` `false` (retained) behind.
    public func stop() async {
        let (client, tasks) = state.withLock { s -> (MQTTClient?, [Task<Void, Never>]) in
            s.stopped = true
            defer { s.client = nil; s.tasks = [] }
            return (s.client, s.tasks)
        }
        for task in tasks { task.cancel() }
        await client?.stop(finalMessage: (onlineTopic, Array("false".utf8), true))
    }

    /// Drops the connection without saying goodbye (power cut): the broker publishes the last will.
    public func cutPower() async {
        let (client, tasks) = state.withLock { s -> (MQTTClient?, [Task<Void, Never>]) in
            s.stopped = true
            defer { s.client = nil; s.tasks = [] }
            return (s.client, s.tasks)
        }
        for task in tasks { task.cancel() }
        client?.abort()
    }

    /// Starts `count` simulators with distinct ids (the id's hex suffix counts up) and runs until cancelled.
    public static func runForever(
        options: Options, count: Int = 1,
        print output: @Sendable (String) -> Void = { Swift.print($0) }
    ) async throws {
        var simulators: [ShellySimulator] = []
        do {
            for i in 0..<max(1, count) {
                var o = options
                o.id = idAdding(i, to: options.deviceId)
                let simulator = ShellySimulator(options: o)
                try await simulator.start()
                simulators.append(simulator)
                let what =
                    o.gen == 1
                    ? "Gen1 (shellies/\(o.deviceId)/...)"
                    : "Gen2 \(o.model.rawValue) (\(o.deviceId)/..., status_ntf \(o.statusNotifications ? "on" : "off"))"
                output("shelly simulator \(what) on \(o.host):\(o.port), load \(o.loadWatts) W, every \(o.statusPeriod) s")
            }
            while !Task.isCancelled { try await Task.sleep(nanoseconds: 3_600_000_000_000) }
        } catch {
            for simulator in simulators { await simulator.stop() }
            if error is CancellationError { return }
            throw error
        }
        for simulator in simulators { await simulator.stop() }
    }

    /// `shellyplug-s-7AB1C2` + 1 = `shellyplug-s-7AB1C3` (keeping the suffix's case and width).
    static func idAdding(_ n: Int, to id: String) -> String {
        guard n != 0 else { return id }
        guard let dash = id.lastIndex(of: "-") else { return "\(id)-\(n)" }
        let suffix = String(id[id.index(after: dash)...])
        guard !suffix.isEmpty, suffix.count <= 12, let value = UInt64(suffix, radix: 16) else { return "\(id)-\(n)" }
        let width = suffix.count
        var hex = String(value &+ UInt64(n), radix: 16, uppercase: suffix == suffix.uppercased())
        if hex.count < width { hex = String(repeating: "0", count: width - hex.count) + hex }
        return String(id[...dash]) + String(hex.suffix(width))
    }

    // MARK: - Device behaviour

    private func announceOnline() {
        publish(onlineTopic, "true", retain: true)
        if isGen1 { announce() }
        publishFullStatus(source: "init")
    }

    private var macAddress: String {
        let suffix = deviceId.split(separator: "-").last.map { $0.uppercased() } ?? ""
        let hex = suffix.filter(\.isHexDigit)
        return String(("A4CF12000000".dropLast(min(hex.count, 12))) + hex.suffix(12))
    }

    private func announce() {
        json(
            "shellies/announce",
            [
                "id": .string(deviceId), "model": "SHPLG-S", "mac": .string(macAddress), "ip": "192.168.1.50",
                "new_fw": false, "fw_ver": "20230913-114008/v1.14.0-gcb84623"
            ])
    }

    private func power(_ s: State, _ channel: Int) -> Double {
        model.meter || isGen1 ? (s.channels[channel].relayOn ? options.loadWatts : 0) : 0
    }

    private func accrue(_ s: inout State) {
        let now = ContinuousClock.now
        let seconds = Double((now - s.lastAccrual).components.attoseconds) / 1e18 + Double((now - s.lastAccrual).components.seconds)
        s.lastAccrual = now
        for i in s.channels.indices {
            let watts = power(s, i)
            if i == 0 { s.wattMinutes += watts * seconds / 60 }
            s.channels[i].totalWh += watts * seconds / 3600
        }
    }

    private func setRelay(_ on: Bool, channel: Int, source: String, always: Bool) {
        let changed = state.withLock { s -> Bool in
            accrue(&s)
            defer { s.channels[channel].relayOn = on }
            return s.channels[channel].relayOn != on
        }
        if isGen1 {
            if changed || always { publishGen1Status() }
        } else if changed {
            notify(channel, ["output": .bool(on), "source": .string(source)])
            let (watts, status) = state.withLock { s -> (Double, JSONValue) in
                s.channels[channel].publishedPower = power(s, channel)
                return (power(s, channel), fullStatus(s, channel, source: source))
            }
            if model.meter { notify(channel, ["apower": .number(watts), "current": .number(round3(watts / options.voltage))]) }
            if options.statusNotifications { json("\(deviceId)/status/\(key(channel))", status) }
        }
    }

    private func tick() {
        if isGen1 {
            state.withLock { s in accrue(&s) }
            publishGen1Status()
            return
        }
        let (partials, temperature) = state.withLock { s -> ([JSONValue], Double?) in
            accrue(&s)
            s.ticks += 1
            var partials: [JSONValue] = []
            for i in s.channels.indices where model.meter {
                var partial: JSONValue = ["aenergy": aenergy(s, i)]
                if s.channels[i].publishedPower != power(s, i) {
                    s.channels[i].publishedPower = power(s, i)
                    partial["apower"] = .number(power(s, i))
                    partial["current"] = .number(round3(power(s, i) / options.voltage))
                }
                partials.append(partial)
            }
            var temperature: Double?
            if s.ticks % 3 == 0 && model.relays {
                s.temperatureC += s.channels.contains(where: \.relayOn) ? 0.1 : -0.1
                temperature = round3(s.temperatureC)
            }
            return (partials, temperature)
        }
        for (i, partial) in partials.enumerated() { notify(i, partial) }
        if let temperature {
            for i in 0..<channelCount {
                notify(i, ["temperature": ["tC": .number(temperature), "tF": .number(round3(temperature * 9 / 5 + 32))]])
            }
        }
    }

    private func publishGen1Status() {
        let (on, watts, wattMinutes) = state.withLock { s in (s.channels[0].relayOn, power(s, 0), s.wattMinutes) }
        publish("\(gen1Base)/relay/0", on ? "on" : "off")
        publish("\(gen1Base)/relay/0/power", String(format: "%.2f", watts))
        publish("\(gen1Base)/relay/0/energy", String(Int(wattMinutes.rounded(.down))))
    }

    /// Gen1: relay, power and energy; Gen2 with status_ntf: each component's status.
    private func publishFullStatus(source: String) {
        if isGen1 {
            publishGen1Status()
        } else if options.statusNotifications {
            let statuses = state.withLock { s -> [JSONValue] in
                accrue(&s)
                return s.channels.indices.map { i in
                    s.channels[i].publishedPower = power(s, i)
                    return fullStatus(s, i, source: source)
                }
            }
            for (i, status) in statuses.enumerated() { json("\(deviceId)/status/\(key(i))", status) }
        }
    }

    private func aenergy(_ s: State, _ channel: Int) -> JSONValue {
        let minute = JSONValue.number(round3(power(s, channel) / 60))
        return [
            "total": .number(round3(s.channels[channel].totalWh)), "by_minute": [minute, minute, minute],
            "minute_ts": .number(Date().timeIntervalSince1970.rounded(.towardZero))
        ]
    }

    /// The component's status as `Switch.GetStatus` / `PM1.GetStatus` return it (field sets as the models have them).
    private func fullStatus(_ s: State, _ channel: Int, source: String) -> JSONValue {
        let watts = power(s, channel)
        var status: JSONValue = ["id": .number(Double(channel))]
        if model.relays {
            status["source"] = .string(source)
            status["output"] = .bool(s.channels[channel].relayOn)
        }
        if model.meter {
            status["apower"] = .number(watts)
            status["voltage"] = .number(options.voltage)
            status["current"] = .number(round3(watts / options.voltage))
            status["aenergy"] = aenergy(s, channel)
        }
        if model == .pmmini {
            status["freq"] = 50
            status["ret_aenergy"] = [
                "total": 0, "by_minute": [0, 0, 0], "minute_ts": .number(Date().timeIntervalSince1970.rounded(.towardZero))
            ]
        }
        if model.relays {
            status["temperature"] = ["tC": .number(round3(s.temperatureC)), "tF": .number(round3(s.temperatureC * 9 / 5 + 32))]
        }
        return status
    }

    /// NotifyStatus with only `fields` of channel `channel`'s component.
    private func notify(_ channel: Int, _ fields: JSONValue) {
        var part = fields
        part["id"] = .number(Double(channel))
        json(
            "\(deviceId)/events/rpc",
            [
                "src": .string(deviceId), "dst": .string("\(deviceId)/events"), "method": "NotifyStatus",
                "params": ["ts": .number((Date().timeIntervalSince1970 * 100).rounded() / 100), key(channel): part]
            ])
    }

    // MARK: - Incoming

    private func handle(_ message: MQTTMessage) {
        let text = String(decoding: message.payload, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
        if isGen1 {
            switch message.topic {
            case "\(gen1Base)/relay/0/command":
                switch text {
                case "on": setRelay(true, channel: 0, source: "mqtt", always: true)
                case "off": setRelay(false, channel: 0, source: "mqtt", always: true)
                case "toggle": setRelay(!relayOn, channel: 0, source: "mqtt", always: true)
                default: break
                }
            case "shellies/command", "\(gen1Base)/command":
                if text == "announce" { announce() }
                if text == "update" { publishGen1Status() }
            default: break
            }
            return
        }
        let commandPrefix = "\(deviceId)/command/switch:"
        if model.relays, message.topic.hasPrefix(commandPrefix),
            let channel = Int(message.topic.dropFirst(commandPrefix.count)), (0..<channelCount).contains(channel)
        {
            switch text {
            case "on": setRelay(true, channel: channel, source: "MQTT", always: false)
            case "off": setRelay(false, channel: channel, source: "MQTT", always: false)
            case "toggle": setRelay(!relay(channel), channel: channel, source: "MQTT", always: false)
            default: break
            }
            return
        }
        switch message.topic {
        case "\(deviceId)/command":
            if text == "status_update" { publishFullStatus(source: "MQTT") }
        case "\(deviceId)/rpc":
            handleRPC(message.payload)
        default: break
        }
    }

    private func handleRPC(_ payload: [UInt8]) {
        guard let request = try? JSONValue.parse(payload), case .object = request,
            let src = request["src"]?.stringValue, !src.isEmpty, !src.contains("#"), !src.contains("+")
        else { return }
        let id = request["id"] ?? .null
        let method = request["method"]?.stringValue ?? ""
        let params = request["params"] ?? [:]
        var reply: JSONValue = ["id": id, "src": .string(deviceId), "dst": .string(src)]
        func fail(_ code: Int, _ message: String) { reply["error"] = ["code": .number(Double(code)), "message": .string(message)] }
        /// The channel `params.id` names, when the model has it.
        func channelId() -> Int? {
            let value = params["id"]
            guard let number = value?.doubleValue, number == number.rounded(), (0..<channelCount).contains(Int(number)) else {
                if value == nil {
                    fail(-103, "Missing required argument 'id'!")
                } else {
                    fail(-105, "Argument 'id', value \(value.map { "\($0)" } ?? "") not found!")
                }
                return nil
            }
            return Int(number)
        }
        let switchMethods = ["Switch.Set", "Switch.Toggle", "Switch.GetStatus"]
        switch method {
        case _ where switchMethods.contains(method) && !model.relays, "PM1.GetStatus" where model != .pmmini:
            fail(404, "No handler for \(method)")
        case "Switch.Set":
            guard let channel = channelId() else { break }
            guard let on = params["on"]?.boolValue else { fail(-103, "Missing required argument 'on'!"); break }
            let wasOn = relay(channel)
            setRelay(on, channel: channel, source: "MQTT", always: false)
            reply["result"] = ["was_on": .bool(wasOn)]
        case "Switch.Toggle":
            guard let channel = channelId() else { break }
            let wasOn = relay(channel)
            setRelay(!wasOn, channel: channel, source: "MQTT", always: false)
            reply["result"] = ["was_on": .bool(wasOn)]
        case "Switch.GetStatus", "PM1.GetStatus":
            guard let channel = channelId() else { break }
            reply["result"] = state.withLock { s -> JSONValue in
                accrue(&s)
                return fullStatus(s, channel, source: "MQTT")
            }
        case "Shelly.GetStatus":
            var result = state.withLock { s -> JSONValue in
                accrue(&s)
                var result: JSONValue = [:]
                for i in s.channels.indices { result[key(i)] = fullStatus(s, i, source: "MQTT") }
                return result
            }
            result["sys"] = [
                "mac": .string(macAddress), "restart_required": false, "unixtime": .number(Date().timeIntervalSince1970.rounded(.down))
            ]
            reply["result"] = result
        default:
            fail(404, "No handler for \(method)")
        }
        json("\(src)/rpc", reply)
    }

    // MARK: - Publishing

    private func round3(_ x: Double) -> Double { (x * 1000).rounded() / 1000 }

    private func publish(_ topic: String, _ text: String, retain: Bool = false) {
        guard let client = state.withLock({ $0.stopped ? nil : $0.client }) else { return }
        _ = try? client.publish(topic, Array(text.utf8), qos: 1, retain: retain)
    }

    /// Publishes `object` with its keys sorted, as the device does.
    private func json(_ topic: String, _ object: JSONValue) {
        publish(topic, object.sortingKeys().serialized())
    }
}
