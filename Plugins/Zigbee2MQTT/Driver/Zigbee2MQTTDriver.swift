import DriverAPI
import Foundation
import Synchronization

/// One Zigbee2MQTT device (or one gang of it) as the driver addresses it.
struct Zigbee2MQTTConfig: Sendable, Equatable {
    /// The device's friendly name, as it appears in its topics.
    var friendlyName: String
    /// Zigbee2MQTT's base topic.
    var baseTopic: String
    /// The gang (`l1`), or nil for a one-gang device.
    var endpoint: String?
    /// The quantities to report and declare; nil: whatever a state carries, none declared.
    var readings: [Quantity]?
    /// Whether the hub announces the device to Home Assistant.
    var homeAssistant: Bool
    /// How long after a command an unchanged state still counts as its confirmation.
    var confirmWindow: Duration = .seconds(30)

    /// `<base>/<friendly name>`: the device's state.
    var deviceTopic: String { "\(baseTopic)/\(friendlyName)" }
    /// Commands.
    var setTopic: String { "\(deviceTopic)/set" }
    /// State requests.
    var getTopic: String { "\(deviceTopic)/get" }
    /// The device's availability (Zigbee2MQTT's availability feature).
    var availabilityTopic: String { "\(deviceTopic)/availability" }
    /// The bridge's own state (its last will says offline).
    var bridgeStateTopic: String { "\(baseTopic)/bridge/state" }
    /// The state's key: `state`, or `state_<endpoint>`.
    var stateKey: String { endpoint.map { "state_\($0)" } ?? "state" }
    /// The device as messages name it: `"kitchen/plug"`, `"desk" l2`.
    var label: String { endpoint.map { "\"\(friendlyName)\" \($0)" } ?? "\"\(friendlyName)\"" }

    /// The topics the driver uses, exactly (no wildcards: a friendly name may be a prefix of another's).
    var scope: [String] { [deviceTopic, setTopic, getTopic, availabilityTopic, bridgeStateTopic] }
}

/// A Zigbee plug or switch gang through Zigbee2MQTT on the hub's broker: follows the device's state
/// topic (relay and meter), its availability and the bridge's state, and switches it with
/// `{"state":"ON"}` (or `{"state_<endpoint>":"ON"}`) on `<base>/<name>/set`.
///
/// - State: `state` / `state_<endpoint>` `ON`/`OFF`; `power` W, `voltage` V, `current` A, `energy`
///   kWh (reported as Wh), with the `_<endpoint>` suffix for a gang. `null` and other keys are
///   ignored. A state the broker had retained when the driver subscribed is the last known relay
///   state, never a reading stamped now.
/// - After a command, the next state showing the asked-for value (within 30 s) is reported even
///   when unchanged; otherwise changes only.
/// - Availability: the bridge's `<base>/bridge/state` and the device's `<base>/<name>/availability`
///   (`{"state":"online"}` or the legacy `online`; offline of either makes it unavailable).
/// - Payloads that cannot be read are ignored, counted (`ignoredPayloads`) and said (`lastProblem`).
public final class Zigbee2MQTTDriver: Driver {
    private struct State: Sendable {
        var started = false
        var stopped = false
        var mqtt: (any DriverMQTT)?
        /// The bridge's state: nil until seen.
        var bridgeOnline: Bool?
        /// The device's availability: nil until seen (the availability feature may be off).
        var deviceOnline: Bool?
        /// What was last reported.
        var available: Bool?
        var relay: Bool?
        var commanded: Bool?
        var confirmUntil: ContinuousClock.Instant?
        var ignored = 0
        var lastProblem: String?
    }

    let config: Zigbee2MQTTConfig
    private let state = Mutex(State())
    private let gate = DriverReportGate()

    init(config: Zigbee2MQTTConfig) {
        self.config = config
    }

    /// The exact topics of the device and the bridge's state; the readings the settings name; not
    /// announced to Home Assistant unless `home_assistant` is true (Zigbee2MQTT announces it).
    public var capabilities: DriverCapabilities {
        DriverCapabilities(
            mqttScope: config.scope, readings: Set(config.readings ?? []), announcesToHomeAssistant: config.homeAssistant)
    }

