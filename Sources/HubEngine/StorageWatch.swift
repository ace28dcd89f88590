import HubDomain
import HubLog
import Logging
import ServiceLifecycle

/// What the hub says about its disk: the log's ``StorageCondition`` and the last snapshot that
/// could not be written. Published retained on `<base>/status/storage` (see docs/mqtt.md).
public struct StorageReport: Sendable, Equatable {
    /// The log's storage condition (ok, or refusing appends because the disk is full).
    public var condition: StorageCondition
    /// Why the last snapshot was not written (the previous one stays in use), or nil.
    public var snapshotProblem: String?
    /// Why the history files stopped (a write to them failed), or nil.
    public var historyProblem: String? = nil

    /// The hub's report now.
    public static func current(_ hub: Hub) async -> StorageReport {
        StorageReport(condition: hub.storageCondition, snapshotProblem: await hub.snapshotProblem, historyProblem: await hub.historyProblem)
    }

    /// `{"state":"ok","snapshot_error":null,"history_error":null}`, or `{"state":"full","path":...,"since":...,"error":...,"snapshot_error":...,"history_error":...}`.
    public var json: JSONValue {
        var fields: [(String, JSONValue)]
        switch condition {
        case .ok:
            fields = [("state", "ok")]
        case let .full(path, since, reason):
            fields = [
                ("state", "full"), ("path", .string(path)), ("since", .string(ISO8601.format(micros: since))),
                ("error", .string(reason))
            ]
        }
        fields.append(("snapshot_error", snapshotProblem.map { .string($0) } ?? .null))
        fields.append(("history_error", historyProblem.map { .string($0) } ?? .null))
        return .object(fields)
    }
}

/// Watches the disk condition (a cheap look every 250 ms): says in the hub's log when the disk
/// fills up and when space is back, and hands each change to `changed` (the MQTT surface re-publishes
/// `<base>/status/storage`).
package struct StorageWatch: Service {
    let hub: Hub
    let changed: @Sendable (StorageReport) -> Void
    let logger: Logger
    var interval: Duration = .milliseconds(250)

    package init(hub: Hub, changed: @escaping @Sendable (StorageReport) -> Void, logger: Logger) {
        self.hub = hub
        self.changed = changed
        self.logger = logger
    }

    package func run() async throws {
        try? await cancelWhenGracefulShutdown { [self] in
            var last = StorageReport(condition: .ok, snapshotProblem: nil)
            while !Task.isCancelled {
                let now = await StorageReport.current(hub)
                if now != last {
                    say(now, after: last)
                    changed(now)
                    last = now
                }
                try await Task.sleep(for: interval)
            }
        }
    }

    func say(_ now: StorageReport, after last: StorageReport) {
        switch (last.condition, now.condition) {
        case (.ok, .full(let path, _, let reason)):
            logger.error(
                "the disk is full: commands are refused with storage_full until space is freed; state and queries are still served",
                metadata: ["path": "\(path)", "error": "\(reason)"])
        case (.full, .ok):
            logger.notice("space is back on the disk: the log takes commands again")
        default:
            break
        }
        if now.snapshotProblem != last.snapshotProblem, let problem = now.snapshotProblem {
            logger.warning("\(problem)")
        }
        if now.historyProblem != last.historyProblem, let problem = now.historyProblem {
            logger.warning("history files: \(problem); history queries are refused until then")
        }
    }
}
