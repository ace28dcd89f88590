import DriverAPI
import Foundation
import NIOCore
import Synchronization

/// The Kasa models the driver knows by their outlets: power strips and multi-outlet plugs have no
/// top-level `relay_state`; each outlet is a child in `system.get_sysinfo`'s `children`.
public enum KasaModels {
    /// Multi-outlet models and their outlets (python-kasa's fixtures of each show that many children).
    public static let outlets: [String: Int] = ["HS300": 6, "KP303": 3, "KP400": 2, "KP200": 2, "EP40": 2, "HS107": 2]
    /// Models with one relay (the settings name one device).
    public static let singles: Set<String> = [
        "HS100", "HS103", "HS105", "HS110", "HS200", "HS210", "KP100", "KP105", "KP115", "KP125", "EP10", "EP25"
    ]
    /// Multi-outlet models whose outlets each have an energy meter (`emeter.get_realtime` with `child_ids`).
    public static let meteredOutlets: Set<String> = ["HS300"]

    /// Every model named in the settings' errors, sorted.
    static var known: [String] { (Array(outlets.keys) + Array(singles)).sorted() }

    /// `HS300(US)` -> `HS300`: the model without its region, upper-cased.
    static func normalized(_ model: String) -> String {
        var name = model.uppercased()
        if let open = name.firstIndex(of: "(") { name = String(name[..<open]) }
        return name.trimmingCharacters(in: .whitespaces)
    }
}

/// What one outlet (or the whole strip) of a multi-outlet device is, from its settings.
struct KasaOutletSettings: Sendable {
    var client: KasaClientConfig
    var pollInterval: Double
    var maxBackoff: Double
    var probePort: Int
    /// The outlet's position in the device's `children`, from 1; nil: the strip as a whole.
    var outlet: Int?
    /// The outlets the settings say the strip has (from `model` or `outlets`), when they say.
    var outletCount: Int?
    /// Whether the model meters each outlet (HS300).
    var metered: Bool
}

/// The connection and the poll one strip's drivers share: every outlet driver of one host and port
/// (and the strip's own) is a member; the first member's timings are the session's.
///
/// Each member polls in its own run task, through ``snapshot(startedAfter:)``: a poll that started
/// recently enough is reused, one under way is waited for, and otherwise the caller polls for
/// everyone (sysinfo, then each member outlet's `emeter.get_realtime` with `child_ids` when the
/// strip meters). So the members' polls line up on one poll per interval, and the session itself
/// starts no task.
final class KasaStripSession: Sendable {
    /// `host:port`, the registry's key.
    let key: String
    let client: KasaClient
    let pollInterval: Double
    let maxBackoff: Double
    let probePort: Int
    private let group: any EventLoopGroup

    /// One poll's outcome, shared by the members.
    struct Snapshot: Sendable {
        /// When the poll started.
        var started: ContinuousClock.Instant
        var outcome: Outcome
        /// The wait before the next poll (the back-off after a failure).
        var nextDelay: Double
    }

    enum Outcome: Sendable {
        case status(Status)
        case failed(String)
    }

    /// A strip's sysinfo and its outlets' meters.
    struct Status: Sendable {
        var model: String
        var alias: String
        var children: [Child]
        /// The sysinfo request's place in the order of writes.
        var order: UInt64
        /// Outlet number -> its meter sample.
        var meters: [Int: KasaEmeterSample]
        var measuredAt: Int64
    }

    struct Child: Sendable, Equatable {
        var id: String
        var on: Bool
        var alias: String
    }

    private struct State {
        var latest: Snapshot?
        /// When the poll under way started (nil: none).
        var polling: ContinuousClock.Instant?
        var waiters: [Int: CheckedContinuation<Snapshot?, Never>] = [:]
        var nextWaiter = 0
        var failureDelay: Double
        /// Outlet number -> members driving it.
        var outlets: [Int: Int] = [:]
    }

    private let state: Mutex<State>

