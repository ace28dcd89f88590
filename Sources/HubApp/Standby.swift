import Foundation
import HubEngine
import HubHTTP
import HubLog
import HubMQTT
import HubPostgres
import Logging
import ServiceLifecycle
import Synchronization

/// Several hubs sharing one PostgreSQL log, exactly one of them active (hot standby; see
/// docs/operations.md): `hub run --instance NAME`, or `instance` in the configuration file.
public struct LeaseSettings: Sendable {
    /// This instance's name: the lease's holder, the suffix of its MQTT client id, `hub/status/active`.
    public var instance: String
    /// How long the lease lasts unless renewed: a dead active is replaced after at most this long.
    public var ttl: Duration
    /// How often the active renews it (a third of `ttl`).
    public var renewEvery: Duration { ttl / 3 }
    /// How often a standby tries to take it and catches its read models up.
    public var pollEvery: Duration = .milliseconds(200)

    /// The name was derived (``derived(dataDirectory:host:ttl:)``), not given with `--instance`:
    /// the hub is meant to be the log's only writer. It refuses to start while another instance holds
    /// the lease, and its MQTT client id stays the configured one.
    public var derived = false

    /// Settings for `instance`, with a lease of `ttl` (3 s unless given).
    public init(instance: String, ttl: Duration = .seconds(3)) {
        self.instance = instance
        self.ttl = ttl
    }

    /// The lease of a hub on a PostgreSQL log started without `--instance`: it still takes part in
    /// the lease, under a name made of the machine's host name and its data directory
    /// (`pi-kitchen-3f09a2c1`), so a second hub on the same log cannot write it too.
    ///
    /// - Parameters:
    ///   - dataDirectory: this hub's data directory (as given; made absolute here).
    ///   - host: the machine's name (`ProcessInfo.hostName` by default).
    public static func derived(
        dataDirectory: String, host: String = ProcessInfo.processInfo.hostName,
        ttl: Duration = .seconds(3)
    ) -> LeaseSettings {
        let path = URL(fileURLWithPath: dataDirectory).standardizedFileURL.path
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325  // FNV-1a: stable across runs and builds, unlike Hasher
        for byte in path.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        let allowed = host.split(separator: ".").first.map { String($0) } ?? ""
        var name = String(
            allowed.unicodeScalars.map { scalar -> Character in
                let ok =
                    ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar) || scalar == "-"
                    || scalar == "_"
                return ok ? Character(scalar) : "-"
            }.prefix(40))
        if name.isEmpty { name = "hub" }
        var settings = LeaseSettings(instance: name + "-" + String(hash >> 32, radix: 16), ttl: ttl)
        settings.derived = true
        return settings
    }

    /// Names a hub instance may have: they become part of an MQTT client id and topic.
    public static func problem(instance: String) -> String? {
        let allowed = instance.unicodeScalars.allSatisfy {
            ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "-" || $0 == "_"
        }
        if instance.isEmpty || instance.count > 64 || !allowed {
            return "instance name \"\(instance)\": 1 to 64 letters, digits, - or _"
        }
        return nil
    }
}

/// The lease this process holds once it is the active hub.
public struct ActiveLease: Sendable {
    /// The instance's name.
    public let instance: String
    /// The lease's fencing token: higher at every acquisition, announced in `<base>/status/active`.
    public let token: UInt64
    /// When it was acquired (seconds since the epoch).
    public let since: Date
    let store: PostgresEventStore
    /// Whether the lease is still known to be held, by this process's own monotonic clock.
    let standing: LeaseStanding
    /// The hub the lease lets act (caught up again when a sole writer takes its lease back).
    let hub: Hub

    /// The retained `<base>/status/active` payload: `{"instance":"b","since":"…","token":7}`.
    var announcement: [UInt8] {
        Array(#"{"instance":"\#(instance)","since":"\#(since.formatted(.iso8601))","token":\#(token)}"#.utf8)
    }
}

/// Thrown when the hub is asked to stop (SIGINT/SIGTERM) while it is a standby.
public struct StandbyStopped: Error, CustomStringConvertible {
    /// "stopped while standby".
    public var description: String { "stopped while standby" }
}

/// Why the active hub stepped down, once it did (it lost its lease, or its connection to the
/// database): `hub run` then becomes a standby again in the same process.
final class StepDown: Sendable {
    private let why = Mutex<String?>(nil)
    let instance: String
    let surface: MQTTSurface?
    let logger: Logger

    init(instance: String, surface: MQTTSurface?, logger: Logger) {
        self.instance = instance
        self.surface = surface
        self.logger = logger
    }