    /// Payloads on the device's topics that could not be read.
    public var ignoredPayloads: Int { state.withLock { $0.ignored } }

    /// Why the latest unreadable payload was ignored (topic and what was wrong), nil when none was.
    public var lastProblem: String? { state.withLock { $0.lastProblem } }

    // MARK: - Lifecycle

    /// Subscribes to the device's state and availability and the bridge's state, asks the device
    /// for its state, and follows them until cancelled.
    public func run(context: any DriverContext) async throws {
        let ok = state.withLock { s -> Bool in
            guard !s.started, !s.stopped else { return false }
            s.started = true
            return true
        }
        guard ok else { throw DriverError("zigbee2mqtt driver for \(context.deviceId) already ran") }
        gate.open(context)
        guard let mqtt = context.mqtt else {
            await gate.report(
                .availability(available: false, reason: "the hub has no MQTT connection for Zigbee2MQTT device \(config.label)"))
            await untilCancelled()
            await finish()
            return
        }
        state.withLock { $0.mqtt = mqtt }
        do {
            try mqtt.subscribe(config.bridgeStateTopic)
            try mqtt.subscribe(config.availabilityTopic)
            try mqtt.subscribe(config.deviceTopic)
        } catch {
            await finish()
            throw DriverError("zigbee2mqtt driver for \(context.deviceId) cannot subscribe to its topics: \(error)")
        }
        requestState()
        for await message in mqtt.messages {
            if Task.isCancelled { break }
            await handle(message)
        }
        await finish()
    }

    private func finish() async {
        state.withLock { s in
            s.stopped = true
            s.mqtt = nil
        }
        await gate.close()
    }

    // MARK: - Commands

    /// Publishes `{"state":"ON"}` (or `{"state_<endpoint>":"OFF"}`) on `<base>/<name>/set`; the
    /// device's next state confirms it.
    /// - Throws: A `DriverError` for activations, when not running, or when the bridge or the device is offline.
    public func execute(_ command: DriverCommand) async throws {
        guard case .setSwitch(let on) = command else {
            throw DriverError("the zigbee2mqtt driver does not store activations on the device")
        }
        _ = await gate.openedContext()
        let (mqtt, bridge, device) = state.withLock { s in (s.started && !s.stopped ? s.mqtt : nil, s.bridgeOnline, s.deviceOnline) }
        guard let mqtt else { throw DriverError("zigbee2mqtt driver for \(config.label) is not running") }
        if bridge == false {
            throw DriverError("the Zigbee2MQTT bridge is offline (\(config.bridgeStateTopic)): cannot switch \(config.label)")
        }
        if device == false { throw DriverError("Zigbee2MQTT reports \(config.label) offline (\(config.availabilityTopic))") }
        state.withLock { s in
            s.commanded = on
            s.confirmUntil = .now + config.confirmWindow
        }
        let payload: JSONValue = .object([(config.stateKey, .string(on ? "ON" : "OFF"))])
        do {
            try mqtt.publish(config.setTopic, Array(payload.serialized().utf8), retain: false)
        } catch {
            state.withLock { s in
                if s.commanded == on { s.commanded = nil; s.confirmUntil = nil }
            }
            throw (error as? DriverError) ?? DriverError("publishing \(config.setTopic) failed: \(error)")
        }
    }

    /// Asks Zigbee2MQTT to read the relay from the device (`{"state":""}` on `/get`): its state is
    /// not retained by default, so the hub learns it at start only by asking.
    private func requestState() {
        guard let mqtt = state.withLock({ $0.stopped ? nil : $0.mqtt }) else { return }
        let payload: JSONValue = .object([(config.stateKey, .string(""))])
        try? mqtt.publish(config.getTopic, Array(payload.serialized().utf8), retain: false)
    }

    // MARK: - Incoming

