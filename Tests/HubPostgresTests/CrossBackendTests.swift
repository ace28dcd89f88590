import BrokerHarness
import Foundation
import HubApp
import HubDomain
import HubEngine
import HubHTTP
import HubHistory
import HubLog
import HubMQTT
import PostgresHarness
import Testing

/// The same events give the same chain hashes and the same export in both backends, and a log moves
/// between them with `export` then `import`, exactly.
@Suite(.serialized) struct CrossBackendTests {
    static let commands: [HubCommand] = [
        .registerDevice(id: "lamp", driver: "virtual", name: "Lamp", config: "{}", hardwareId: nil),
        .switchDevice(id: "lamp", target: .on),
        .reportSwitch(id: "lamp", state: .on, manual: false),
        .recordReading(subject: .device("lamp"), quantity: .power, value: 60.5, measuredAt: 1_795_000_000_000_000),
        .switchDevice(id: "ghost", target: .toggle),
        .renameDevice(id: "lamp", name: "Desk lamp")
    ]

    /// Runs the same commands through a hub on `place`'s log and exports it.
    func runHub(on place: LogPlace) async throws -> String {
        let hub = try await Hub(paths: place.paths)
        for (i, command) in Self.commands.enumerated() {
            _ = try await hub.execute(command, commandId: "c-\(i)", actor: "test", now: 1_795_000_000_000_000 + Int64(i))
        }
        let retried = try await hub.execute(Self.commands[0], commandId: "c-0", actor: "test", now: 0)
        guard case .accepted(_, _, true) = retried else { throw HubError.failed("not a duplicate: \(retried)") }
        try await hub.close()
        let store = try await place.open(readOnly: true)
        let file = place.dataDirectory + "/export.jsonl"
        try await LogTransfer.export(store: store, to: file)
        await store.close()
        return try String(contentsOfFile: file, encoding: .utf8)
    }

    @Test func theSameEventsGiveTheSameHashesAndTheSameExport() async throws {
        guard let pg = try LogPlace.fresh(.postgres), let seg = try LogPlace.fresh(.segments) else { return }
        let segmentExport = try await runHub(on: seg)
        let postgresExport = try await runHub(on: pg)
        #expect(segmentExport.split(separator: "\n").count >= Self.commands.count)
        #expect(postgresExport == segmentExport)
        let a = try await seg.open(readOnly: true), b = try await pg.open(readOnly: true)
        #expect(a.lastSequence == b.lastSequence)
        for sequence in 0...a.lastSequence { #expect(try await a.chainHash(at: sequence) == b.chainHash(at: sequence)) }
        #expect(try await b.chainHash(at: b.lastSequence + 1) == nil)
        #expect(try await a.verify(progress: nil).headHash == b.verify(progress: nil).headHash)
        // Read from the middle: the views carry the stored hashes.
        var middle: [[UInt8]] = []
        try await b.readViews(from: 3, through: 4) {
            middle.append($0.hash); return true
        }
        #expect(try await middle == [a.chainHash(at: 3)!, a.chainHash(at: 4)!])
        // The hub reopens on PostgreSQL with the same read models.
        let hub = try await Hub(paths: pg.paths)
        #expect(await hub.device("lamp")?.name == "Desk lamp")
        try await hub.close()
        await a.close(); await b.close()
    }

    @Test func exportThenImportMovesALogBetweenBackendsExactly() async throws {
        guard let pg = try LogPlace.fresh(.postgres), let seg = try LogPlace.fresh(.segments),
            let back = try LogPlace.fresh(.segments)
        else { return }
        let original = try await runHub(on: seg)
        // segment log -> PostgreSQL
        let count = try await LogTransfer.importFile(seg.dataDirectory + "/export.jsonl", into: pg.paths)
        #expect(count == UInt64(original.split(separator: "\n").count))
        let fromPostgres = pg.dataDirectory + "/moved.jsonl"
        let store = try await pg.open(readOnly: true)
        try await LogTransfer.export(store: store, to: fromPostgres)
        await store.close()
        #expect(try String(contentsOfFile: fromPostgres, encoding: .utf8) == original)
        // A second import into a log that holds events is refused, and writes nothing.
        await #expect(throws: HubError.self) { try await LogTransfer.importFile(fromPostgres, into: pg.paths) }
        // PostgreSQL -> segment log
        _ = try await LogTransfer.importFile(fromPostgres, into: back.paths)
        let segments = try await back.open(readOnly: true)
        try await LogTransfer.export(store: segments, to: back.dataDirectory + "/again.jsonl")
        await segments.close()
        #expect(try String(contentsOfFile: back.dataDirectory + "/again.jsonl", encoding: .utf8) == original)
    }

    @Test func anAlteredRowIsReportedByVerify() async throws {
        guard let pg = try LogPlace.fresh(.postgres), let server = try PostgresServer.shared() else { return }
        let store = try await pg.open()
        for n in 0..<5 { _ = try await store.append(request("s", [event(n)])) }
        await store.close()
        let database = String(pg.url!.split(separator: "/").last!)
        _ = try server.psql("UPDATE hub_events SET payload = 'forged'::bytea WHERE seq = 3", database: database)
        let reopened = try await pg.open(readOnly: true)
        await #expect {
            try await reopened.verify(progress: nil)
        } throws: { error in
            guard case .corrupt(_, _, let sequence, let reason)? = error as? EventLogError else { return false }
            return sequence == 3 && reason.contains("hash chain")
        }
        await reopened.close()
    }
}
