import DriverAPI
import Foundation
import Synchronization

struct ShellyDriverConfig: Sendable, Equatable {
    enum Generation: Sendable, Equatable { case gen1, gen2 }

    /// Where Gen2 RPC replies come back: `hub-shelly/<id>/ch<n>/rpc`.
    static let replyRoot = "hub-shelly"

    var id: String
    var generation: Generation
    var channel: Int
    /// Gen2+: the component the entry reads (`switch`, or a meter without a relay).
    var component: ShellyComponent = .switch
    /// Whether the relay meters (meters always do).
    var meter: Bool = true
    /// How long a Gen2 `Switch.Set` may go unanswered before it is reported failed.
    var rpcTimeout: Duration = .seconds(10)
    /// How long after a command an unchanged state still counts as its confirmation.
    var confirmWindow: Duration = .seconds(30)

    /// The RPC `src` (Gen2): replies go to `<src>/rpc`.
    var rpcSource: String { "\(Self.replyRoot)/\(id)/ch\(channel)" }

    var scope: [String] {
        ShellyDriverFactory.mqttScope(id: id, gen: generation == .gen1 ? 1 : 2)
    }

    /// The quantities this entry reports.
    var readings: Set<Quantity> { component.readings(gen1: generation == .gen1, meter: meter) }
}

/// A Shelly relay channel or meter on the hub's broker: follows its state, power and energy topics
/// (Gen1) or its component's status and NotifyStatus notifications (Gen2+: `switch:<n>`, `pm1:<n>`,
/// `em1:<n>` with `em1data:<n>`, `em:<n>` with `emdata:<n>`), and switches a relay (Gen1
/// `relay/<n>/command`, Gen2 `Switch.Set` RPC). A meter without a relay reports readings only.
public final class ShellyDriver: Driver {
    private enum RPCPurpose: Sendable {
        case set(on: Bool)
        /// Status asked after a successful `Switch.Set`: its output is the confirmation.
        case confirm
        case status
    }

    private struct PendingRPC: Sendable {
        var purpose: RPCPurpose
        var sentAt: ContinuousClock.Instant
    }

    private struct State: Sendable {
        var started = false
        var stopped = false
        var mqtt: (any DriverMQTT)?
        /// Deadlines of the `Switch.Set` requests awaiting their answer, by RPC id.
        var deadlines: [Int: (at: ContinuousClock.Instant, method: String)] = [:]
        var available: Bool?
        /// Last known relay state (nil = not known yet).
        var relay: Bool?
        /// The state the last command asked for, until confirmed or `confirmUntil` passes.
        var commanded: Bool?
        var confirmUntil: ContinuousClock.Instant?
        /// Gen2: the status built from full statuses and the partial notifications laid over them.
        var status = ShellySwitchStatus()
        var nextRPCId = Int.random(in: 1...1_000_000)
        var pendingRPCs: [Int: PendingRPC] = [:]
    }

    let config: ShellyDriverConfig
    /// The quantities reported (`capabilities.readings`); a value of another quantity is not.
    private let offered: Set<Quantity>
    private let state = Mutex(State())
    private let gate = DriverReportGate()
    /// Wakes the RPC deadline watcher when a request is sent.
    private let deadlineWakeup = DriverWakeup()

    init(config: ShellyDriverConfig) {
        self.config = config
        self.offered = config.readings
    }

    /// What the model reports: a relay with a meter Gen2+ power, voltage, current and energy (Gen1
    /// power and energy); a relay without a meter none; `pm1` and `em1` all four; `em` power,
    /// current and energy (three phases have no one voltage).
    public var capabilities: DriverCapabilities {
        DriverCapabilities(mqttScope: config.scope, readings: offered)
    }

    /// Gen2: the status as merged so far (full statuses with the notifications laid over them).
    var mergedStatus: ShellySwitchStatus { state.withLock { $0.status } }

