import DriverAPI
import Foundation
import NIOCore
import NIOPosix
import Synchronization

/// Makes drivers for TP-Link Kasa plugs (HS100/HS110...) speaking the local protocol on TCP port 9999.
///
/// Settings (JSON object): `host` (required), `port` (default 9999), `poll_interval` seconds
/// (default 5), `timeout` seconds per request (default 5), `retries` after a timeout (default 3),
/// `retry_backoff` seconds before a retry (default 1), `max_backoff` seconds between polls while
/// the plug does not answer (default 60; the wait doubles from `poll_interval` up to it).
public struct KasaDriverFactory: DriverFactory {
    /// The driver name devices are registered with.
    public let name = "kasa"
    private let group: any EventLoopGroup

    /// - Parameter group: the event loops all plugs share (no thread per plug).
    public init(group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) {
        self.group = group
    }

    static let keys: Set<String> = ["host", "port", "poll_interval", "timeout", "retries", "retry_backoff", "max_backoff"]

    /// A driver for one plug from its settings.
    /// - Throws: A `DriverError` naming a setting that is missing, unknown or out of range.
    public func make(configuration: DriverConfiguration) throws -> any Driver {
        let s = try DriverSettings(configuration, allowed: Self.keys)
        let pollInterval = try s.double("poll_interval", default: 5, in: 0.01...86_400)
        let client = KasaClientConfig(
            host: try s.string("host"),
            port: try s.int("port", default: 9999, in: 1...65_535),
            timeout: try s.double("timeout", default: 5, in: 0.01...300),
            retries: try s.int("retries", default: 3, in: 0...10),
            retryBackoff: try s.double("retry_backoff", default: 1, in: 0...60))
        let maxBackoff = try s.double("max_backoff", default: 60, in: 0.01...86_400)
        return KasaDriver(client: client, pollInterval: pollInterval, maxBackoff: maxBackoff, group: group)
    }
}

/// A running Kasa plug: polls it, reports what it says, and switches its relay.
///
/// Between polls a plug keeps no task: the next poll waits on an event-loop timer and runs in a
/// short task of its own (a thousand plugs keep no thousand sleeping tasks).
public final class KasaDriver: Driver {
    /// The HS110's meter: power, voltage, current and its energy counter (read when the plug's
    /// sysinfo has the `ENE` feature).
    public var capabilities: DriverCapabilities { DriverCapabilities(readings: [.power, .voltage, .current, .energy]) }

    private struct State: Sendable {
        var started = false
        var stopped = false
        /// The timer of the next poll, while waiting for it.
        var pollTimer: Scheduled<Void>?
        /// The poll under way.
        var polling: Task<Void, Never>?
        /// The wait before the next poll after a failed one (doubles up to `maxBackoff`).
        var failureDelay = 0.0
        /// nil = not known yet.
        var available: Bool?
        var reason = ""
        var hasEmeter: Bool?
        /// The read-back after the last switch, until it is done (a finished task kept by its handle
        /// keeps its memory, so each of these lets go of its own when it ends).
        var readBack: Task<Void, Never>?
        /// Counts the read-backs started, so that one ending lets go only of its own handle.
        var readBacks = 0
    }

    private let client: KasaClient
    private let pollInterval: Double
    private let maxBackoff: Double
    /// Delay between `set_relay_state`'s answer and reading the state back.
    private let readBackDelay = 0.35
    private let state = Mutex(State())
    private let gate = DriverReportGate()
    private let relay: KasaRelayReports
    /// Where the poll timer runs.
    private let loop: any EventLoop

    init(client: KasaClientConfig, pollInterval: Double, maxBackoff: Double, group: any EventLoopGroup) {
        self.client = KasaClient(config: client, group: group)
        loop = group.next()
        self.pollInterval = pollInterval
        self.maxBackoff = max(maxBackoff, pollInterval)
        relay = KasaRelayReports(gate: gate)
    }

