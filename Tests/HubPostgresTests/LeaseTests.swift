import Foundation
import HubLog
import HubPostgres
import PostgresHarness
import Testing

/// The lease and its fencing token (hot standby), on two stores sharing one real PostgreSQL log.
@Suite(.serialized) struct LeaseTests {
    static func append(_ store: PostgresEventStore, _ id: String) async throws -> AppendResult {
        try await store.append(
            AppendRequest(
                stream: "device/lamp", expected: .any, causation: Causation(commandId: id, actor: "test"),
                events: [ProposedEvent(type: "DeviceRenamed", schemaVersion: 1, timestamp: 0, payload: Array("{}".utf8))]))
    }

    @Test func onlyTheHolderAppendsAndAnOldTokenIsFencedInTheTransaction() async throws {
        guard let place = try LogPlace.fresh(.postgres) else { return }
        let a = try await #require(try await place.open() as? PostgresEventStore)
        let b = try await #require(try await place.open() as? PostgresEventStore)
        // Long enough that a test process busy with other suites cannot let it lapse by accident.
        let tokenA = try #require(try await a.acquireLease(holder: "a", ttl: .seconds(30)))
        #expect(try await b.acquireLease(holder: "b", ttl: .seconds(1)) == nil, "held and not expired: b must wait")
        #expect(try await a.leaseHolder()?.holder == "a")
        a.fence(holder: "a", token: tokenA)
        #expect(try await Self.append(a, "c-1").firstSequence == 1)
        #expect(try await a.renewLease(holder: "a", token: tokenA, ttl: .seconds(1)))

        // a stops renewing (paused): the lease lapses a second after its last renewal, b takes it
        // with a higher token.
        try await Task.sleep(for: .milliseconds(1300))
        let tokenB = try #require(try await b.acquireLease(holder: "b", ttl: .seconds(30)))
        #expect(tokenB > tokenA)
        b.fence(holder: "b", token: tokenB)

        // a's next append is fenced, appends nothing; its renewal says it lost the lease.
        await #expect(throws: EventLogError.self) { try await Self.append(a, "c-2") }
        do { _ = try await Self.append(a, "c-3") } catch let error as EventLogError {
            guard case .fenced(let reason) = error else { Issue.record("not fenced: \(error)"); return }
            #expect(reason.contains("instance b holds the lease"), "\(reason)")
        }
        #expect(try await a.renewLease(holder: "a", token: tokenA, ttl: .seconds(1)) == false)
        #expect(try await b.commandResult("c-2") == nil)
        #expect(try await b.commandResult("c-3") == nil)
        #expect(try await Self.append(b, "c-4").firstSequence == 2, "nothing of a's fenced appends took a sequence")

        // A release hands it over at once; the released lease reads as lapsed (its expiry is -infinity).
        try await b.releaseLease(holder: "b", token: tokenB)
        let released = try await a.leaseHolder()
        #expect(released?.holder == "b" && released.map { $0.secondsLeft < 0 } == true, "\(String(describing: released))")
        #expect(try await a.acquireLease(holder: "a", ttl: .seconds(30)) == tokenB + 1)
        await a.close()
        await b.close()
    }

    /// The batch's lookups are one query each: a request PostgreSQL cannot store (a NUL) fails
    /// alone, with its own message, and the others in its batch go through.
    @Test func aNULInOneRequestFailsOnlyThatRequestOfTheBatch() async throws {
        guard let place = try LogPlace.fresh(.postgres) else { return }
        let store = try await #require(try await place.open() as? PostgresEventStore)
        let event = ProposedEvent(type: "DeviceRenamed", schemaVersion: 1, timestamp: 0, payload: Array("{}".utf8))
        let results = await store.appendAll([
            AppendRequest(stream: "device/a", expected: .noStream, causation: Causation(commandId: "n-1", actor: "test"), events: [event]),
            AppendRequest(
                stream: "device/\u{0}", expected: .noStream, causation: Causation(commandId: "n-2", actor: "test"), events: [event]),
            AppendRequest(stream: "device/a", expected: .exact(0), causation: Causation(commandId: "n-1", actor: "test"), events: [event])
        ])
        #expect((try? results[0].get())?.firstSequence == 1)
        guard case .failure(EventLogError.invalid(let message)) = results[1] else { Issue.record("\(results[1])"); return }
        #expect(message.contains("NUL"), "\(message)")
        #expect((try? results[2].get())?.duplicate == true)
        await store.close()
    }

    @Test func aStoreWithoutAFenceAppendsAsAlways() async throws {
        guard let place = try LogPlace.fresh(.postgres) else { return }
        let store = try await #require(try await place.open() as? PostgresEventStore)
        _ = try await store.acquireLease(holder: "someone", ttl: .seconds(30))
        #expect(try await Self.append(store, "c-1").firstSequence == 1, "a single hub (no --instance) takes no lease")
        await store.close()
    }
}