    private var gen1Base: String { "shellies/\(config.id)" }
    private var relayTopic: String { "\(gen1Base)/relay/\(config.channel)" }
    private var replyTopic: String { "\(config.rpcSource)/rpc" }
    /// The status key of the component read (`switch:0`, `pm1:0`, `em1:1`).
    private var component: String { config.component.key(config.channel) }
    /// The key of its energy counters when they are apart (`em1data:1`, `emdata:0`).
    private var dataComponent: String? { config.component.dataKey(config.channel) }

    // MARK: - Lifecycle

    /// Subscribes to the device's topics and follows them until cancelled; a child task fails the
    /// `Switch.Set` requests the device does not answer in time.
    public func run(context: any DriverContext) async throws {
        guard let mqtt = context.mqtt else {
            throw DriverError("shelly driver for \(context.deviceId) needs the hub's MQTT broker connection (none is configured)")
        }
        let ok = state.withLock { s -> Bool in
            guard !s.started, !s.stopped else { return false }
            s.started = true
            s.mqtt = mqtt
            return true
        }
        guard ok else { throw DriverError("shelly driver for \(context.deviceId) already ran") }
        gate.open(context)
        do {
            switch config.generation {
            case .gen1:
                try mqtt.subscribe("\(gen1Base)/#")
            case .gen2:
                try mqtt.subscribe("\(config.id)/#")
                try mqtt.subscribe(replyTopic)
            }
        } catch {
            await finish()
            throw DriverError("shelly driver for \(context.deviceId) cannot subscribe to its topics: \(error)")
        }
        requestStatus()
        await withDiscardingTaskGroup { group in
            group.addTask { await self.watchDeadlines() }
            for await message in mqtt.messages {
                if Task.isCancelled { break }
                await handle(message)
            }
            group.cancelAll()
        }
        await finish()
    }

    private func finish() async {
        state.withLock { s in
            s.stopped = true
            s.deadlines = [:]
            s.mqtt = nil
        }
        await gate.close()
    }

    // MARK: - Commands

    /// Switches the relay; the state is reported when the device confirms it.
    /// - Throws: A `DriverError` for activations, when not running, or when the device is offline.
    public func execute(_ command: DriverCommand) async throws {
        guard case .setSwitch(let on) = command else {
            throw DriverError("the shelly driver does not write activations to the device")
        }
        guard config.component.switchable else {
            throw DriverError(
                "Shelly \(config.id) \(component) is a meter without a relay: it cannot be switched (component \(config.component.rawValue) reads readings only)"
            )
        }
        // Called just before `run` began: wait for it (the gate opens once the handle is set).
        _ = await gate.openedContext()
        let (mqtt, available) = state.withLock { s -> ((any DriverMQTT)?, Bool?) in
            (s.started && !s.stopped ? s.mqtt : nil, s.available)
        }
        guard let mqtt else { throw DriverError("shelly driver is not running") }
        if available == false {
            throw DriverError("Shelly \(config.id) is offline (its last will says so)")
        }
        let unchanged = state.withLock { s -> Bool in
            s.commanded = on
            s.confirmUntil = .now + config.confirmWindow
            return s.relay == on
        }
        switch config.generation {
        case .gen1:
            try mqtt.publish("\(relayTopic)/command", Array((on ? "on" : "off").utf8), retain: false)
            // A relay that is already in that state may not announce it again: ask for the status.
            if unchanged { try? mqtt.publish("\(gen1Base)/command", Array("update".utf8), retain: false) }
        case .gen2:
            try sendRPC("Switch.Set", params: ["id": .number(Double(config.channel)), "on": .bool(on)], purpose: .set(on: on), via: mqtt)
        }
    }

