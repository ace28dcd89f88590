import Foundation
import HubEngine
import HubLog
import HubPostgres

/// A command-line tool that writes a PostgreSQL log (`hub exec`, `hub import`) takes part in the
/// lease the hubs sharing it hold (see ``LeaseSettings``): it refuses, naming the writer, while a
/// hub holds the lease, and otherwise holds the lease itself while it writes (renewed every
/// second, released when it is done), so a hub starting meanwhile waits or refuses instead of
/// writing beside it. Its appends are fenced like an active hub's. On the segment log the log's
/// own lock keeps a second writer out; nothing is taken.
public final class ToolLease: Sendable {
    let store: PostgresEventStore
    let holder: String
    let token: UInt64
    private let renewal: Task<Void, Never>

    /// How long the tool's lease lasts unless renewed (renewed every third of it).
    static let ttl: Duration = .seconds(3)

    private init(store: PostgresEventStore, holder: String, token: UInt64) {
        self.store = store
        self.holder = holder
        self.token = token
        renewal = Task {
            while !Task.isCancelled {
                do { try await Task.sleep(for: Self.ttl / 3) } catch { return }
                // A renewal that fails leaves the fence to refuse the tool's later appends.
                guard (try? await store.renewLease(holder: holder, token: token, ttl: Self.ttl)) == true else { return }
            }
        }
    }

    /// Takes the lease of the PostgreSQL log `store` for `tool` (nil for any other backend).
    ///
    /// - Parameters:
    ///   - store: The log the tool is about to write.
    ///   - tool: What writes (`hub exec`), in the refusal and the holder's name.
    /// - Returns: The lease, to ``release()`` when done; nil when `store` is not on PostgreSQL.
    /// - Throws: `HubError.usage` naming the instance that holds the lease (and how long it has
    ///   left); what the database throws when it cannot be asked.
    public static func take(_ store: any EventStore, for tool: String) async throws -> ToolLease? {
        guard let store = store as? PostgresEventStore else { return nil }
        let holder = tool.replacingOccurrences(of: " ", with: "-") + "-\(getpid())"
        guard let token = try await store.acquireLease(holder: holder, ttl: ttl) else {
            let current = try await store.leaseHolder()
            let who =
                current.map {
                    "instance \($0.holder) holds its lease (token \($0.token), \(String(format: "%.1f", max(0, $0.secondsLeft))) s left)"
                }
                ?? "another writer holds its lease"
            throw HubError.usage(
                """
                \(tool): a hub writes this log: \(who); \(tool) would be a second writer and is refused, nothing was written. \
                Send the commands to that hub (MQTT or HTTP), or stop it first
                """)
        }
        store.fence(holder: holder, token: token)
        return ToolLease(store: store, holder: holder, token: token)
    }

    /// Stops renewing and gives the lease up, so a hub may take it at once.
    ///
    /// - Throws: What the database throws when it cannot be asked (the lease then lapses by itself).
    public func release() async throws {
        renewal.cancel()
        try await store.releaseLease(holder: holder, token: token)
    }
}
