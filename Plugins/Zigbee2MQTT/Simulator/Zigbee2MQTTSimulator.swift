import Foundation
import HubJSON
import MQTT
import Synchronization

/// A Zigbee2MQTT bridge with a few plugs on an MQTT broker, speaking Zigbee2MQTT's MQTT API as the
/// real bridge does:
///
/// - retained `<base>/bridge/state` `{"state":"online"}` (last will `{"state":"offline"}`), retained
///   `<base>/bridge/devices` (the coordinator and each device with its `definition.exposes`), and a
///   retained `<base>/<name>/availability` `{"state":"online"}` per device (`online` with `legacyAvailability`);
/// - `<base>/<name>/set` with `{"state":"ON"|"OFF"|"TOGGLE"}` (`state_<endpoint>` for a gang)
///   switches, and `<base>/<name>/get` asks; both are answered with the device's whole state on
///   `<base>/<name>` (not retained, Zigbee2MQTT's default), as is every change;
/// - the metered plug publishes its state (`power` W, `voltage` V, `current` A, `energy` kWh) every
///   `statusPeriod`.
public final class Zigbee2MQTTSimulator: Sendable {
    /// One simulated device.
    public struct Device: Sendable, Equatable {
        /// What it is.
        public enum Kind: Sendable, Equatable {
            /// A plug with a power meter (exposes like a TuYa TS011F_plug_1).
            case meteredPlug
            /// A plug without a meter.
            case plainPlug
            /// A switch with one relay per endpoint (`l1`, `l2`: a TuYa TS0002 two-gang switch).
            case multiGang(endpoints: [String])
        }
        /// Its friendly name (may contain `/` and spaces).
        public var friendlyName: String
        /// Its IEEE address (`0xa4c138...`).
        public var ieeeAddress: String
        /// What it is.
        public var kind: Kind

        /// A device.
        /// - Parameters:
        ///   - friendlyName: Its name in topics.
        ///   - ieeeAddress: Its IEEE address.
        ///   - kind: What it is.
        public init(friendlyName: String, ieeeAddress: String, kind: Kind) {
            self.friendlyName = friendlyName
            self.ieeeAddress = ieeeAddress
            self.kind = kind
        }

        /// The endpoints of its relays: `[nil]` for a one-relay plug.
        public var relayEndpoints: [String?] {
            if case .multiGang(let endpoints) = kind { return endpoints }
            return [nil]
        }
    }

    /// The broker, the base topic and the devices.
    public struct Options: Sendable {
        /// The broker's host.
        public var host: String
        /// The broker's port.
        public var port: Int
        /// Zigbee2MQTT's `mqtt.base_topic`.
        public var baseTopic: String
        /// The devices on the bridge.
        public var devices: [Device]
        /// Seconds between the metered plug's state publishes (a real plug reports on change and
        /// at its reporting interval).
        public var statusPeriod: Double
        /// What the metered plug's load draws while on, W.
        public var loadWatts: Double
        /// Mains voltage, V.
        public var voltage: Double
        /// Availability as the bare words `online`/`offline` (Zigbee2MQTT's `legacy_availability_payload`).
        public var legacyAvailability: Bool
        /// The broker user name, nil for none.
        public var username: String?
        /// The broker password, with `username`.
        public var password: String?

        /// A bridge on a local broker under `zigbee2mqtt` with the default devices.
        public init(
            host: String = "127.0.0.1", port: Int = 1883, baseTopic: String = "zigbee2mqtt", devices: [Device] = Options.defaultDevices,
            statusPeriod: Double = 10, loadWatts: Double = 60, voltage: Double = 230, legacyAvailability: Bool = false,
            username: String? = nil, password: String? = nil
        ) {
            self.host = host
            self.port = port
            self.baseTopic = baseTopic
            self.devices = devices
            self.statusPeriod = statusPeriod
            self.loadWatts = loadWatts
            self.voltage = voltage
            self.legacyAvailability = legacyAvailability
            self.username = username
            self.password = password
        }

