import Foundation
import HubLog
import HubPostgres
import Logging
import ServiceLifecycle

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

    public init(instance: String, ttl: Duration = .seconds(3)) {
        self.instance = instance
        self.ttl = ttl
    }

    /// Names a hub instance may have: they become part of an MQTT client id and topic.
    public static func problem(instance: String) -> String? {
        let allowed = instance.unicodeScalars.allSatisfy { ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "-" || $0 == "_" }
        if instance.isEmpty || instance.count > 64 || !allowed {
            return "instance name \"\(instance)\": 1 to 64 letters, digits, - or _"
        }
        return nil
    }
}

/// The lease this process holds once it is the active hub.
public struct ActiveLease: Sendable {
    public let instance: String
    public let token: UInt64
    /// When it was acquired (seconds since the epoch).
    public let since: Date
    let store: PostgresEventStore

    /// The retained `<base>/status/active` payload: `{"instance":"b","since":"…","token":7}`.
    var announcement: [UInt8] {
        Array(#"{"instance":"\#(instance)","since":"\#(since.formatted(.iso8601))","token":\#(token)}"#.utf8)
    }
}

/// Thrown when the hub is asked to stop (SIGINT/SIGTERM) while it is a standby.
public struct StandbyStopped: Error, CustomStringConvertible {
    public var description: String { "stopped while standby" }
}

/// The standby phase: follows the log (the store's LISTEN/NOTIFY moves its last sequence; the read
/// models catch up to it) and tries to take the lease, until it has it.
enum Standby {
    /// - Parameters:
    ///   - stop: Asked between tries: true ends the wait with ``StandbyStopped``.
    /// - Returns: The lease, already fenced into the store: every append from now on checks it.
    static func untilActive(hub: Hub, settings: LeaseSettings, logger: Logger, stop: @Sendable () -> Bool) async throws -> ActiveLease {
        guard let store = hub.store as? PostgresEventStore else {
            throw HubError.usage("--instance \(settings.instance): a hot standby shares the active hub's log in PostgreSQL (--log postgres://...); this log is \(type(of: hub.store))")
        }
        var said = false
        while true {
            if stop() { throw StandbyStopped() }
            if let token = try await store.acquireLease(holder: settings.instance, ttl: settings.ttl) {
                store.fence(holder: settings.instance, token: token)
                try await hub.catchUp() // everything the former active committed
                logger.notice("active: instance \(settings.instance) holds the lease (token \(token)); starting drivers, scheduler and commands")
                return ActiveLease(instance: settings.instance, token: token, since: Date(), store: store)
            }
            if !said, let holder = try await store.leaseHolder() {
                logger.notice("standby: instance \(settings.instance) follows the log; instance \(holder.holder) is active (token \(holder.token)); taking over when its lease lapses")
                said = true
            }
            try await hub.catchUp()
            try await Task.sleep(for: settings.pollEvery)
        }
    }
}

/// Renews the active hub's lease; when it cannot (another instance took it, it expired while this
/// process was paused, the database is unreachable), the hub steps down: it stops taking commands
/// and exits non-zero, so a supervisor (systemd) starts it again, as a standby. At a graceful
/// stop, it releases the lease so a standby takes over at once.
struct LeaseKeeper: Service {
    let lease: ActiveLease
    let settings: LeaseSettings
    let surface: MQTTSurface?
    let logger: Logger

    func run() async throws {
        do {
            try await cancelWhenGracefulShutdown { try await keep() }
        } catch is CancellationError {
        }
        if Task.isShuttingDownGracefully || Task.isCancelled {
            do {
                try await lease.store.releaseLease(holder: lease.instance, token: lease.token)
                logger.info("lease released: a standby may take over at once")
            } catch {
                logger.warning("the lease could not be released (a standby takes over when it lapses)", metadata: ["error": "\(error)"])
            }
        }
    }

    private func keep() async throws {
        while true {
            try await Task.sleep(for: settings.renewEvery)
            let held: Bool
            do {
                held = try await lease.store.renewLease(holder: lease.instance, token: lease.token, ttl: settings.ttl)
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                throw stepDown("the lease cannot be renewed: \(error)")
            }
            if !held {
                let now = (try? await lease.store.leaseHolder()).map { "instance \($0.holder) holds it (token \($0.token))" } ?? "it lapsed"
                throw stepDown("lost the lease (token \(lease.token)): \(now)")
            }
        }
    }

    /// `hub/status` now speaks for the new active: this hub's surface leaves without `offline`.
    private func stepDown(_ reason: String) -> HubError {
        surface?.leaveSilently()
        logger.error("stepping down: \(reason); no more appends from this instance (\(lease.instance))")
        return HubError.failed("stepped down: \(reason)")
    }
}
