import DriverAPI
import Foundation
import Synchronization

/// A running Tasmota device on the hub's broker: follows its last will, relay state and energy
/// meter, and switches its relay with `cmnd/<t>/POWER<n>` (topics from its FullTopic and prefixes).
///
/// - Availability comes from the retained `tele/<t>/LWT` (`Online`/`Offline`, any case).
/// - The relay state comes from `stat/<t>/RESULT`, `stat/<t>/POWER<n>` (plain text, or JSON with
///   `SetOption4 1`) and `tele/<t>/STATE`, in the device's `StateText` words. After a command, the
///   device's next confirmation is reported even if the state did not change; otherwise only
///   changes are reported. A command not confirmed within the confirmation timeout (10 s) or
///   interrupted by the device's last will is reported with `.commandFailed`.
/// - `tele/<t>/SENSOR` `ENERGY` gives power (W), voltage (V), current (A) and energy
///   (`Total` kWh as Wh) of its meter channel; what a multi-channel meter sums (a scalar `Total`)
///   is not booked to one relay of several. Malformed or absurd payloads are ignored and counted
///   (`ignoredPayloads`).
public final class TasmotaDriver: Driver {
    private struct State: Sendable {
        var started = false
        var stopped = false
        /// Confirmation deadlines of the switch commands sent, by their number.
        var deadlines: [Int: ContinuousClock.Instant] = [:]
        /// nil = not known yet.
        var available: Bool?
        var lastOn: Bool?
        /// Switch commands sent, and how many of them were confirmed (or given up on).
        var issued = 0
        var confirmed = 0
        /// The last stat confirmation not yet matched with its twin (Tasmota answers a switch on
        /// both `stat/<t>/RESULT` and `stat/<t>/POWER`): one device event, one confirmation.
        var unpaired: (fromResult: Bool, on: Bool)?
        var ignored = 0
    }

    let topics: TasmotaTopics
    let energyChannel: Int
    let words: TasmotaStateText
    let confirmationTimeout: Duration
    private let state = Mutex(State())
    private let gate = DriverReportGate()
    /// Wakes the confirmation watcher when a command is sent.
    private let deadlineWakeup = DriverWakeup()

    init(topics: TasmotaTopics, energyChannel: Int, words: TasmotaStateText = .standard, confirmationTimeout: Duration) {
        self.topics = topics
        self.energyChannel = energyChannel
        self.words = words
        self.confirmationTimeout = confirmationTimeout
    }

    /// The energy monitor's `ENERGY` values: power, voltage, current and the `Total` counter.
    public var capabilities: DriverCapabilities {
        DriverCapabilities(mqttScope: topics.scope, readings: [.power, .voltage, .current, .energy])
    }

    /// Payloads on the device's topics that could not be read (malformed JSON, garbage, absurd values).
    public var ignoredPayloads: Int { state.withLock { $0.ignored } }

    /// Subscribes to the device's topics and follows them until cancelled; a child task fails
    /// the commands the device does not confirm in time.
    public func run(context: any DriverContext) async throws {
        let ok = state.withLock { s -> Bool in
            guard !s.started, !s.stopped else { return false }
            s.started = true
            return true
        }
        guard ok else { throw DriverError("tasmota driver for \(context.deviceId) already ran") }
        gate.open(context)
        defer { state.withLock { $0.stopped = true } }
        guard let mqtt = context.mqtt else {
            await report(.availability(available: false, reason: "the hub has no MQTT connection for Tasmota device \(topics.topic)"))
            await untilCancelled()
            await gate.close()
            return
        }
        do {
            for filter in topics.subscriptions { try mqtt.subscribe(filter) }
            // Ask for the relay state (an empty payload is a query; never retained).
            try mqtt.publish(topics.commandTopic, [], retain: false)
        } catch {
            await gate.close()
            throw error
        }
        await withDiscardingTaskGroup { group in
            group.addTask { await self.watchConfirmations() }
            for await message in mqtt.messages {
                if Task.isCancelled { break }
                await handle(message)
            }
            group.cancelAll()
        }
        state.withLock { $0.stopped = true }
        await gate.close()
    }

    /// Switches the relay; `.commandFailed` is reported when no confirmation comes in time.
    /// - Throws: A `DriverError` for activations, when not running or offline, or when the command cannot be published.
    public func execute(_ command: DriverCommand) async throws {
        switch command {
        case .writeActivations:
            throw DriverError("the tasmota driver does not store activations on the device")
        case .setSwitch(let on):
            guard let context = await gate.openedContext(), !state.withLock({ $0.stopped }) else {
                throw DriverError("tasmota driver for \(topics.topic) is not running")
            }
            guard let mqtt = context.mqtt else { throw DriverError("no MQTT connection: cannot switch Tasmota device \(topics.topic)") }
            let available = state.withLock { $0.available }
            if available == false {
                throw DriverError("Tasmota device \(topics.topic) is offline (its last will says Offline)")
            }
            let n = state.withLock { s -> Int in
                s.issued += 1; return s.issued
            }
            do {
                try mqtt.publish(topics.commandTopic, Array((on ? "ON" : "OFF").utf8), retain: false)
            } catch {
                state.withLock { s in if s.issued == n && s.confirmed < n { s.issued -= 1 } }
                throw (error as? DriverError) ?? DriverError("publishing \(topics.commandTopic) failed: \(error)")
            }
            armTimeout(for: n)
        }
    }