    init(settings: KasaOutletSettings, group: any EventLoopGroup) {
        key = settings.client.endpoint
        client = KasaClient(config: settings.client, group: group)
        pollInterval = settings.pollInterval
        maxBackoff = max(settings.maxBackoff, settings.pollInterval)
        probePort = settings.probePort
        self.group = group
        state = Mutex(State(failureDelay: settings.pollInterval))
    }

    /// Counts a member driving `outlet` (nil: the strip's own driver), whose meter the poll reads.
    func add(outlet: Int?) {
        guard let outlet else { return }
        state.withLock { $0.outlets[outlet, default: 0] += 1 }
    }

    /// The member driving `outlet` left.
    func remove(outlet: Int?) {
        guard let outlet else { return }
        state.withLock { s in
            s.outlets[outlet, default: 1] -= 1
            if s.outlets[outlet] == 0 { s.outlets[outlet] = nil }
        }
    }

    /// The latest poll's snapshot, if any.
    var latest: Snapshot? { state.withLock { $0.latest } }

    /// A snapshot of a poll that started at `after` or later (nil: any poll): the latest one when
    /// it is recent enough, the one under way when it started late enough, else one this task polls.
    /// - Returns: nil when the calling task is cancelled.
    func snapshot(startedAfter after: ContinuousClock.Instant?) async -> Snapshot? {
        enum Step {
            case have(Snapshot)
            case wait
            case poll(ContinuousClock.Instant)
        }
        while !Task.isCancelled {
            let step = state.withLock { s -> Step in
                if let latest = s.latest, after.map({ latest.started >= $0 }) ?? true { return .have(latest) }
                if s.polling != nil { return .wait }
                let now = ContinuousClock.now
                s.polling = now
                return .poll(now)
            }
            switch step {
            case .have(let snapshot):
                return snapshot
            case .wait:
                if let done = await waitForPoll(), after.map({ done.started >= $0 }) ?? true { return done }
            case .poll(let started):
                let snapshot = await poll(started: started)
                let waiters = state.withLock { s -> [CheckedContinuation<Snapshot?, Never>] in
                    s.polling = nil
                    if let snapshot { s.latest = snapshot }
                    defer { s.waiters = [:] }
                    return Array(s.waiters.values)
                }
                for waiter in waiters { waiter.resume(returning: snapshot) }
                if let snapshot { return snapshot }
            }
        }
        return nil
    }

    /// Waits for the poll under way; nil when it was cancelled (or this task is).
    private func waitForPoll() async -> Snapshot? {
        let id = state.withLock { s -> Int in
            s.nextWaiter += 1
            return s.nextWaiter
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Snapshot?, Never>) in
                let now = state.withLock { s -> Snapshot?? in
                    if Task.isCancelled { return .some(nil) }
                    guard s.polling != nil else { return .some(s.latest) }
                    s.waiters[id] = continuation
                    return .none
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.resume(returning: nil)
        }
    }

    /// Polls the strip once for every member; nil when cancelled or stopped.
    private func poll(started: ContinuousClock.Instant) async -> Snapshot? {
        do {
            let status = try await readStatus()
            let delay = state.withLock { s -> Double in
                s.failureDelay = pollInterval
                return pollInterval
            }
            return Snapshot(started: started, outcome: .status(status), nextDelay: delay)
        } catch {
            if Task.isCancelled || error is CancellationError { return nil }
            let failure = KasaClientError.classify(error, endpoint: client.config.endpoint, host: client.config.host)
            if case .stopped = failure { return nil }
            let reason = await KasaKLAPProbe.explain(failure, config: client.config, probePort: probePort, group: group)
            let delay = state.withLock { s -> Double in
                defer { s.failureDelay = min(s.failureDelay * 2, maxBackoff) }
                return s.failureDelay
            }
            return Snapshot(started: started, outcome: .failed(reason.description), nextDelay: delay)
        }
    }

