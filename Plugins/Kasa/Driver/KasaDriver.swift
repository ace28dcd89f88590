import DriverAPI
import Foundation
import NIOCore
import NIOPosix
import Synchronization

/// Makes drivers for TP-Link Kasa plugs (HS100/HS110...) and power strips (HS300, KP303, KP400,
/// KP200, EP40, HS107) speaking the local protocol on TCP port 9999, or KLAP over HTTP on port 80
/// for firmware that closed 9999 (with the TP-Link account's login).
///
/// Settings (JSON object): `host` (required), `port` (default 9999), `poll_interval` seconds
/// (default 5), `timeout` seconds per request (default 5), `retries` after a timeout (default 3),
/// `retry_backoff` seconds before a retry (default 1), `max_backoff` seconds between polls while
/// the plug does not answer (default 60; the wait doubles from `poll_interval` up to it),
/// `klap_probe_port` (default 80: probed when 9999 refuses, to tell KLAP firmware),
/// `credentials_file` (a JSON file `{"username": ..., "password": ...}` with the TP-Link account's
/// login: the plug is spoken to over KLAP, `port` then defaults to 80). A strip: `model`
/// (`"HS300"`, `"KP303(UK)"`...) or `outlets` (a count) make ``outlets(of:)`` name its outlets,
/// each driven with the strip's settings plus `outlet` (its position, from 1).
public struct KasaDriverFactory: DriverFactory {
    /// The driver name devices are registered with.
    public let name = "kasa"
    private let group: any EventLoopGroup

    /// - Parameter group: the event loops all plugs share (no thread per plug).
    public init(group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) {
        self.group = group
    }

    static let keys: Set<String> = [
        "host", "port", "poll_interval", "timeout", "retries", "retry_backoff", "max_backoff", "klap_probe_port", "model",
        "outlets", "outlet", "credentials_file"
    ]

    /// A driver for one plug, one outlet of a strip (`outlet` set), or a strip as a whole.
    /// - Throws: A `DriverError` naming a setting that is missing, unknown or out of range.
    public func make(configuration: DriverConfiguration) throws -> any Driver {
        let settings = try read(configuration)
        if settings.outlet != nil || (settings.outletCount ?? 1) > 1 {
            return KasaOutletDriver(settings: settings, group: group)
        }
        return KasaDriver(
            client: settings.client, pollInterval: settings.pollInterval, maxBackoff: settings.maxBackoff,
            probePort: settings.probePort, group: group)
    }

    /// The outlets of a strip whose settings give `model` (a multi-outlet model) or `outlets` (a
    /// count above 1), in the device's order; each outlet's settings are the strip's with
    /// `outlet` (its position, from 1) instead of `outlets`. nil for a single plug and for
    /// settings that already name an outlet.
    /// - Throws: A `DriverError` naming a bad setting (an unknown `model` lists the models known).
    public func outlets(of configuration: DriverConfiguration) throws -> [DriverOutlet]? {
        let settings = try read(configuration)
        guard settings.outlet == nil, let count = settings.outletCount, count > 1 else { return nil }
        guard case .object(var members)? = try? JSONValue.parse(configuration.settingsJSON) else { return nil }
        members.removeAll { $0.0 == "outlets" || $0.0 == "outlet" }
        return (1...count).map { n in
            DriverOutlet(number: n, settingsJSON: JSONValue.object(members + [("outlet", .int(n))]).serialized())
        }
    }