    // MARK: - Messages

    private func handle(_ message: DriverMQTTMessage) async {
        let topic = message.topic
        if topic == topics.lwtTopic {
            guard message.payload.count <= 64, let online = TasmotaPayload.availability(message.text) else { return ignore() }
            await setAvailability(online, reason: online ? "Tasmota LWT Online" : "Tasmota reports Offline (last will)")
        } else if topic == topics.resultTopic {
            // RESULT answers every command (also other ones); only a POWER field concerns us.
            guard let object = TasmotaPayload.object(message.payload) else { return ignore() }
            guard let on = TasmotaPayload.power(in: object, names: topics.acceptedPowerNames, words: words) else { return }
            await deviceTalks(message)
            await relay(on, confirmation: .result)
        } else if topics.statPowerTopics.contains(topic) {
            if message.payload.first == UInt8(ascii: "{") {
                // SetOption4 1: the JSON answer comes on the command's own topic instead of RESULT.
                guard message.payload.count <= 256, let object = TasmotaPayload.object(message.payload),
                    let on = TasmotaPayload.power(in: object, names: topics.acceptedPowerNames, words: words)
                else { return ignore() }
                await deviceTalks(message)
                return await relay(on, confirmation: .result)
            }
            guard message.payload.count <= 64, let on = TasmotaPayload.power(message.text, words: words) else { return ignore() }
            await deviceTalks(message)
            await relay(on, confirmation: .power)
        } else if topic == topics.stateTopic {
            guard let object = TasmotaPayload.object(message.payload) else { return ignore() }
            await deviceTalks(message)
            if let on = TasmotaPayload.power(in: object, names: topics.acceptedPowerNames, words: words) {
                await relay(on, confirmation: nil)
            }
        } else if topic == topics.sensorTopic {
            guard let object = TasmotaPayload.object(message.payload) else { return ignore() }
            await deviceTalks(message)
            let readings = TasmotaPayload.energyReadings(object, channel: energyChannel, split: topics.relays > 1)
            let now = Int64(Date().timeIntervalSince1970 * 1_000_000)
            for (quantity, value) in readings {
                await report(.reading(quantity: quantity, value: value, measuredAt: now))
            }
        }
        // Anything else (INFO1, UPTIME, our own cmnd echo...) is not ours to read.
    }

    private func ignore() {
        state.withLock { $0.ignored += 1 }
    }

    /// A live message from the device while its availability is unknown (no retained LWT): it is up.
    private func deviceTalks(_ message: DriverMQTTMessage) async {
        guard !message.retained, state.withLock({ $0.available == nil }) else { return }
        await setAvailability(true, reason: "Tasmota answering on \(topics.base(.stat))")
    }

    private enum Confirmation { case result, power }

    private func relay(_ on: Bool, confirmation: Confirmation?) async {
        let (changed, confirms) = state.withLock { s -> (Bool, Bool) in
            let changed = s.lastOn != on
            s.lastOn = on
            guard let confirmation else { return (changed, false) }
            let fromResult = confirmation == .result
            if let twin = s.unpaired, twin.fromResult != fromResult, twin.on == on {
                s.unpaired = nil
                return (changed, false)
            }
            s.unpaired = (fromResult, on)
            guard s.confirmed < s.issued else { return (changed, false) }
            s.confirmed += 1
            return (changed, true)
        }
        if changed || confirms { await report(.switchState(on: on, manual: nil)) }
    }

    private func setAvailability(_ available: Bool, reason: String) async {
        let (changed, failedCommands) = state.withLock { s -> (Bool, Bool) in
            let changed = s.available != available
            s.available = available
            var failed = false
            if !available && s.confirmed < s.issued {
                s.confirmed = s.issued
                failed = true
            }
            if !available { s.unpaired = nil }
            return (changed, failed)
        }
        if changed { await report(.availability(available: available, reason: reason)) }
        if failedCommands {
            await report(.commandFailed(reason: "Tasmota device \(topics.topic) went offline before confirming the switch command"))
        }
    }

    /// Gives switch command `n` its confirmation deadline.
    private func armTimeout(for n: Int) {
        state.withLock { $0.deadlines[n] = .now + confirmationTimeout }
        deadlineWakeup.wake()
    }

    /// Child of `run`: fails each switch command not confirmed by its deadline.
    private func watchConfirmations() async {
        while !Task.isCancelled {
            await deadlineWakeup.wait(until: state.withLock { $0.deadlines.values.min() })
            if Task.isCancelled { return }
            let now = ContinuousClock.now
            let failed = state.withLock { s -> Int in
                var failed = 0
                for (n, deadline) in s.deadlines where deadline <= now {
                    s.deadlines[n] = nil
                    if !s.stopped, s.confirmed < n {
                        s.confirmed = n
                        failed += 1
                    }
                }
                return failed
            }
            for _ in 0..<failed {
                await report(
                    .commandFailed(
                        reason: "Tasmota device \(topics.topic) did not confirm \(topics.powerName) within \(confirmationTimeout)"))
            }
        }
    }

    private func report(_ observation: Observation) async {
        await gate.report(observation)
    }
}