        /// A metered plug, a plain plug and a two-gang switch, with a `/` and spaces in their names.
        public static let defaultDevices: [Device] = [
            Device(friendlyName: "living room/metered plug", ieeeAddress: "0xa4c1389f9e792b7f", kind: .meteredPlug),
            Device(friendlyName: "hall plug", ieeeAddress: "0x000d6ffffe1c2b3a", kind: .plainPlug),
            Device(friendlyName: "kitchen/switch", ieeeAddress: "0xa4c138a75a17fa91", kind: .multiGang(endpoints: ["l1", "l2"]))
        ]
    }

    private struct State: Sendable {
        var client: MQTTClient?
        var tasks: [Task<Void, Never>] = []
        var stopped = false
        /// Relay by device name and endpoint ("" for none).
        var relays: [String: [String: Bool]] = [:]
        var online: [String: Bool] = [:]
        /// The metered plug's counter, kWh.
        var energyKWh: [String: Double] = [:]
        var lastAccrual = ContinuousClock.now
    }

    /// How it was set up.
    public let options: Options
    private let state = Mutex(State())

    /// A simulator; publishes nothing until `start()`.
    public init(options: Options = Options()) {
        self.options = options
        state.withLock { s in
            for device in options.devices {
                s.relays[device.friendlyName] = Dictionary(uniqueKeysWithValues: device.relayEndpoints.map { ($0 ?? "", false) })
                s.online[device.friendlyName] = true
                if device.kind == .meteredPlug { s.energyKWh[device.friendlyName] = 12.05 }
            }
        }
    }

    private var base: String { options.baseTopic }
    private var bridgeState: String { "\(base)/bridge/state" }

    /// A relay's state (`endpoint` nil for a one-relay plug); false for an unknown device.
    public func relay(_ friendlyName: String, endpoint: String? = nil) -> Bool {
        state.withLock { $0.relays[friendlyName]?[endpoint ?? ""] ?? false }
    }

    /// The device's button: toggles the relay and publishes the new state.
    public func press(_ friendlyName: String, endpoint: String? = nil) {
        guard let device = options.devices.first(where: { $0.friendlyName == friendlyName }) else { return }
        state.withLock { s in
            accrue(&s)
            let key = endpoint ?? ""
            if let on = s.relays[friendlyName]?[key] { s.relays[friendlyName]?[key] = !on }
        }
        publishState(device)
    }

    /// Marks a device reachable or not: its retained availability changes (Zigbee2MQTT's availability feature).
    public func setOnline(_ friendlyName: String, _ online: Bool) {
        state.withLock { $0.online[friendlyName] = online }
        publishAvailability(friendlyName)
    }

    // MARK: - Lifecycle

