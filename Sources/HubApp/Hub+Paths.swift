import HubDomain
import HubEngine
import HubLog
import HubMetrics
import HubRelease

extension Hub {
    /// Opens the data directory's own event log (see ``HubPaths/openEventStore(readOnly:options:)``)
    /// and starts the hub on it.
    ///
    /// - Parameter metrics: where appends and the log's data syncs are measured (unless
    ///   `logOptions` already has a sync observer).
    public init(
        paths: HubPaths, limits: DomainLimits = .standard, snapshotEvery: UInt64 = 10_000,
        logOptions: SegmentStoreOptions = SegmentStoreOptions(), metrics: HubMetrics = .disabled
    ) async throws {
        var logOptions = logOptions
        if logOptions.syncObserver == nil, metrics !== HubMetrics.disabled { logOptions.syncObserver = metrics.syncObserver }
        // Said among the opening notes: a directory of older formats, which this hub now writes in its own.
        let formats = try DataFormats.check(dataDirectory: paths.dataDirectory)
        try await self.init(
            store: paths.openEventStore(options: logOptions), paths: paths, limits: limits, snapshotEvery: snapshotEvery,
            metrics: metrics, notes: formats.map { [$0 + "; it is now written in this hub's (\(HubRelease.description))"] } ?? [])
    }
}
