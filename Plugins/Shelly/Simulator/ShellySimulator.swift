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
/// - Gen2/Gen3 (Plus 1PM): full status on `<id>/status/switch:0` when it changes, NotifyStatus on
///   `<id>/events/rpc` with only the changed fields (aenergy every period, temperature now and then,
///   output and apower on change); RPC on `<id>/rpc` (`Switch.Set`, `Switch.Toggle`,
///   `Switch.GetStatus`, `Shelly.GetStatus`; anything else gets an error) answered on `<src>/rpc`;
///   simple control on `<id>/command/switch:0` and `status_update` on `<id>/command`.
///
/// Both publish a retained `online` `true` when connected; the last will is `false` (retained).
public final class ShellySimulator: Sendable {
    /// The broker, the generation and identity, and the simulated load.
    public struct Options: Sendable {
        /// The broker's host.
        public var host: String
        /// The broker's port.
        public var port: Int
        /// 1, or 2 (Gen2/Gen3 protocol).
        public var gen: Int
        /// The device id (Gen1, under `shellies/`) or topic prefix (Gen2); nil = the default for `gen`.
        public var id: String?
        /// What the load draws while the relay is on, W.
        public var loadWatts: Double
        /// Seconds between periodic reports (real Gen1 devices report every 30 s).
        public var statusPeriod: Double
        /// The broker user name, nil for none.
        public var username: String?
        /// The broker password, with `username`.
        public var password: String?
        /// Mains voltage, V.
        public var voltage: Double

        /// A Gen2 device on a local broker, a 60 W load at 230 V, reporting every 10 s.
        public init(
            host: String = "127.0.0.1", port: Int = 1883, gen: Int = 2, id: String? = nil,
            loadWatts: Double = 60, statusPeriod: Double = 10,
            username: String? = nil, password: String? = nil, voltage: Double = 230
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
        }

        /// The Gen1 device id used when none is given (a Plug S).
        public static let defaultGen1Id = "shellyplug-s-7AB1C2"
        /// The Gen2 topic prefix used when none is given (a Plus 1PM).
        public static let defaultGen2Id = "shellyplus1pm-441793ab3fb4"

        /// The id in use.
        public var deviceId: String { id ?? (gen == 1 ? Self.defaultGen1Id : Self.defaultGen2Id) }
    }

    private struct State: Sendable {
        var client: MQTTClient?
        var tasks: [Task<Void, Never>] = []
        var stopped = false
        var relayOn = false
        /// Gen1: since boot.
        var wattMinutes: Double = 0
        /// Gen2: aenergy.total.
        var totalWh: Double = 0
        var lastAccrual = ContinuousClock.now
        var temperatureC = 38.5
        var ticks = 0
        var publishedPower: Double?
    }

    /// How it was set up.
    public let options: Options
    /// The device id (Gen1) or topic prefix (Gen2) in use.
    public var deviceId: String { options.deviceId }
    private let state = Mutex(State())

    /// A simulator; publishes nothing until `start()`.
    public init(options: Options = Options()) {
        self.options = options
    }

    private var isGen1: Bool { options.gen == 1 }
    private var onlineTopic: String { isGen1 ? "shellies/\(deviceId)/online" : "\(deviceId)/online" }
    private var gen1Base: String { "shellies/\(deviceId)" }

    /// The relay. Setting it is a local switch (like the button): the device reports the change.
    public var relayOn: Bool {
        get { state.withLock { $0.relayOn } }
        set { setRelay(newValue, source: "local", always: false) }
    }

    /// The device's button: toggles the relay.
    public func press() {
        let on = !relayOn
        setRelay(on, source: "button", always: false)
    }

