import Foundation
import HubLog
import HubPostgres
import PostgresHarness
import Testing

/// The PostgreSQL writer decides a batch against the head and stream versions it remembers and
/// sends it in one `CALL hub_append(...)`, which checks that view under the head lock. These tests
/// make the view stale on purpose (a second writer on the same log) and count the round trips.
@Suite(.serialized) struct PostgresWriterTests {
    static func open(_ place: LogPlace) async throws -> PostgresEventStore {
        try await PostgresEventStore.open(location: PostgresLocation(url: place.url!))
    }

    /// Each store's view goes stale at every turn: neither may accept an expected version that is no
    /// longer true, nor refuse one that has become true, nor reuse a sequence or a stream version.
    @Test func twoWritersTakingTurnsSeeEachOthersAppends() async throws {
        guard let place = try LogPlace.fresh(.postgres) else { return }
        let a = try await Self.open(place), b = try await Self.open(place)
        #expect(try await a.append(request("device/lamp", [event(0)], expected: .noStream)).streamVersion == 0)
        #expect(try await b.append(request("device/lamp", [event(1)], expected: .exact(0))).streamVersion == 1)
        // a last saw version 0: the database tells it the head moved, and it decides again.
        let third = try await a.append(request("device/lamp", [event(2)], expected: .exact(1)))
        #expect(third == AppendResult(firstSequence: 3, lastSequence: 3, streamVersion: 2, duplicate: false))
        #expect(try await b.append(request("device/other", [event(3)], expected: .noStream)).firstSequence == 4)
        await #expect(throws: EventLogError.wrongExpectedVersion(stream: "device/lamp", expected: .exact(1), actual: 2)) {
            try await b.append(request("device/lamp", [event(4)], expected: .exact(1)))
        }
        let records = try await allRecords(a)
        #expect(records.map(\.sequence) == [1, 2, 3, 4])
        #expect(records.filter { $0.stream == "device/lamp" }.map(\.streamVersion) == [0, 1, 2])
        #expect(try await a.verify(progress: nil).records == 4)
        await a.close()
        await b.close()
    }

    /// A command id another writer appended is found in the database (not in this writer's memory):
    /// answered as that append's duplicate, while the rest of the batch is appended after the head.
    @Test func aCommandIdAppendedByAnotherWriterIsADuplicateInABatch() async throws {
        guard let place = try LogPlace.fresh(.postgres) else { return }
        let a = try await Self.open(place), b = try await Self.open(place)
        _ = try await a.append(request("s", [event(0)], commandId: "a-0"))
        let original = try await b.append(request("s", [event(1), event(2)], commandId: "b-1"))
        let batch = await a.appendAll([
            request("s", [event(3)], commandId: "a-1"),
            request("t", [event(4)], expected: .noStream, commandId: "b-1"),
            request("s", [event(5)], expected: .exact(3), commandId: "a-2")
        ])
        #expect(try batch[0].get() == AppendResult(firstSequence: 4, lastSequence: 4, streamVersion: 3, duplicate: false))
        var again = original
        again.duplicate = true
        #expect(try batch[1].get() == again)
        #expect(try batch[2].get() == AppendResult(firstSequence: 5, lastSequence: 5, streamVersion: 4, duplicate: false))
        #expect(try await a.verify(progress: nil).records == 5)
        #expect(try await a.streamVersion("t") == nil)
        await a.close()
        await b.close()
    }

    /// Once the writer knows the head and a stream, a group commit is one statement: no `BEGIN`,
    /// lookups or `COMMIT` of their own.
    @Test func aGroupCommitIsOneRoundTrip() async throws {
        guard let place = try LogPlace.fresh(.postgres) else { return }
        let store = try await Self.open(place)
        let streams = 8
        for n in 0..<streams { _ = try await store.append(request("s\(n)", [event(n)])) }
        let (statements, transactions) = (store.writerStatements, store.transactionsCommitted)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for n in 0..<64 {
                group.addTask { _ = try await store.append(request("s\(n % streams)", [event(n)], commandId: "g-\(n)")) }
            }
            try await group.waitForAll()
        }
        #expect(store.lastSequence == UInt64(streams + 64))
        let sent = store.writerStatements - statements, committed = store.transactionsCommitted - transactions
        #expect(sent == committed, "\(sent) statements for \(committed) group commits")
        #expect(try await store.verify(progress: nil).records == streams + 64)
        await store.close()
    }
}
