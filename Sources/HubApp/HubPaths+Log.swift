import Foundation
import HubEngine
import HubHTTP
import HubLog
import HubMQTT
import HubPostgres

extension HubPaths {
    /// The event log named for messages: the segment log's directory, or the PostgreSQL URL with
    /// its password masked.
    public var logDescription: String {
        guard let logURL else { return log }
        return (try? PostgresLocation(url: logURL).description) ?? PostgresLocation.masked(logURL)
    }

    /// Opens the event log: the PostgreSQL log at ``logURL`` when set (with the `PG*` environment
    /// variables filling what the URL leaves out), else the embedded segment store at ``log``: the
    /// one place that picks the backend.
    ///
    /// - Parameters:
    ///   - readOnly: Open without the writer's lock and without repairing anything (beside a running hub).
    ///   - options: The segment store's settings.
    /// - Returns: The opened store.
    /// - Throws: `EventLogError` when the log cannot be opened (locked, corrupt, missing when
    ///   read-only, a URL that does not parse, a server that cannot be reached).
    /// The data directory's recorded formats are checked first (``DataFormats``): a directory a
    /// newer hub wrote is refused before anything is opened. A writer records this hub's formats
    /// once it holds the log.
    public func openEventStore(
        readOnly: Bool = false, options: SegmentStoreOptions = SegmentStoreOptions()
    ) async throws -> any EventStore {
        try DataFormats.check(dataDirectory: dataDirectory)
        let store: any EventStore
        if let logURL {
            store = try await PostgresEventStore.open(location: PostgresLocation(url: logURL), readOnly: readOnly)
        } else {
            store = try SegmentStore(directory: log, options: options, readOnly: readOnly)
        }
        if !readOnly {
            do { try DataFormats.record(dataDirectory: dataDirectory) } catch {
                await store.close()
                throw HubError.failed("\(dataDirectory)/\(DataFormats.fileName) cannot be written: \(error)")
            }
        }
        return store
    }
}
