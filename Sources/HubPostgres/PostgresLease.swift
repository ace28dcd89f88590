import HubLog
import NIOCore
import PostgresNIO

/// Who holds the lease of the hubs sharing one PostgreSQL log, as ``PostgresEventStore/leaseHolder()`` reads it.
public struct PostgresLease: Sendable, Equatable {
    /// The active instance's name (empty: never held).
    public var holder: String
    /// Raised on every acquisition: an append carrying an older token is fenced.
    public var token: UInt64
    /// Seconds until the lease expires unless renewed (negative: expired), by the database's clock.
    public var secondsLeft: Double
}

/// The lease that makes one of several hubs sharing the log the active one (hot standby; see
/// docs/operations.md). One row, `hub_lease`: holder, fencing token, expiry as database time, so
/// the hubs' own clocks never matter.
///
/// - An instance acquires the lease only when it is expired (or was released): one `UPDATE ...
///   WHERE expires_at < now() RETURNING token`, which raises the token.
/// - The holder renews it well before it expires; a renewal that finds another holder or token, or
///   an expired lease, means it lost it.
/// - After ``fence(holder:token:)``, every append transaction (`hub_append`) first checks
///   (`FOR SHARE`, after the head lock) that this holder and token still hold an unexpired lease,
///   and otherwise appends nothing and fails with ``EventLogError/fenced(_:)``: a paused or
///   cut-off former active can never append, even before it learns it lost the lease.
///
/// These statements run on the store's reader connection (single statements, committed at once).
extension PostgresEventStore {
    /// Takes the lease for `holder` when it is free or expired.
    ///
    /// - Parameters:
    ///   - holder: This instance's name.
    ///   - ttl: How long the lease lasts unless renewed.
    /// - Returns: The new fencing token, or nil when another instance holds the lease.
    /// - Throws: ``EventLogError/unreachable(_:)`` when the database cannot be reached,
    ///   ``EventLogError/invalid(_:)`` when it refuses the statement.
    public func acquireLease(holder: String, ttl: Duration) async throws -> UInt64? {
        let query: PostgresQuery = """
            UPDATE hub_lease SET holder = \(holder), token = token + 1, expires_at = now() + make_interval(secs => \(Self.seconds(ttl))) \
            WHERE id = 1 AND expires_at < now() RETURNING token
            """
        return try await leaseToken(query, "cannot acquire the lease")
    }

    /// Extends the lease `holder` holds with `token`.
    ///
    /// - Returns: false when the lease is no longer this holder's (another took it, or it expired).
    /// - Throws: ``EventLogError/unreachable(_:)`` when the database cannot be reached,
    ///   ``EventLogError/invalid(_:)`` when it refuses the statement (the caller cannot know whether
    ///   it still holds the lease: it must not act as if it did).
    public func renewLease(holder: String, token: UInt64, ttl: Duration) async throws -> Bool {
        let query: PostgresQuery = """
            UPDATE hub_lease SET expires_at = now() + make_interval(secs => \(Self.seconds(ttl))) \
            WHERE id = 1 AND holder = \(holder) AND token = \(Int64(token)) AND expires_at > now() RETURNING token
            """
        return try await leaseToken(query, "cannot renew the lease") != nil
    }

    /// Gives the lease up at once (a graceful stop), so a standby need not wait for it to expire.
    /// Does nothing when `holder` and `token` no longer hold it.
    public func releaseLease(holder: String, token: UInt64) async throws {
        let query: PostgresQuery = """
            UPDATE hub_lease SET expires_at = '-infinity' WHERE id = 1 AND holder = \(holder) AND token = \(Int64(token)) RETURNING token
            """
        _ = try await leaseToken(query, "cannot release the lease")
    }

    /// Who holds the lease now, or nil when it was never held.
    public func leaseHolder() async throws -> PostgresLease? {
        // A released (or never held) lease expires at -infinity, which cannot be subtracted from.
        let query: PostgresQuery = """
            SELECT holder, token, CASE WHEN isfinite(expires_at) THEN extract(epoch FROM expires_at - now())::float8 END \
            FROM hub_lease WHERE id = 1
            """
        let rows = try await ask(query, "cannot read the lease")
        do {
            guard let row = rows.first else { return nil }
            let (holder, token, left) = try row.decode((String, Int64, Double?).self)
            if holder.isEmpty { return nil }
            return PostgresLease(holder: holder, token: UInt64(token), secondsLeft: left ?? -.infinity)
        } catch {
            throw Self.describe(error, location, "cannot read the lease")
        }
    }

    /// From now on, every append checks in its transaction that `holder` holds the lease with `token`.
    public func fence(holder: String, token: UInt64) {
        state.withLock { $0.fence = (holder, Int64(token)) }
    }

    private func leaseToken(_ query: PostgresQuery, _ what: String) async throws -> UInt64? {
        let rows = try await ask(query, what)
        do {
            return try rows.first.map { UInt64(try $0.decode(Int64.self)) }
        } catch {
            throw Self.describe(error, location, what)
        }
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