    /// Reads and checks every setting.
    private func read(_ configuration: DriverConfiguration) throws -> KasaOutletSettings {
        let s = try DriverSettings(configuration, allowed: Self.keys)
        let pollInterval = try s.double("poll_interval", default: 5, in: 0.01...86_400)
        let klap =
            try s.has("credentials_file")
            ? KasaKLAPCredentials.read(path: try s.string("credentials_file"), for: "device \"\(configuration.deviceId)\"") : nil
        var client = KasaClientConfig(
            host: try s.string("host"),
            port: try s.int("port", default: klap == nil ? 9999 : 80, in: 1...65_535),
            timeout: try s.double("timeout", default: 5, in: 0.01...300),
            retries: try s.int("retries", default: 3, in: 0...10),
            retryBackoff: try s.double("retry_backoff", default: 1, in: 0...60))
        client.klap = klap
        let maxBackoff = try s.double("max_backoff", default: 60, in: 0.01...86_400)
        let probePort = try s.int("klap_probe_port", default: 80, in: 1...65_535)
        var modelOutlets: Int?
        var metered = false
        var model = ""
        if s.has("model") {
            model = try s.string("model")
            let name = KasaModels.normalized(model)
            if let n = KasaModels.outlets[name] {
                modelOutlets = n
                metered = KasaModels.meteredOutlets.contains(name)
            } else if KasaModels.singles.contains(name) {
                modelOutlets = 1
            } else {
                throw DriverError(
                    "kasa setting \"model\" of device \"\(configuration.deviceId)\" names an unknown model \"\(model)\" "
                        + "(known: \(KasaModels.known.joined(separator: ", ")); for another strip give \"outlets\": its count)")
            }
        }
        var count = modelOutlets
        if s.has("outlets") {
            let given = try s.int("outlets", default: 1, in: 1...16)
            if let modelOutlets, modelOutlets != given {
                throw DriverError(
                    "kasa setting \"outlets\" of device \"\(configuration.deviceId)\" is \(given), but a "
                        + "\(model) has \(modelOutlets)")
            }
            count = given
        }
        var outlet: Int?
        if s.has("outlet") {
            let n = try s.int("outlet", default: 1, in: 1...16)
            if let count, n > count {
                throw DriverError(
                    "kasa setting \"outlet\" of device \"\(configuration.deviceId)\" must be a whole number from 1 to \(count)")
            }
            outlet = n
        }
        return KasaOutletSettings(
            client: client, pollInterval: pollInterval, maxBackoff: maxBackoff, probePort: probePort, outlet: outlet,
            outletCount: count, metered: metered)
    }
}

/// A running Kasa plug: polls it, reports what it says, and switches its relay.
///
/// `run(context:)` is one loop in the driver's task: it waits on a `DriverWakeup` (a dispatch
/// timer, no sleeping task) for the next poll or the read-back after a switch, and does each in
/// turn in a short child task, so between polls the driver keeps only its run task's small frames.
public final class KasaDriver: Driver {
    /// The HS110's meter: power, voltage, current and its energy counter (read when the plug's
    /// sysinfo has the `ENE` feature).
    public var capabilities: DriverCapabilities { DriverCapabilities(readings: [.power, .voltage, .current, .energy]) }

    private struct State: Sendable {
        var started = false
        var stopped = false
        /// The wait before the next poll after a failed one (doubles up to `maxBackoff`).
        var failureDelay = 0.0
        /// nil = not known yet.
        var available: Bool?
        var reason = ""
        var hasEmeter: Bool?
        /// When to read the relay back after the last switch (nil: no read-back due).
        var readBackAt: ContinuousClock.Instant?
        /// The run loop is reading the relay back.
        var readingBack = false
    }

    private let client: KasaClient
    private let pollInterval: Double
    private let maxBackoff: Double
    private let probePort: Int
    private let group: any EventLoopGroup
    /// Delay between `set_relay_state`'s answer and reading the state back.
    private let readBackDelay = 0.35
    private let state = Mutex(State())
    private let gate = DriverReportGate()
    private let relay: KasaRelayReports
    /// Wakes the run loop for the next poll, or early for a read-back.
    private let wakeup = DriverWakeup()

    init(client: KasaClientConfig, pollInterval: Double, maxBackoff: Double, probePort: Int = 80, group: any EventLoopGroup) {
        self.client = KasaClient(config: client, group: group)
        self.probePort = probePort
        self.group = group
        self.pollInterval = pollInterval
        self.maxBackoff = max(maxBackoff, pollInterval)
        relay = KasaRelayReports(gate: gate)
    }