    /// Asks the device for its full status (after subscribing, and when it comes back online).
    private func requestStatus() {
        guard let mqtt = state.withLock({ $0.stopped ? nil : $0.mqtt }) else { return }
        switch config.generation {
        case .gen1:
            try? mqtt.publish("\(gen1Base)/command", Array("update".utf8), retain: false)
        case .gen2 where config.component.switchable:
            try? sendRPC("Switch.GetStatus", params: ["id": .number(Double(config.channel))], purpose: .status, via: mqtt)
        case .gen2:
            // A meter's readings are in two components (em1 and em1data): the whole status has both.
            try? sendRPC("Shelly.GetStatus", params: [:], purpose: .status, via: mqtt)
        }
    }

    private func sendRPC(_ method: String, params: JSONValue, purpose: RPCPurpose, via mqtt: any DriverMQTT) throws {
        let id = state.withLock { s -> Int in
            let id = s.nextRPCId
            s.nextRPCId = id >= 1_000_000_000 ? 1 : id + 1
            // Forget requests that were never answered.
            let horizon = ContinuousClock.now - .seconds(120)
            s.pendingRPCs = s.pendingRPCs.filter { $0.value.sentAt > horizon }
            s.pendingRPCs[id] = PendingRPC(purpose: purpose, sentAt: .now)
            return id
        }
        // Keys sorted, as the device's own clients send them.
        let request: JSONValue = [
            "id": .number(Double(id)), "method": .string(method), "params": params.sortingKeys(),
            "src": .string(config.rpcSource)
        ]
        do {
            try mqtt.publish("\(config.id)/rpc", Array(request.serialized().utf8), retain: false)
        } catch {
            _ = state.withLock { $0.pendingRPCs.removeValue(forKey: id) }
            throw error
        }
        if case .set = purpose { armTimeout(rpcId: id, method: method) }
    }

    private func armTimeout(rpcId: Int, method: String) {
        state.withLock { $0.deadlines[rpcId] = (.now + config.rpcTimeout, method) }
        deadlineWakeup.wake()
    }

    /// Child of `run`: reports each `Switch.Set` left unanswered past its deadline as failed.
    private func watchDeadlines() async {
        while !Task.isCancelled {
            await deadlineWakeup.wait(until: state.withLock { $0.deadlines.values.map(\.at).min() })
            if Task.isCancelled { return }
            let now = ContinuousClock.now
            let expired = state.withLock { s -> [String] in
                var expired: [String] = []
                for (id, deadline) in s.deadlines where deadline.at <= now {
                    s.deadlines[id] = nil
                    if s.pendingRPCs.removeValue(forKey: id) != nil { expired.append(deadline.method) }
                }
                return expired
            }
            for method in expired {
                await gate.report(.commandFailed(reason: "Shelly \(config.id) did not answer \(method) within \(config.rpcTimeout)"))
            }
        }
    }

    // MARK: - Incoming

    private func handle(_ message: DriverMQTTMessage) async {
        switch config.generation {
        case .gen1: await handleGen1(message)
        case .gen2: await handleGen2(message)
        }
    }

    private static func now() -> Int64 { Int64(Date().timeIntervalSince1970 * 1_000_000) }

    /// The device's own time of a notification (`params.ts`, Unix seconds) in µs, when plausible:
    /// after 2020 and at most 5 minutes ahead of this clock (a device that has not synchronised
    /// its clock yet counts from 1970). nil: stamp with the arrival time.
    static func deviceTime(_ ts: JSONValue?, now: Double = Date().timeIntervalSince1970) -> Int64? {
        guard let seconds = ShellyPayload.number(ts), seconds >= 1_577_836_800, seconds <= now + 300 else { return nil }
        return Int64((seconds * 1_000_000).rounded())
    }