    /// Connects, subscribes to the devices' `set` and `get` topics and publishes the bridge's state,
    /// its device list, the devices' availability and state.
    /// - Throws: `MQTTError` when the client cannot be made or connect, `.stopped` when already started or stopped.
    public func start() async throws {
        var mqttOptions = MQTTOptions(
            host: options.host, port: options.port, clientId: "zigbee2mqtt-sim-\(UInt32.random(in: 0...UInt32.max))",
            username: options.username, password: options.password, cleanSession: true,
            will: .init(topic: bridgeState, payload: availabilityPayload(false), qos: 1, retain: true))
        mqttOptions.reconnectDelay = .init(min: .seconds(1), max: .seconds(5))
        let client = try MQTTClient(options: mqttOptions)
        for device in options.devices {
            try client.subscribe("\(base)/\(device.friendlyName)/set", qos: 1)
            try client.subscribe("\(base)/\(device.friendlyName)/get", qos: 1)
        }
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
                if case .connected = event { announce() }
            }
        }
        let messages = Task { [self] in
            for await message in client.messages { handle(message) }
        }
        let period = max(0.05, options.statusPeriod)
        let ticker = Task { [self] in
            while !Task.isCancelled {
                guard (try? await Task.sleep(for: .seconds(period))) != nil else { return }
                for device in options.devices where device.kind == .meteredPlug { publishState(device) }
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

    /// Disconnects cleanly, leaving the bridge's state `offline` (retained) behind, as Zigbee2MQTT does when it stops.
    public func stop() async {
        let (client, tasks) = state.withLock { s -> (MQTTClient?, [Task<Void, Never>]) in
            s.stopped = true
            defer { s.client = nil; s.tasks = [] }
            return (s.client, s.tasks)
        }
        for task in tasks { task.cancel() }
        await client?.stop(finalMessage: (bridgeState, availabilityPayload(false), true))
    }

    /// Drops the connection without saying goodbye: the broker publishes the last will.
    public func cutPower() async {
        let (client, tasks) = state.withLock { s -> (MQTTClient?, [Task<Void, Never>]) in
            s.stopped = true
            defer { s.client = nil; s.tasks = [] }
            return (s.client, s.tasks)
        }
        for task in tasks { task.cancel() }
        client?.abort()
    }

    /// Runs one bridge until cancelled, printing what it serves.
    public static func runForever(options: Options, print output: @Sendable (String) -> Void = { Swift.print($0) }) async throws {
        let simulator = Zigbee2MQTTSimulator(options: options)
        try await simulator.start()
        output("zigbee2mqtt simulator on \(options.host):\(options.port), base topic \(options.baseTopic):")
        for device in options.devices {
            output("  \(device.ieeeAddress) \"\(device.friendlyName)\" \(describe(device.kind))")
        }
        do {
            while !Task.isCancelled { try await Task.sleep(nanoseconds: 3_600_000_000_000) }
        } catch {
            await simulator.stop()
            if error is CancellationError { return }
            throw error
        }
        await simulator.stop()
    }

    static func describe(_ kind: Device.Kind) -> String {
        switch kind {
        case .meteredPlug: return "metered plug"
        case .plainPlug: return "plug"
        case .multiGang(let endpoints): return "\(endpoints.count)-gang switch (\(endpoints.joined(separator: ", ")))"
        }
    }

    // MARK: - Bridge behaviour

    private func announce() {
        publish(bridgeState, availabilityPayload(true), retain: true)
        publish("\(base)/bridge/devices", Array(deviceList().serialized().utf8), retain: true)
        for device in options.devices {
            publishAvailability(device.friendlyName)
            publishState(device)
        }
    }

    private func availabilityPayload(_ online: Bool) -> [UInt8] {
        let word = online ? "online" : "offline"
        return Array((options.legacyAvailability ? word : JSONValue.object([("state", .string(word))]).serialized()).utf8)
    }

    private func publishAvailability(_ name: String) {
        let online = state.withLock { $0.online[name] ?? false }
        publish("\(base)/\(name)/availability", availabilityPayload(online), retain: true)
    }

    private func handle(_ message: MQTTMessage) {
        for device in options.devices {
            let topic = "\(base)/\(device.friendlyName)"
            if message.topic == "\(topic)/set" {
                guard state.withLock({ $0.online[device.friendlyName] == true }),
                    let json = try? JSONValue.parse(message.payload), let fields = json.objectValue
                else { return }
                state.withLock { s in
                    accrue(&s)
                    for (key, value) in fields {
                        guard let endpoint = Self.endpoint(ofStateKey: key), let word = value.stringValue?.uppercased(),
                            let current = s.relays[device.friendlyName]?[endpoint]
                        else { continue }
                        switch word {
                        case "ON": s.relays[device.friendlyName]?[endpoint] = true
                        case "OFF": s.relays[device.friendlyName]?[endpoint] = false
                        case "TOGGLE": s.relays[device.friendlyName]?[endpoint] = !current
                        default: break
                        }
                    }
                }
                publishState(device)
                return
            }
            if message.topic == "\(topic)/get" {
                if state.withLock({ $0.online[device.friendlyName] == true }) { publishState(device) }
                return
            }
        }
    }

    /// `state` -> "", `state_l2` -> "l2"; nil for any other key.
    static func endpoint(ofStateKey key: String) -> String? {
        if key == "state" { return "" }
        guard key.hasPrefix("state_") else { return nil }
        return String(key.dropFirst("state_".count))
    }

    private func accrue(_ s: inout State) {
        let now = ContinuousClock.now
        let elapsed = now - s.lastAccrual
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        s.lastAccrual = now
        for device in options.devices where device.kind == .meteredPlug && s.relays[device.friendlyName]?[""] == true {
            s.energyKWh[device.friendlyName, default: 0] += options.loadWatts * seconds / 3_600_000
        }
    }

    /// The device's whole state, as Zigbee2MQTT publishes it (keys sorted).
    private func publishState(_ device: Device) {
        let payload = state.withLock { s -> JSONValue in
            accrue(&s)
            var fields: [(String, JSONValue)] = [("linkquality", .number(Double(80 + Int.random(in: 0...40))))]
            for endpoint in device.relayEndpoints {
                let on = s.relays[device.friendlyName]?[endpoint ?? ""] ?? false
                fields.append((endpoint.map { "state_\($0)" } ?? "state", .string(on ? "ON" : "OFF")))
            }
            if device.kind == .meteredPlug {
                let on = s.relays[device.friendlyName]?[""] ?? false
                let watts = on ? options.loadWatts : 0
                fields += [
                    ("power", .number(watts)), ("voltage", .number(options.voltage)),
                    ("current", .number((watts / options.voltage * 1000).rounded() / 1000)),
                    ("energy", .number(((s.energyKWh[device.friendlyName] ?? 0) * 1000).rounded() / 1000))
                ]
            }
            return JSONValue.object(fields).sortingKeys()
        }
        publish("\(base)/\(device.friendlyName)", Array(payload.serialized().utf8), retain: false)
    }

    private func publish(_ topic: String, _ payload: [UInt8], retain: Bool) {
        guard let client = state.withLock({ $0.stopped ? nil : $0.client }) else { return }
        _ = try? client.publish(topic, payload, qos: 1, retain: retain)
    }

    // MARK: - bridge/devices

    /// `<base>/bridge/devices`: the coordinator and every device, with the exposes Zigbee2MQTT
    /// gives such devices (a switch with a `state` feature per relay; the meter's numerics).
    func deviceList() -> JSONValue {
        var list: [JSONValue] = [
            [
                "friendly_name": "Coordinator", "ieee_address": "0x00124b00120144ae", "type": "Coordinator", "network_address": 0,
                "supported": true, "disabled": false, "interview_completed": true, "definition": nil
            ]
        ]
        for (index, device) in options.devices.enumerated() {
            var exposes: [JSONValue] = device.relayEndpoints.map(Self.switchExpose)
            let model: (String, String, String)
            switch device.kind {
            case .meteredPlug:
                exposes += [
                    Self.numeric("power", "W"), Self.numeric("current", "A"), Self.numeric("voltage", "V"), Self.numeric("energy", "kWh")
                ]
                model = ("TS011F_plug_1", "Tuya", "Smart plug (with power monitoring)")
            case .plainPlug:
                model = ("E1603/E1702/E1708", "IKEA", "Control outlet")
            case .multiGang:
                model = ("TS0002", "Tuya", "2 gang switch")
            }
            exposes.append(Self.numeric("linkquality", "lqi"))
            list.append([
                "friendly_name": .string(device.friendlyName), "ieee_address": .string(device.ieeeAddress), "type": "Router",
                "network_address": .number(Double(1000 + index)), "supported": true, "disabled": false, "interview_completed": true,
                "power_source": "Mains (single phase)",
                "definition": [
                    "model": .string(model.0), "vendor": .string(model.1), "description": .string(model.2), "exposes": .array(exposes)
                ]
            ])
        }
        return .array(list)
    }

    static func switchExpose(_ endpoint: String?) -> JSONValue {
        var feature: JSONValue = [
            "access": 7, "description": "On/off state of the switch", "label": "State", "name": "state",
            "property": .string(endpoint.map { "state_\($0)" } ?? "state"), "type": "binary", "value_off": "OFF", "value_on": "ON",
            "value_toggle": "TOGGLE"
        ]
        var expose: JSONValue = ["features": [], "type": "switch"]
        if let endpoint {
            feature["endpoint"] = .string(endpoint)
            expose["endpoint"] = .string(endpoint)
        }
        expose["features"] = [feature]
        return expose
    }

    static func numeric(_ name: String, _ unit: String) -> JSONValue {
        ["access": 5, "name": .string(name), "property": .string(name), "type": "numeric", "unit": .string(unit)]
    }
}