    /// Polls the plug until cancelled (availability and readings follow) and reads a switch back.
    /// - Throws: A `DriverError` when run twice.
    public func run(context: any DriverContext) async throws {
        let ok = state.withLock { s -> Bool in
            guard !s.started, !s.stopped else { return false }
            s.started = true
            s.failureDelay = pollInterval
            return true
        }
        guard ok else { throw DriverError("kasa driver for \(context.deviceId) already ran") }
        gate.open(context)
        // Waits for the next poll or read-back and does it, until cancelled: cancellation ends the
        // wait at once, and a round's requests (see `round`). The loop is here, not in a function of
        // its own: the task keeps the memory of its deepest calls as long as the device runs.
        var nextPoll = ContinuousClock.now
        while !Task.isCancelled {
            let readBackAt = state.withLock { $0.readBackAt }
            await wakeup.wait(until: min(nextPoll, readBackAt ?? nextPoll))
            if Task.isCancelled { break }
            let now = ContinuousClock.now
            let readBackDue = state.withLock { s -> Bool in
                guard let at = s.readBackAt, at <= now else { return false }
                s.readBackAt = nil
                s.readingBack = true
                return true
            }
            let pollDue = nextPoll <= now
            guard readBackDue || pollDue else { continue }
            let wait = await round(readBack: readBackDue, poll: pollDue)
            if let wait { nextPoll = .now + .seconds(wait) } else if pollDue { break }
        }
        state.withLock { $0.stopped = true }
        client.cancelRequests()
        await client.shutDown()
        await gate.close()
    }

    /// One round (the read-back, the poll) in a child task that ends with it: a task keeps the
    /// memory of its deepest calls until it ends, so the run task, which lives as long as the
    /// device, keeps only the loop's frames. Returns the poll's wait before the next (nil: none).
    @inline(never)
    private func round(readBack readBackDue: Bool, poll pollDue: Bool) async -> Double? {
        await withTaskGroup(of: Double?.self) { group in
            group.addTask {
                // The device's task cancelled (the driver stops): the request in progress fails at
                // once, and every later one, instead of waiting out its timeout and retries.
                await withTaskCancellationHandler {
                    if readBackDue {
                        await self.readBack()
                        self.state.withLock { $0.readingBack = false }
                    }
                    return pollDue ? await self.poll() : nil
                } onCancel: { [client = self.client] in
                    client.cancelRequests()
                }
            }
            return await group.next() ?? nil
        }
    }

    /// Switches the relay and reports the state the plug confirms.
    /// - Throws: A `DriverError` for activations, when not running or the plug is unavailable, or when it does not answer.
    public func execute(_ command: DriverCommand) async throws {
        switch command {
        case .writeActivations:
            throw DriverError("the kasa driver does not write activations to the plug")
        case .setSwitch(let on):
            let (stopped, available, reason) = state.withLock { ($0.stopped, $0.available, $0.reason) }
            guard !stopped else { throw DriverError("kasa driver is not running") }
            if available == false { throw DriverError("plug unavailable: \(reason)") }
            try await setRelay(on)
        }
    }

    // MARK: - Switching

    /// Sends `set_relay_state`; its `err_code 0` answer is the plug's confirmation, reported at once.
    /// A read-back follows later without holding the command, so a plug that answers 0 but does
    /// not switch is corrected shortly after (and a failed read-back leaves it to the next poll).
    private func setRelay(_ on: Bool) async throws {
        let order: UInt64
        do {
            let (reply, answered) = try await send(["system": ["set_relay_state": ["state": .int(on ? 1 : 0)]]])
            _ = try KasaReply.method(reply, "system", "set_relay_state")
            order = answered
        } catch let error as KasaClientError {
            throw DriverError("set_relay_state failed: \(error)")
        }
        scheduleReadBack()
        await relay.take(on, order: order, confirms: true)
    }

    /// Has the run loop read the relay back `readBackDelay` after a switch; a later switch moves it.
    private func scheduleReadBack() {
        state.withLock { $0.readBackAt = .now + .seconds(readBackDelay) }
        wakeup.wake()
    }