    private func readStatus() async throws -> Status {
        let (reply, order) = try await send(["system": ["get_sysinfo": [:]]])
        let sysinfo = try KasaReply.method(reply, "system", "get_sysinfo")
        let model = sysinfo["model"]?.stringValue ?? "Kasa strip"
        guard let list = sysinfo["children"]?.arrayValue else {
            throw KasaClientError.badReply("get_sysinfo of \(model) has no children (not a power strip)")
        }
        var children: [Child] = []
        for (index, child) in list.enumerated() {
            guard let id = child["id"]?.stringValue, let on = KasaJSON.int(child["state"]) else {
                throw KasaClientError.badReply("child \(index + 1) of get_sysinfo has no id or state")
            }
            children.append(Child(id: id, on: on == 1, alias: child["alias"]?.stringValue ?? ""))
        }
        var meters: [Int: KasaEmeterSample] = [:]
        if (sysinfo["feature"]?.stringValue ?? "").contains("ENE") {
            let outlets = state.withLock { $0.outlets.keys.sorted() }
            for outlet in outlets where outlet <= children.count {
                let request: JSONValue = ["context": ["child_ids": [.string(children[outlet - 1].id)]], "emeter": ["get_realtime": [:]]]
                let meterReply = try await send(request).0
                // A refused get_realtime only means no readings for that outlet.
                if let realtime = try? KasaReply.method(meterReply, "emeter", "get_realtime") {
                    meters[outlet] = KasaEmeterSample(realtime: realtime)
                }
            }
        }
        return Status(
            model: model, alias: sysinfo["alias"]?.stringValue ?? "", children: children, order: order, meters: meters,
            measuredAt: Int64(Date().timeIntervalSince1970 * 1_000_000))
    }

    /// One request/reply as JSON objects, with the request's place in the order of writes.
    func send(_ request: JSONValue) async throws -> (JSONValue, order: UInt64) {
        let answer = try await client.request(KasaJSON.encode(request))
        do {
            return (try KasaJSON.parseObject(answer.payload), answer.order)
        } catch {
            throw KasaClientError.protocolError(error)
        }
    }
}

/// The strips' sessions, one per host and port, counted by their running members.
final class KasaStripSessions: Sendable {
    /// The one registry of this process.
    static let shared = KasaStripSessions()

    private let sessions = Mutex<[String: (session: KasaStripSession, members: Int)]>([:])

    /// The session of the settings' host and port (made by the first member), with one more member.
    func join(_ settings: KasaOutletSettings, group: any EventLoopGroup) -> KasaStripSession {
        sessions.withLock { s in
            let key = settings.client.endpoint
            if var entry = s[key] {
                entry.members += 1
                s[key] = entry
                return entry.session
            }
            let session = KasaStripSession(settings: settings, group: group)
            s[key] = (session, 1)
            return session
        }
    }

    /// One member less; the last one closes the connection.
    func leave(_ session: KasaStripSession) async {
        let last = sessions.withLock { s -> Bool in
            guard var entry = s[session.key], entry.session === session else { return false }
            entry.members -= 1
            if entry.members > 0 {
                s[session.key] = entry
                return false
            }
            s[session.key] = nil
            return true
        }
        guard last else { return }
        session.client.cancelRequests()
        await session.client.shutDown()
    }

    /// The running members of the session for `endpoint` (`host:port`), 0 when there is none.
    func members(of endpoint: String) -> Int { sessions.withLock { $0[endpoint]?.members ?? 0 } }
}

/// One outlet of a Kasa power strip (or the strip as a whole): switches the n-th child of the
/// strip's sysinfo with `context.child_ids`, reports its state (and, on an HS300, its meter), over
/// the connection and the poll it shares with the strip's other outlets (`KasaStripSession`).
///
/// `run(context:)` is one loop in the driver's task, as for a single plug: it waits on a
/// `DriverWakeup` for its next poll or a read-back and takes the strip's snapshot for it in a short
/// child task; the snapshot is shared, so the strip is polled about once per interval however many
/// outlets run.
public final class KasaOutletDriver: Driver {
    /// The four meter quantities on an outlet of a strip that meters its outlets (HS300); none otherwise.
    public var capabilities: DriverCapabilities {
        settings.metered && settings.outlet != nil ? DriverCapabilities(readings: [.power, .voltage, .current, .energy]) : .switchOnly
    }

