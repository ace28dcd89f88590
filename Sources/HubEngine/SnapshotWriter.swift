import ServiceLifecycle

/// Writes the read models' snapshots off the command path: while it runs, the command that makes a
/// snapshot due (every `snapshotEvery` events) only signals it, and this service encodes and writes
/// it (``Hub/writeSnapshotOffTheActor()``). Signals coalesce: one snapshot is written however many
/// commands made it due meanwhile. At shutdown the hub's `close()` writes the last one.
public struct SnapshotWriter: Service {
    let hub: Hub

    /// A writer for `hub`'s snapshots.
    public init(hub: Hub) { self.hub = hub }

    /// Takes the due snapshots until the graceful shutdown; then the command path writes them again.
    public func run() async throws {
        let (dues, due) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        await hub.handSnapshots(to: due)
        for await _ in dues.cancelOnGracefulShutdown() { await hub.writeSnapshotOffTheActor() }
        await hub.handSnapshots(to: nil)
    }
}