    /// The read-back after a switch (a failed one leaves it to the next poll).
    private func readBack() async {
        guard let read = try? await sysinfo(), let on = KasaJSON.int(read.sysinfo["relay_state"]) else { return }
        await relay.take(on == 1, order: read.order, confirms: false)
    }

    private func sysinfo() async throws -> (sysinfo: JSONValue, order: UInt64) {
        let (reply, order) = try await send(["system": ["get_sysinfo": [:]]])
        return (try KasaReply.method(reply, "system", "get_sysinfo"), order)
    }

    /// One request/reply as JSON objects, with the request's place in the order of writes.
    private func send(_ request: JSONValue) async throws -> (JSONValue, order: UInt64) {
        let answer = try await client.request(KasaJSON.encode(request))
        do {
            return (try KasaJSON.parseObject(answer.payload), answer.order)
        } catch {
            throw KasaClientError.protocolError(error)
        }
    }

    // MARK: - Polling

    /// One poll; returns the wait before the next: `poll_interval` after an answer, a doubling wait
    /// (up to `max_backoff`) after a failure; nil when cancelled or stopped.
    private func poll() async -> Double? {
        do {
            let description = try await pollOnce()
            await setAvailability(true, reason: description)
            return state.withLock { s in
                s.failureDelay = pollInterval
                return pollInterval
            }
        } catch is CancellationError {
            return nil
        } catch {
            if Task.isCancelled { return nil }
            if case .stopped? = error as? KasaClientError { return nil }
            var reason = (error as? KasaClientError)?.description ?? "\(error)"
            if let failure = error as? KasaClientError, case .refused = failure {
                // Once per failed poll at most: is it firmware that left 9999 for KLAP on HTTP?
                reason = await KasaKLAPProbe.explain(failure, config: client.config, probePort: probePort, group: group).description
                if Task.isCancelled { return nil }
            }
            await setAvailability(false, reason: reason)
            return state.withLock { s in
                defer { s.failureDelay = min(s.failureDelay * 2, maxBackoff) }
                return s.failureDelay
            }
        }
    }

    /// Polls once: sysinfo (with the energy meter when the plug has one); returns a description for
    /// the availability reason.
    private func pollOnce() async throws -> String {
        let knownEmeter = state.withLock { $0.hasEmeter }
        var request: JSONValue = ["system": ["get_sysinfo": [:]]]
        if knownEmeter == true { request["emeter"] = ["get_realtime": [:]] }
        var (reply, order) = try await send(request)
        let sysinfo = try KasaReply.method(reply, "system", "get_sysinfo")
        guard let on = KasaJSON.int(sysinfo["relay_state"]) else {
            throw KasaClientError.badReply("get_sysinfo has no relay_state")
        }
        let hasEmeter = (sysinfo["feature"]?.stringValue ?? "").contains("ENE")
        state.withLock { $0.hasEmeter = hasEmeter }
        await relay.take(on == 1, order: order, confirms: false)
        if hasEmeter && knownEmeter != true {
            reply = try await send(["emeter": ["get_realtime": [:]]]).0
        }
        if hasEmeter, let realtime = try? KasaReply.method(reply, "emeter", "get_realtime") {
            let now = Int64(Date().timeIntervalSince1970 * 1_000_000)
            for (quantity, value) in KasaEmeterSample(realtime: realtime).readings {
                await gate.report(.reading(quantity: quantity, value: value, measuredAt: now))
            }
        }
        let model = sysinfo["model"]?.stringValue ?? "Kasa plug"
        let alias = sysinfo["alias"]?.stringValue ?? ""
        return "\(model)\(alias.isEmpty ? "" : " \"\(alias)\"") answering at \(client.config.endpoint)"
    }

    /// Whether a read-back after a switch is due or under way (false once its answer is taken in).
    package var readBackPending: Bool {
        state.withLock { $0.readBackAt != nil || $0.readingBack }
    }

    private func setAvailability(_ available: Bool, reason: String) async {
        let changed = state.withLock { s -> Bool in
            s.reason = reason
            guard s.available != available else { return false }
            s.available = available
            return true
        }
        if changed { await gate.report(.availability(available: available, reason: reason)) }
    }
}