    private func handleGen1(_ message: DriverMQTTMessage) async {
        let topic = message.topic
        if topic == "\(gen1Base)/online" {
            guard let online = ShellyPayload.bool(word: ShellyPayload.word(message.payload)) else { return }
            await setAvailability(
                online,
                reason: online
                    ? "Shelly \(config.id) is online" : "Shelly \(config.id) went offline (shellies/\(config.id)/online is false)")
        } else if topic == relayTopic {
            let word = ShellyPayload.word(message.payload)
            // "overpower": the relay switched itself off to protect the load.
            let on: Bool? = word == "overpower" ? false : ShellyPayload.bool(word: word)
            guard let on else { return }
            if !message.retained { await noteAlive() }
            await relayObserved(on)
        } else if topic == "\(gen1Base)/info" {
            // The full status (answer to `update`): {"relays":[{"ison":true,...}],"meters":[...],...}
            guard let json = ShellyPayload.object(message.payload),
                let relays = json["relays"]?.arrayValue, config.channel < relays.count,
                let on = ShellyPayload.bool(relays[config.channel]["ison"])
            else { return }
            if !message.retained { await noteAlive() }
            await relayObserved(on)
        } else if topic == "\(relayTopic)/power" {
            guard !message.retained, config.meter,
                let watts = Plausible.check(ShellyPayload.number(text: message.text), Plausible.power)
            else { return }
            await noteAlive()
            await gate.report(.reading(quantity: .power, value: watts, measuredAt: Self.now()))
        } else if topic == "\(relayTopic)/energy" {
            // Watt-minutes since the device booted.
            guard !message.retained, config.meter,
                let wattMinutes = ShellyPayload.number(text: message.text),
                let wh = Plausible.check(wattMinutes / 60, Plausible.energyWh)
            else { return }
            await noteAlive()
            await gate.report(.reading(quantity: .energy, value: wh, measuredAt: Self.now()))
        }
    }

    private func handleGen2(_ message: DriverMQTTMessage) async {
        let topic = message.topic
        if topic == "\(config.id)/online" {
            guard let online = ShellyPayload.bool(word: ShellyPayload.word(message.payload)) else { return }
            await setAvailability(
                online, reason: online ? "Shelly \(config.id) is online" : "Shelly \(config.id) went offline (\(config.id)/online is false)"
            )
        } else if topic == "\(config.id)/status/\(component)" {
            // A full status (the device's status_ntf option on).
            guard let json = ShellyPayload.object(message.payload) else { return }
            await statusObserved(
                ShellySwitchStatus(json: json, component: config.component), readings: !message.retained, forceOutput: false)
        } else if let dataComponent, topic == "\(config.id)/status/\(dataComponent)" {
            guard let json = ShellyPayload.object(message.payload) else { return }
            await statusObserved(
                ShellySwitchStatus(energyData: json, of: config.component), readings: !message.retained, forceOutput: false)
        } else if topic == "\(config.id)/events/rpc" {
            // NotifyStatus: only what changed (status_ntf is off by default, so this is all that
            // comes); NotifyFullStatus: every component. Both stamped with the device's `ts`.
            guard let json = ShellyPayload.object(message.payload),
                let method = json["method"]?.stringValue,
                method == "NotifyStatus" || method == "NotifyFullStatus",
                let params = json["params"], case .object = params,
                let update = status(in: params)
            else { return }
            await statusObserved(update, readings: !message.retained, forceOutput: false, at: Self.deviceTime(params["ts"]))
        } else if topic == replyTopic {
            await handleReply(message)
        }
    }