    private func handle(_ message: DriverMQTTMessage) async {
        switch message.topic {
        case config.deviceTopic:
            await stateMessage(message)
        case config.availabilityTopic:
            switch Zigbee2MQTTPayload.availability(message.payload) {
            case .success(let online): await availabilityChanged(device: online)
            case .failure(let problem): ignore(message, problem)
            }
        case config.bridgeStateTopic:
            switch Zigbee2MQTTPayload.availability(message.payload) {
            case .success(let online): await availabilityChanged(bridge: online)
            case .failure(let problem): ignore(message, problem)
            }
        default:
            break
        }
    }

    private func ignore(_ message: DriverMQTTMessage, _ problem: Zigbee2MQTTPayload.Problem) {
        state.withLock { s in
            s.ignored += 1
            s.lastProblem = "ignored \(message.topic): \(problem.text)"
        }
    }

    private func stateMessage(_ message: DriverMQTTMessage) async {
        let json: JSONValue
        switch Zigbee2MQTTPayload.object(message.payload) {
        case .success(let value): json = value
        case .failure(let problem): return ignore(message, problem)
        }
        // A retained state is the last one the broker kept (Zigbee2MQTT's `retain` device option):
        // of unknown age, so the relay as last known and no readings, and no sign of life.
        if !message.retained { await noteAlive() }
        if let on = Zigbee2MQTTPayload.relay(json[config.stateKey]) {
            await relayObserved(on)
        }
        guard !message.retained else { return }
        let now = Int64(Date().timeIntervalSince1970 * 1_000_000)
        for (quantity, value) in Zigbee2MQTTPayload.readings(json, endpoint: config.endpoint) {
            if let wanted = config.readings, !wanted.contains(quantity) { continue }
            await gate.report(.reading(quantity: quantity, value: value, measuredAt: now))
        }
    }

    /// Reports the relay when it changed, or when it is what the last command asked for.
    private func relayObserved(_ on: Bool) async {
        let report = state.withLock { s -> Bool in
            var confirms = false
            if let commanded = s.commanded {
                if let until = s.confirmUntil, until < .now {
                    s.commanded = nil
                    s.confirmUntil = nil
                } else if commanded == on {
                    confirms = true
                    s.commanded = nil
                    s.confirmUntil = nil
                }
            }
            let changed = s.relay != on
            s.relay = on
            return changed || confirms
        }
        if report { await gate.report(.switchState(on: on, manual: nil)) }
    }

    /// A live state while nothing has said whether the device is reachable: it is.
    private func noteAlive() async {
        let first = state.withLock { s -> Bool in
            guard s.available == nil else { return false }
            s.available = true
            return true
        }
        if first { await gate.report(.availability(available: true, reason: "Zigbee2MQTT publishes \(config.deviceTopic)")) }
    }

    private func availabilityChanged(bridge: Bool? = nil, device: Bool? = nil) async {
        let (report, cameBack) = state.withLock { s -> ((Bool, String)?, Bool) in
            if let bridge { s.bridgeOnline = bridge }
            if let device { s.deviceOnline = device }
            let now: (Bool, String)?
            if s.bridgeOnline == false {
                now = (false, "the Zigbee2MQTT bridge is offline (\(config.bridgeStateTopic))")
            } else if s.deviceOnline == false {
                now = (false, "Zigbee2MQTT reports \(config.label) offline (\(config.availabilityTopic))")
            } else if s.deviceOnline == true {
                now = (true, "Zigbee2MQTT reports \(config.label) online")
            } else if s.bridgeOnline == true {
                now = (
                    true, "the Zigbee2MQTT bridge is online (\(config.bridgeStateTopic)); it publishes no availability for \(config.label)"
                )
            } else {
                now = nil
            }
            guard let now, now.0 != s.available else { return (nil, false) }
            let cameBack = now.0 && s.available == false
            s.available = now.0
            return (now, cameBack)
        }
        if let (available, reason) = report { await gate.report(.availability(available: available, reason: reason)) }
        if cameBack { requestState() }
    }
}