    /// Keeps (and says) the first reason. The surface leaves without `offline` on `<base>/status`
    /// when `anotherIsActive` (the status speaks for that instance); with `offline` otherwise, since
    /// no instance is active until one takes the lease.
    func record(_ reason: String, anotherIsActive: Bool = false) {
        let first = why.withLock { why -> Bool in
            defer { if why == nil { why = reason } }
            return why == nil
        }
        surface?.stepDown(anotherIsActive: anotherIsActive)
        if first { logger.error("stepping down: \(reason); no more appends from this instance (\(instance))") }
    }

    var reason: String? { why.withLock { $0 } }
}

/// The standby phase: follows the log (the store's LISTEN/NOTIFY moves its last sequence; the read
/// models catch up to it) and tries to take the lease, until it has it. A lost connection to the
/// database (the server restarted, the network failed) is not fatal: the standby closes the hub and
/// opens it again, with back-off (0.25 s doubling to 5 s), until it can.
enum Standby {
    /// - Parameters:
    ///   - open: Opens the hub on the shared log (again after a lost connection).
    ///   - retryFirstOpen: false at the first start: a log that cannot be opened is an error (a wrong
    ///     URL or password is said at once); true after stepping down: retried like a lost connection.
    ///   - stop: Asked between tries: true ends the wait with ``StandbyStopped``.
    /// - Returns: The hub and its lease, already fenced into the store: every append from now on checks it.
    ///   - status: What the standby's HTTP listener says on `/readyz` (kept current here).
    static func untilActive(
        open: () async throws -> Hub, settings: LeaseSettings, retryFirstOpen: Bool, logger: Logger,
        status: StandbyStatus? = nil, stop: @Sendable () -> Bool
    ) async throws -> (Hub, ActiveLease) {
        var hub: Hub? = retryFirstOpen ? nil : try await open()
        var said = false
        var failures = 0
        var tries = 0
        while true {
            if stop() {
                if let hub { _ = try? await hub.close() }
                throw StandbyStopped()
            }
            do {
                if hub == nil {
                    hub = try await open()
                    if failures > 0 { logger.notice("standby: instance \(settings.instance) is connected to the log again") }
                }
                if tries == 0, settings.derived, !retryFirstOpen { try await refuseSecondWriter(hub!, settings: settings) }
                if let lease = try await attempt(
                    hub!, settings: settings, logger: logger, said: &said,
                    status: tries % 5 == 0 ? status : nil)
                {
                    return (hub!, lease)
                }
                tries += 1
                failures = 0
                try await Task.sleep(for: settings.pollEvery)
            } catch let error where !(error is CancellationError || error is HubError) {
                let delay = Duration.milliseconds(min(5000, 250 << min(failures, 5)))
                failures += 1
                tries = 0
                status?.set("instance \(settings.instance) cannot follow the log (\(error))")
                logger.warning("standby: instance \(settings.instance) cannot follow the log (\(error)); trying again in \(delay)")
                // Closed aside: a hub whose connection broke must not hold the retries up.
                if let broken = hub { Task { _ = try? await broken.close() } }
                hub = nil
                said = false
                try await Task.sleep(for: delay)
            }
        }
    }

    /// A hub without `--instance` is meant to be the log's only writer: when another instance holds
    /// the lease, it does not wait as a standby but refuses to start, naming the writer. Its own name
    /// holding it is this hub's previous run (killed, restarted): it waits for that lease to lapse.
    private static func refuseSecondWriter(_ hub: Hub, settings: LeaseSettings) async throws {
        guard let store = hub.store as? PostgresEventStore, let holder = try await store.leaseHolder(),
            holder.holder != settings.instance, holder.secondsLeft > 0
        else { return }
        _ = try? await hub.close()
        throw HubError.usage(
            """
            another hub writes this log: instance \(holder.holder) holds its lease (token \(holder.token)); a second writer is refused. \
            To run a hot standby beside it, give each hub its own --instance (docs/operations.md)
            """)
    }