    private struct State: Sendable {
        var started = false
        var stopped = false
        var session: KasaStripSession?
        var available: Bool?
        var reason = ""
        /// The answer to the last switch came then; its read-back is due at `readBackAt`.
        var switchedAt: ContinuousClock.Instant?
        var readBackAt: ContinuousClock.Instant?
        var readingBack = false
        /// The snapshot whose readings were reported last.
        var metered: ContinuousClock.Instant?
    }

    private let settings: KasaOutletSettings
    private let group: any EventLoopGroup
    private let readBackDelay = 0.35
    private let state = Mutex(State())
    private let gate = DriverReportGate()
    private let relay: KasaRelayReports
    private let wakeup = DriverWakeup()

    init(settings: KasaOutletSettings, group: any EventLoopGroup) {
        self.settings = settings
        self.group = group
        relay = KasaRelayReports(gate: gate)
    }

    /// The outlet's position in the strip (nil: the strip as a whole).
    public var outlet: Int? { settings.outlet }

    /// Joins the strip's session and polls through it until cancelled; the last outlet to stop closes the connection.
    /// - Throws: A `DriverError` when run twice.
    public func run(context: any DriverContext) async throws {
        let ok = state.withLock { s -> Bool in
            guard !s.started, !s.stopped else { return false }
            s.started = true
            return true
        }
        guard ok else { throw DriverError("kasa driver for \(context.deviceId) already ran") }
        let session = KasaStripSessions.shared.join(settings, group: group)
        session.add(outlet: settings.outlet)
        state.withLock { $0.session = session }
        gate.open(context)
        var nextPoll = ContinuousClock.now
        while !Task.isCancelled {
            let readBackAt = state.withLock { $0.readBackAt }
            await wakeup.wait(until: min(nextPoll, readBackAt ?? nextPoll))
            if Task.isCancelled { break }
            let now = ContinuousClock.now
            let readBackAfter = state.withLock { s -> ContinuousClock.Instant? in
                guard let at = s.readBackAt, at <= now else { return nil }
                s.readBackAt = nil
                s.readingBack = true
                return s.switchedAt ?? now
            }
            let pollDue = nextPoll <= now
            guard readBackAfter != nil || pollDue else { continue }
            let next = await round(session, readBackAfter: readBackAfter, poll: pollDue)
            if let next { nextPoll = next } else if pollDue { break }
        }
        state.withLock { $0.stopped = true }
        session.remove(outlet: settings.outlet)
        await KasaStripSessions.shared.leave(session)
        await gate.close()
    }

    /// One round in a child task that ends with it (the run task keeps only the loop's frames).
    /// Returns when to poll next (nil: cancelled).
    @inline(never)
    private func round(
        _ session: KasaStripSession, readBackAfter: ContinuousClock.Instant?, poll pollDue: Bool
    ) async -> ContinuousClock.Instant? {
        await withTaskGroup(of: ContinuousClock.Instant?.self) { group in
            group.addTask {
                if let readBackAfter {
                    if let snapshot = await session.snapshot(startedAfter: readBackAfter) {
                        await self.apply(snapshot, endpoint: session.client.config.endpoint, readings: false)
                    }
                    self.state.withLock { $0.readingBack = false }
                }
                guard pollDue else { return nil }
                let now = ContinuousClock.now
                guard let snapshot = await session.snapshot(startedAfter: now - .seconds(self.settings.pollInterval / 2)) else {
                    return nil
                }
                await self.apply(snapshot, endpoint: session.client.config.endpoint, readings: true)
                // The next poll lines up on the shared one's start, so every outlet asks at about the same time.
                return max(snapshot.started + .seconds(snapshot.nextDelay), now + .seconds(snapshot.nextDelay / 2))
            }
            return await group.next() ?? nil
        }
    }