    /// Reboots: the Gen1 energy counter starts again from 0; the device announces itself as after boot.
    public func reboot() {
        state.withLock { s in
            accrue(&s)
            s.wattMinutes = 0
            s.publishedPower = nil
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
            : ["\(deviceId)/rpc", "\(deviceId)/command/switch:0", "\(deviceId)/command"]
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
                let what = o.gen == 1 ? "Gen1 (shellies/\(o.deviceId)/...)" : "Gen2 (\(o.deviceId)/...)"
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

    private func power(_ s: State) -> Double { s.relayOn ? options.loadWatts : 0 }

    private func accrue(_ s: inout State) {
        let now = ContinuousClock.now
        let seconds = Double((now - s.lastAccrual).components.attoseconds) / 1e18 + Double((now - s.lastAccrual).components.seconds)
        s.lastAccrual = now
        let watts = power(s)
        s.wattMinutes += watts * seconds / 60
        s.totalWh += watts * seconds / 3600
    }

    private func setRelay(_ on: Bool, source: String, always: Bool) {
        let changed = state.withLock { s -> Bool in
            accrue(&s)
            defer { s.relayOn = on }
            return s.relayOn != on
        }
        if isGen1 {
            if changed || always { publishGen1Status() }
        } else if changed {
            notify(["output": .bool(on), "source": .string(source)])
            let (watts, status) = state.withLock { s -> (Double, JSONValue) in
                s.publishedPower = power(s)
                return (power(s), fullStatus(s, source: source))
            }
            notify(["apower": .number(watts), "current": .number(round3(watts / options.voltage))])
            json("\(deviceId)/status/switch:0", status)
        }
    }

    private func tick() {
        if isGen1 {
            state.withLock { s in accrue(&s) }
            publishGen1Status()
            return
        }
        let (partial, temperature) = state.withLock { s -> (JSONValue, Double?) in
            accrue(&s)
            s.ticks += 1
            var partial: JSONValue = ["aenergy": aenergy(s)]
            if s.publishedPower != power(s) {
                s.publishedPower = power(s)
                partial["apower"] = .number(power(s))
                partial["current"] = .number(round3(power(s) / options.voltage))
            }
            var temperature: Double?
            if s.ticks % 3 == 0 {
                s.temperatureC += s.relayOn ? 0.1 : -0.1
                temperature = round3(s.temperatureC)
            }
            return (partial, temperature)
        }
        notify(partial)
        if let temperature { notify(["temperature": ["tC": .number(temperature), "tF": .number(round3(temperature * 9 / 5 + 32))]]) }
    }

    private func publishGen1Status() {
        let (on, watts, wattMinutes) = state.withLock { s in (s.relayOn, power(s), s.wattMinutes) }
        publish("\(gen1Base)/relay/0", on ? "on" : "off")
        publish("\(gen1Base)/relay/0/power", String(format: "%.2f", watts))
        publish("\(gen1Base)/relay/0/energy", String(Int(wattMinutes.rounded(.down))))
    }

    private func publishFullStatus(source: String) {
        if isGen1 {
            publishGen1Status()
        } else {
            let status = state.withLock { s -> JSONValue in
                accrue(&s)
                s.publishedPower = power(s)
                return fullStatus(s, source: source)
            }
            json("\(deviceId)/status/switch:0", status)
        }
    }

    private func aenergy(_ s: State) -> JSONValue {
        let minute = JSONValue.number(round3(power(s) / 60))
        return [
            "total": .number(round3(s.totalWh)), "by_minute": [minute, minute, minute],
            "minute_ts": .number(Date().timeIntervalSince1970.rounded(.towardZero))
        ]
    }

    private func fullStatus(_ s: State, source: String) -> JSONValue {
        let watts = power(s)
        return [
            "id": 0, "source": .string(source), "output": .bool(s.relayOn), "apower": .number(watts),
            "voltage": .number(options.voltage), "current": .number(round3(watts / options.voltage)), "aenergy": aenergy(s),
            "temperature": ["tC": .number(round3(s.temperatureC)), "tF": .number(round3(s.temperatureC * 9 / 5 + 32))]
        ]
    }

    /// NotifyStatus with only `fields` of switch:0.
    private func notify(_ fields: JSONValue) {
        var part = fields
        part["id"] = 0
        json(
            "\(deviceId)/events/rpc",
            [
                "src": .string(deviceId), "dst": .string("\(deviceId)/events"), "method": "NotifyStatus",
                "params": ["ts": .number((Date().timeIntervalSince1970 * 100).rounded() / 100), "switch:0": part]
            ])
    }

    // MARK: - Incoming

    private func handle(_ message: MQTTMessage) {
        let text = String(decoding: message.payload, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
        if isGen1 {
            switch message.topic {
            case "\(gen1Base)/relay/0/command":
                switch text {
                case "on": setRelay(true, source: "mqtt", always: true)
                case "off": setRelay(false, source: "mqtt", always: true)
                case "toggle": setRelay(!relayOn, source: "mqtt", always: true)
                default: break
                }
            case "shellies/command", "\(gen1Base)/command":
                if text == "announce" { announce() }
                if text == "update" { publishGen1Status() }
            default: break
            }
            return
        }
        switch message.topic {
        case "\(deviceId)/command/switch:0":
            switch text {
            case "on": setRelay(true, source: "MQTT", always: false)
            case "off": setRelay(false, source: "MQTT", always: false)
            case "toggle": setRelay(!relayOn, source: "MQTT", always: false)
            default: break
            }
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
        func switchIdOK() -> Bool {
            let value = params["id"]
            guard case .number(0)? = value else {
                if value == nil {
                    fail(-103, "Missing required argument 'id'!")
                } else {
                    fail(-105, "Argument 'id', value \(value.map { "\($0)" } ?? "") not found!")
                }
                return false
            }
            return true
        }
        switch method {
        case "Switch.Set":
            guard switchIdOK() else { break }
            guard let on = params["on"]?.boolValue else { fail(-103, "Missing required argument 'on'!"); break }
            let wasOn = relayOn
            setRelay(on, source: "MQTT", always: false)
            reply["result"] = ["was_on": .bool(wasOn)]
        case "Switch.Toggle":
            guard switchIdOK() else { break }
            let wasOn = relayOn
            setRelay(!wasOn, source: "MQTT", always: false)
            reply["result"] = ["was_on": .bool(wasOn)]
        case "Switch.GetStatus":
            guard switchIdOK() else { break }
            reply["result"] = state.withLock { s -> JSONValue in
                accrue(&s); return fullStatus(s, source: "MQTT")
            }
        case "Shelly.GetStatus":
            let status = state.withLock { s -> JSONValue in
                accrue(&s); return fullStatus(s, source: "MQTT")
            }
            reply["result"] = ["switch:0": status, "sys": ["mac": .string(macAddress), "restart_required": false]]
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