    /// One try: the lease when it is free, otherwise nil after catching the read models up.
    /// - Parameter status: Set to who is active (read from the database) when given.
    private static func attempt(
        _ hub: Hub, settings: LeaseSettings, logger: Logger, said: inout Bool,
        status: StandbyStatus?
    ) async throws -> ActiveLease? {
        guard let store = hub.store as? PostgresEventStore else {
            throw HubError.usage(
                "--instance \(settings.instance): a hot standby shares the active hub's log in PostgreSQL (--log postgres://...); this log is \(type(of: hub.store))"
            )
        }
        if let fault = store.writerFault { throw EventLogError.writerStopped(reason: fault) }
        let asked = ContinuousClock.now
        if let token = try await store.acquireLease(holder: settings.instance, ttl: settings.ttl) {
            store.fence(holder: settings.instance, token: token)
            try await hub.catchUp()  // everything the former active committed
            logger.notice(
                "active: instance \(settings.instance) holds the lease (token \(token)); starting drivers, scheduler and commands")
            let standing = LeaseStanding(ttl: settings.ttl, token: token, soleWriter: settings.derived)
            standing.renewed(startedAt: asked)
            return ActiveLease(instance: settings.instance, token: token, since: Date(), store: store, standing: standing, hub: hub)
        }
        if !said || status != nil {
            let holder = try await store.leaseHolder()
            if !said, let holder {
                logger.notice(
                    "standby: instance \(settings.instance) follows the log; instance \(holder.holder) is active (token \(holder.token)); taking over when its lease lapses"
                )
                said = true
            }
            status?.set(
                holder.map {
                    $0.secondsLeft > 0 ? "instance \($0.holder) is active" : "no instance is active (the lease of \($0.holder) lapsed)"
                }
                    ?? "no instance is active")
        }
        try await hub.catchUp()
        return nil
    }
}

/// Renews the active hub's lease; when it cannot (another instance took it, it expired while this
/// process was paused, the database is unreachable), the hub steps down: it stops taking commands,
/// its services stop, and `hub run` becomes a standby again (``StepDown``). At a graceful stop, it
/// releases the lease so a standby takes over at once.
struct LeaseKeeper: Service {
    let lease: ActiveLease
    let settings: LeaseSettings
    let surface: MQTTSurface?
    let stepDown: StepDown
    let logger: Logger

    func run() async throws {
        do {
            try await cancelWhenGracefulShutdown { try await keep() }
        } catch is CancellationError {
        }
        if Task.isShuttingDownGracefully || Task.isCancelled, stepDown.reason == nil {
            do {
                try await lease.store.releaseLease(holder: lease.instance, token: lease.standing.token.withLock { $0 })
                logger.info("lease released: a standby may take over at once")
            } catch {
                logger.warning("the lease could not be released (a standby takes over when it lapses)", metadata: ["error": "\(error)"])
            }
        }
    }

    private func keep() async throws {
        var unreachable = false
        while true {
            // While the database is out, a sole writer asks again sooner (it is back within 0.25 s of the store).
            try await Task.sleep(for: unreachable ? .milliseconds(250) : settings.renewEvery)
            let held: Bool
            let started = ContinuousClock.now
            let token = lease.standing.token.withLock { $0 }
            do {
                held = try await lease.store.renewLease(holder: lease.instance, token: token, ttl: settings.ttl)
            } catch is CancellationError {
                throw CancellationError()
            } catch EventLogError.unreachable(let reason) where lease.standing.soleWriter {
                if !unreachable {
                    logger.error("the log's database cannot be reached (\(reason)): commands are answered log_unavailable until it is back")
                }
                unreachable = true
                continue
            } catch {
                throw stepDown("the lease cannot be renewed: \(error)")
            }
            if !held, lease.standing.soleWriter, try await takeBack(after: token) {
                unreachable = false
                continue
            }
            if !held {
                let holder = try? await lease.store.leaseHolder()
                let now = holder.map { "instance \($0.holder) holds it (token \($0.token))" } ?? "it lapsed"
                let another = holder.map { $0.holder != lease.instance && $0.secondsLeft > 0 } ?? false
                throw stepDown("lost the lease (token \(token)): \(now)", anotherIsActive: another)
            }
            if unreachable { logger.notice("the log's database is back: commands are carried out again") }
            unreachable = false
            lease.standing.renewed(startedAt: started)
            // Reconnected to the broker while the lease was unconfirmed: announce now that it is.
            if let surface, surface.takeSkippedAnnouncement() { await surface.announce() }
        }
    }

    /// A sole writer whose lease lapsed while the database was out takes it again (no other
    /// instance can hold it): fences its appends with the new token, catches its read models up and
    /// acts again. False when another instance holds it (the caller steps down).
    private func takeBack(after token: UInt64) async throws -> Bool {
        let started = ContinuousClock.now
        guard let fresh = try await lease.store.acquireLease(holder: lease.instance, ttl: settings.ttl) else { return false }
        lease.store.fence(holder: lease.instance, token: fresh)
        lease.standing.token.withLock { $0 = fresh }
        try await lease.hub.catchUpWithoutBlocking()
        lease.standing.renewed(startedAt: started)
        logger.notice(
            "the log's database is back: instance \(lease.instance) holds the lease again (token \(fresh), was \(token)); commands are carried out again"
        )
        if let surface, surface.takeSkippedAnnouncement() { await surface.announce() }
        return true
    }

    /// Steps down; `hub/status` says `offline` unless another instance is active (see ``StepDown``).
    private func stepDown(_ reason: String, anotherIsActive: Bool = false) -> HubError {
        self.stepDown.record(reason, anotherIsActive: anotherIsActive)
        return HubError.failed("stepped down: \(reason)")
    }
}