    /// Reports what a snapshot says of this outlet: availability, its relay, its meter.
    private func apply(_ snapshot: KasaStripSession.Snapshot, endpoint: String, readings: Bool) async {
        switch snapshot.outcome {
        case .failed(let reason):
            await setAvailability(false, reason: reason)
        case .status(let status):
            let strip = "\(status.model)\(status.alias.isEmpty ? "" : " \"\(status.alias)\"")"
            guard let outlet = settings.outlet else {
                await setAvailability(true, reason: "\(strip) answering at \(endpoint) with \(status.children.count) outlets")
                return
            }
            guard outlet <= status.children.count else {
                await setAvailability(
                    false, reason: "\(strip) at \(endpoint) has \(status.children.count) outlets, not an outlet \(outlet)")
                return
            }
            let child = status.children[outlet - 1]
            let name = child.alias.isEmpty ? "" : " \"\(child.alias)\""
            await setAvailability(true, reason: "\(strip) outlet \(outlet)\(name) answering at \(endpoint)")
            await relay.take(child.on, order: status.order, confirms: false)
            guard readings, let meter = status.meters[outlet] else { return }
            let fresh = state.withLock { s -> Bool in
                guard s.metered != snapshot.started else { return false }
                s.metered = snapshot.started
                return true
            }
            guard fresh else { return }
            for (quantity, value) in meter.readings {
                await gate.report(.reading(quantity: quantity, value: value, measuredAt: status.measuredAt))
            }
        }
    }

    /// Switches this outlet (`set_relay_state` with `context.child_ids`) and reports what the strip confirms.
    /// - Throws: A `DriverError` for activations, for the strip as a whole, when not running, when
    ///   the strip is unavailable or has no such outlet, or when it does not answer.
    public func execute(_ command: DriverCommand) async throws {
        switch command {
        case .writeActivations:
            throw DriverError("the kasa driver does not write activations to the plug")
        case .setSwitch(let on):
            guard await gate.openedContext() != nil else { throw DriverError("kasa driver is not running") }
            let (stopped, available, reason, session) = state.withLock { ($0.stopped, $0.available, $0.reason, $0.session) }
            guard !stopped, let session else { throw DriverError("kasa driver is not running") }
            guard let outlet = settings.outlet else {
                throw DriverError("a Kasa strip is switched by its outlets (settings \"outlet\": 1, 2, ...)")
            }
            if available == false { throw DriverError("plug unavailable: \(reason)") }
            guard let snapshot = await session.snapshot(startedAfter: nil) else { throw DriverError("kasa driver is not running") }
            guard case .status(let status) = snapshot.outcome else {
                if case .failed(let why) = snapshot.outcome { throw DriverError("plug unavailable: \(why)") }
                throw DriverError("kasa driver is not running")
            }
            guard outlet <= status.children.count else {
                throw DriverError("\(status.model) has \(status.children.count) outlets, not an outlet \(outlet)")
            }
            let id = status.children[outlet - 1].id
            let order: UInt64
            do {
                let request: JSONValue = [
                    "context": ["child_ids": [.string(id)]], "system": ["set_relay_state": ["state": .int(on ? 1 : 0)]]
                ]
                let (reply, answered) = try await session.send(request)
                _ = try KasaReply.method(reply, "system", "set_relay_state")
                order = answered
            } catch let error as KasaClientError {
                throw DriverError("set_relay_state failed: \(error)")
            }
            state.withLock { s in
                s.switchedAt = .now
                s.readBackAt = .now + .seconds(readBackDelay)
            }
            wakeup.wake()
            await relay.take(on, order: order, confirms: true)
        }
    }

    /// Whether a read-back after a switch is due or under way.
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