    /// Starts polling the plug; availability and readings follow.
    /// - Throws: A `DriverError` when started twice or after `stop()`.
    public func start(context: any DriverContext) async throws {
        let ok = state.withLock { s -> Bool in
            guard !s.started, !s.stopped else { return false }
            s.started = true
            s.failureDelay = pollInterval
            return true
        }
        guard ok else { throw DriverError("kasa driver for \(context.deviceId) already started or stopped") }
        gate.open(context)
        schedulePoll(in: 0)
    }

    /// Stops polling and waits for the poll and read-back in flight to end.
    public func stop() async {
        let (timer, poll, readBack) = state.withLock { s in
            s.stopped = true
            defer { s.pollTimer = nil; s.polling = nil; s.readBack = nil }
            return (s.pollTimer, s.polling, s.readBack)
        }
        timer?.cancel()
        poll?.cancel()
        readBack?.cancel()
        await client.shutDown()
        await poll?.value
        await readBack?.value
        await gate.close()
    }

    /// Switches the relay and reports the state the plug confirms.
    /// - Throws: A `DriverError` for activations, when not running or the plug is unavailable, or when it does not answer.
    public func execute(_ command: DriverCommand) async throws {
        switch command {
        case .writeActivations:
            throw DriverError("the kasa driver does not write activations to the plug")
        case .setSwitch(let on):
            let (running, available, reason) = state.withLock { ($0.started && !$0.stopped, $0.available, $0.reason) }
            guard running else { throw DriverError("kasa driver is not running") }
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

    /// Reads the relay back `readBackDelay` after a switch, in its own task; a later switch replaces it.
    private func scheduleReadBack() {
        let replaced = state.withLock { s -> Task<Void, Never>? in
            s.readBacks += 1
            let number = s.readBacks
            let task = Task { [self] in
                defer { state.withLock { s in if s.readBacks == number { s.readBack = nil } } }
                do { try await Task.sleep(nanoseconds: UInt64(readBackDelay * 1e9)) } catch { return }
                guard let read = try? await sysinfo(), let on = KasaJSON.int(read.sysinfo["relay_state"]) else { return }
                await relay.take(on == 1, order: read.order, confirms: false)
            }
            if s.stopped { return task }
            defer { s.readBack = task }
            return s.readBack
        }
        replaced?.cancel()
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

    /// Starts the next poll `seconds` from now (unless stopped).
    private func schedulePoll(in seconds: Double) {
        let timer = loop.scheduleTask(in: .nanoseconds(Int64(seconds * 1e9))) { [self] in startPoll() }
        let stopped = state.withLock { s -> Bool in
            // Called at the end of the poll: its task is done, and a finished task kept by its
            // handle keeps its memory.
            if !s.stopped { s.pollTimer = timer; s.polling = nil }
            return s.stopped
        }
        if stopped { timer.cancel() }
    }

    /// The timer fired: poll in a task of its own, which `stop()` cancels and waits for.
    private func startPoll() {
        state.withLock { s in
            guard !s.stopped else { return }
            s.pollTimer = nil
            s.polling = Task { [self] in await poll() }
        }
    }

    /// One poll; then the next is scheduled: `poll_interval` after an answer, a doubling wait
    /// (up to `max_backoff`) after a failure.
    private func poll() async {
        let wait: Double
        do {
            let description = try await pollOnce()
            await setAvailability(true, reason: description)
            wait = state.withLock { s in
                s.failureDelay = pollInterval
                return pollInterval
            }
        } catch is CancellationError {
            return
        } catch {
            let reason = (error as? KasaClientError)?.description ?? "\(error)"
            if case .stopped? = error as? KasaClientError { return }
            await setAvailability(false, reason: reason)
            wait = state.withLock { s in
                defer { s.failureDelay = min(s.failureDelay * 2, maxBackoff) }
                return s.failureDelay
            }
        }
        if Task.isCancelled { return }
        schedulePoll(in: wait)
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

    /// How many task handles the driver holds (the poll under way, the read-back): 0 between polls
    /// once the read-back is done. A finished task kept by its handle keeps its memory.
    package var tasksHeld: Int {
        state.withLock { ($0.polling == nil ? 0 : 1) + ($0.readBack == nil ? 0 : 1) }
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
