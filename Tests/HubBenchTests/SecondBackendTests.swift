import Foundation
import HubApp
import HubBench
import HubDomain
import HubEngine
import HubHTTP
import HubHistory
import HubLog
import HubMQTT
import Testing

/// The SQLite peer is a second backend written against the protocol alone (its `readViews`,
/// `verify`, `appendAll` and `openingNotes` are the protocol's defaults): the hub runs on it, and
/// its log exports line for line like the segment store's.
@Suite struct SecondBackendTests {
    static let commands: [HubCommand] = [
        .registerDevice(id: "lamp", driver: "virtual", name: "Lamp", config: "{}", hardwareId: nil),
        .switchDevice(id: "lamp", target: .on),
        .reportSwitch(id: "lamp", state: .on, manual: false),
        .recordReading(subject: .device("lamp"), quantity: .power, value: 60.5, measuredAt: 1_795_000_000_000_000),
        .switchDevice(id: "ghost", target: .toggle),
        .renameDevice(id: "lamp", name: "Desk lamp")
    ]

    /// Runs the same commands through a hub on `store` and exports its log.
    func run(on store: any EventStore, data: String) async throws -> String {
        let hub = try await Hub(store: store, paths: HubPaths(dataDirectory: data))
        for (i, command) in Self.commands.enumerated() {
            _ = try await hub.execute(command, commandId: "c-\(i)", actor: "test", now: 1_795_000_000_000_000 + Int64(i))
        }
        // A retried command id is answered from the store, whichever it is.
        let retried = try await hub.execute(Self.commands[0], commandId: "c-0", actor: "test", now: 0)
        guard case .accepted(_, _, true) = retried else { throw HubError.failed("not a duplicate: \(retried)") }
        #expect(await hub.device("lamp")?.name == "Desk lamp")
        try await LogTransfer.export(store: store, to: data + "/export.jsonl")
        #expect(try await store.verify(progress: nil).records == store.lastSequence)
        try await hub.close()
        return try String(contentsOfFile: data + "/export.jsonl", encoding: .utf8)
    }

    @Test func theHubRunsOnSQLiteAndExportsTheSameChain() async throws {
        try await withTempDirectory { dir in
            let segments = try await run(on: try SegmentStore(directory: dir + "/a/log"), data: dir + "/a")
            let sqlite = try await run(on: try SQLiteEventStore(path: dir + "/b.sqlite"), data: dir + "/b")
            #expect(segments.split(separator: "\n").count == Self.commands.count)
            #expect(sqlite == segments)
            // Reopened, the hub folds the SQLite log (the default readViews) into the same read models.
            let hub = try await Hub(store: try SQLiteEventStore(path: dir + "/b.sqlite"), paths: HubPaths(dataDirectory: dir + "/c"))
            #expect(await hub.state.lastSequence == UInt64(Self.commands.count))
            #expect(await hub.device("lamp")?.name == "Desk lamp")
            try await hub.close()
        }
    }
}
