import Synchronization

/// Whether the active hub may still speak for the hub on MQTT: its last renewal (or acquisition)
/// began less than the lease's time-to-live ago. A process that was paused (SIGSTOP) or cut off
/// longer than that finds it false the moment it runs again, before it has asked the database: it
/// must not announce itself (`online`, `<base>/status/active`) over the instance that took over.
public final class LeaseStanding: Sendable {
    private let renewedAt = Mutex<ContinuousClock.Instant>(.now)
    package let ttl: Duration
    /// The lease is under a derived name (no `--instance`): this hub is the log's only writer, so
    /// no other instance can be active while its lease is unconfirmed. It then answers commands
    /// `log_unavailable` (retryable) instead of keeping silent, and rides a database outage out
    /// instead of stepping down (``LeaseKeeper``).
    public let soleWriter: Bool
    /// The fencing token held now (a sole writer takes the lease again after a database outage,
    /// with a new token).
    package let token: Mutex<UInt64>

    /// - Parameters:
    ///   - ttl: How long a renewal holds the lease.
    ///   - token: The fencing token acquired.
    ///   - soleWriter: See ``soleWriter``.
    package init(ttl: Duration, token: UInt64 = 0, soleWriter: Bool = false) {
        self.ttl = ttl
        self.token = Mutex(token)
        self.soleWriter = soleWriter
    }

    /// A renewal that began at `start` succeeded.
    package func renewed(startedAt start: ContinuousClock.Instant) { renewedAt.withLock { $0 = max($0, start) } }

    package var isCurrent: Bool { renewedAt.withLock { ContinuousClock.now < $0 + ttl } }

    /// How much sooner than ``isCurrent`` the hub stops acting: the lease's database expiry runs from
    /// the moment the database saw the renewal, a little after it began here, so the margin only
    /// covers the two clocks' drift and the time between this check and the act it allows.
    package var margin: Duration { ttl / 6 }

    /// Whether the hub may still act as the active one: hand a command to a device, take a command,
    /// answer one. Read on the monotonic clock at the moment of acting, so a process that was paused
    /// (SIGSTOP, a frozen VM) finds it false the instant it runs again, before anything is sent.
    public var mayAct: Bool { renewedAt.withLock { ContinuousClock.now < $0 + ttl - margin } }
}