    private func handleReply(_ message: DriverMQTTMessage) async {
        guard let json = ShellyPayload.object(message.payload), let id = ShellyPayload.int(json["id"]) else { return }
        let pending = state.withLock { s -> PendingRPC? in
            s.deadlines[id] = nil
            return s.pendingRPCs.removeValue(forKey: id)
        }
        guard let pending else { return }  // not ours, answered already, or given up on
        if let error = json["error"], !error.isNull {
            let detail = Self.describe(rpcError: error)
            switch pending.purpose {
            case .set(let on):
                state.withLock { s in
                    if s.commanded == on { s.commanded = nil; s.confirmUntil = nil }
                }
                await gate.report(.commandFailed(reason: "Shelly \(config.id) refused Switch.Set \(on ? "on" : "off"): \(detail)"))
            case .confirm, .status:
                break
            }
            return
        }
        switch pending.purpose {
        case .set:
            // The result ({"was_on":...}) does not say the new state: ask for it, unless a
            // notification already confirmed it.
            let stillPending = state.withLock { $0.commanded != nil }
            if stillPending, let mqtt = state.withLock({ $0.stopped ? nil : $0.mqtt }) {
                try? sendRPC("Switch.GetStatus", params: ["id": .number(Double(config.channel))], purpose: .confirm, via: mqtt)
            }
        case .confirm, .status:
            guard let result = json["result"], case .object = result else { return }
            var isConfirmation = false
            if case .confirm = pending.purpose { isConfirmation = true }
            // `Shelly.GetStatus` answers with every component by key; `Switch.GetStatus` with the switch's own.
            guard let update = status(in: result) ?? (config.component.switchable ? ShellySwitchStatus(json: result) : nil) else { return }
            await statusObserved(update, readings: true, forceOutput: isConfirmation)
        }
    }

    /// Our component's (partial) status in an object keyed by component (NotifyStatus params,
    /// NotifyFullStatus params, a `Shelly.GetStatus` result), with its energy data merged in; nil
    /// when it holds neither.
    private func status(in container: JSONValue) -> ShellySwitchStatus? {
        var found: ShellySwitchStatus?
        if let part = container[component], case .object = part {
            found = ShellySwitchStatus(json: part, component: config.component)
        }
        if let dataComponent, let part = container[dataComponent], case .object = part {
            found = (found ?? ShellySwitchStatus()).merging(ShellySwitchStatus(energyData: part, of: config.component))
        }
        return found
    }

    static func describe(rpcError: JSONValue) -> String {
        guard case .object = rpcError else { return "error \(rpcError.serialized().prefix(200))" }
        let object = rpcError
        let text = object["message"]?.stringValue.map { String($0.prefix(300)) } ?? "unknown error"
        if let code = ShellyPayload.int(object["code"]) { return "\(text) (code \(code))" }
        return text
    }

    // MARK: - Reporting

    /// A (partial) Gen2 status: merged onto what is known (a field it lacks keeps its value);
    /// output reported on change or as the confirmation of a command; readings for the values it
    /// carries that the model offers, stamped `at` (the device's time) or on arrival.
    private func statusObserved(_ update: ShellySwitchStatus, readings: Bool, forceOutput: Bool, at deviceTime: Int64? = nil) async {
        state.withLock { s in s.status = s.status.merging(update) }
        if readings { await noteAlive() }
        if config.component.switchable, let output = update.output {
            await relayObserved(output, force: forceOutput)
        }
        guard readings else { return }
        let at = deviceTime ?? Self.now()
        for (quantity, value) in update.readings where offered.contains(quantity) {
            await gate.report(.reading(quantity: quantity, value: value, measuredAt: at))
        }
    }

    /// Reports the relay state when it changed, or when it is what the last command asked for
    /// (every command gets its confirmation, even when the state did not change).
    private func relayObserved(_ on: Bool, force: Bool = false) async {
        let report = state.withLock { s -> Bool in
            var confirms = false
            if let commanded = s.commanded {
                if let until = s.confirmUntil, until < .now {
                    s.commanded = nil
                    s.confirmUntil = nil
                } else if commanded == on || force {
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

    /// A device that reports is reachable (used when its online topic has not been seen).
    private func noteAlive() async {
        let first = state.withLock { s -> Bool in
            guard s.available == nil else { return false }
            s.available = true
            return true
        }
        if first { await gate.report(.availability(available: true, reason: "Shelly \(config.id) is reporting")) }
    }

    private func setAvailability(_ available: Bool, reason: String) async {
        let (changed, cameBack) = state.withLock { s -> (Bool, Bool) in
            let previous = s.available
            s.available = available
            return (previous != available, available && previous == false)
        }
        if changed { await gate.report(.availability(available: available, reason: reason)) }
        if cameBack { requestStatus() }
    }
}
