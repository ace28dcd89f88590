import Foundation
import HubApp
import HubDomain
import HubEngine
import HubHTTP
import HubHistory
import HubLog
import HubMQTT
import HubPostgres
import PostgresHarness
import Testing

/// What is particular to the PostgreSQL backend: group commit, a lost connection, its settings.
@Suite(.serialized) struct PostgresStoreTests {
    @Test func concurrentAppendsShareTransactions() async throws {
        guard let place = try LogPlace.fresh(.postgres) else { return }
        let store = try await PostgresEventStore.open(location: PostgresLocation(url: place.url!))
        let writers = 64
        let started = ContinuousClock.now
        try await withThrowingTaskGroup(of: AppendResult.self) { group in
            for n in 0..<writers { group.addTask { try await store.append(request("s\(n)", [event(n)], commandId: "c-\(n)")) } }
            for try await _ in group {}
        }
        let elapsed = ContinuousClock.now - started
        #expect(store.lastSequence == UInt64(writers))
        #expect(
            store.transactionsCommitted < UInt64(writers),
            "group commit: \(store.transactionsCommitted) transactions for \(writers) appends")
        print("PostgresStoreTests: \(writers) concurrent appends in \(store.transactionsCommitted) transactions, \(elapsed)")
        await store.close()
    }

    @Test func aLostConnectionIsConnectedAgainAndFollowersKeepWaiting() async throws {
        guard let place = try LogPlace.fresh(.postgres), let server = try PostgresServer.shared() else { return }
        let store = try await PostgresEventStore.open(location: PostgresLocation(url: place.url!))
        _ = try await store.append(request("a", [event(0)]))
        let follower = Task { try await store.waitForAppend(after: 1) }
        let database = String(place.url!.split(separator: "/").last!)
        _ = try server.psql(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '\(database)' AND pid <> pg_backend_pid()",
            database: database)
        #expect(await waitUntil(timeout: 10) { store.reconnections >= 1 && store.writerFault == nil }, "\(store.writerFault ?? "")")
        // The follower was not failed: the next append wakes it.
        #expect(try await store.append(request("a", [event(1)], expected: .exact(0))).firstSequence == 2)
        try await follower.value
        await store.close()
        let reopened = try await place.open(readOnly: true)
        #expect(reopened.lastSequence == 2)
        await reopened.close()
    }

    /// While the database is down, every read and append fails at once with `unreachable`, naming
    /// the log: an error is never read as "no stream" or "no such command". Once it is back, the
    /// store has connected again by itself and answers as before.
    @Test func aStoppedDatabaseIsAnErrorNotAnEmptyAnswer() async throws {
        guard PostgresServer.binaries() != nil else { return }
        let server = try PostgresServer.start()  // its own: this test stops it
        defer { server.stop() }
        let url = try server.createDatabase()
        let store = try await PostgresEventStore.open(location: PostgresLocation(url: url))
        _ = try await store.append(request("s", [event(0), event(1)], commandId: "c-1"))
        server.stopKeepingData()
        #expect(await waitUntil(timeout: 10) { store.writerFault != nil }, "the store did not notice the database went away")
        func unreachable(_ error: any Error) -> Bool {
            guard case .unreachable(let reason)? = error as? EventLogError else { return false }
            return reason.contains(PostgresLocation.masked(url))
        }
        await #expect { try await store.streamVersion("s") } throws: { unreachable($0) }
        await #expect { try await store.commandResult("c-1") } throws: { unreachable($0) }
        await #expect { try await store.records(from: 1, through: 2) } throws: { unreachable($0) }
        await #expect { try await store.read(from: 1, through: 2) { _ in true } } throws: { unreachable($0) }
        await #expect { try await store.readViews(from: 1, through: 2) { _ in true } } throws: { unreachable($0) }
        await #expect { try await store.chainHash(at: 2) } throws: { unreachable($0) }
        await #expect { try await store.verify(progress: nil) } throws: { unreachable($0) }
        await #expect { try await store.append(request("s", [event(2)], commandId: "c-2")) } throws: { unreachable($0) }
        try server.restart()
        #expect(await waitUntil(timeout: 10) { store.writerFault == nil }, "\(store.writerFault ?? "")")
        #expect(try await store.streamVersion("s") == 1)
        #expect(try await store.commandResult("c-1")?.lastSequence == 2)
        #expect(try await store.records(from: 1, through: 9).map(\.sequence) == [1, 2])
        #expect(try await store.append(request("s", [event(2)], expected: .exact(1), commandId: "c-2")).firstSequence == 3)
        await store.close()
    }

    /// A server that neither answers nor closes the connection (stopped with SIGSTOP) does not hold
    /// a lookup or an append forever: past the statement deadline it fails with `unreachable`, and
    /// once the server runs again the store has connected again by itself.
    @Test func aServerThatDoesNotAnswerFailsAStatementAtItsDeadline() async throws {
        guard PostgresServer.binaries() != nil else { return }
        let server = try PostgresServer.start()  // its own: this test stops it
        defer { server.stop() }
        let url = try server.createDatabase()
        let store = try await PostgresEventStore.open(location: PostgresLocation(url: url), statementDeadline: .seconds(2))
        _ = try await store.append(request("s", [event(0)], commandId: "c-1"))
        let postmaster = try server.pids()
        for pid in postmaster { kill(pid, SIGSTOP) }
        let started = ContinuousClock.now
        await #expect { try await store.commandResult("c-1") } throws: { error in
            guard case .unreachable(let reason)? = error as? EventLogError else { return false }
            return reason.contains("no answer from PostgreSQL within 2")
        }
        let waited = ContinuousClock.now - started
        #expect(waited >= .seconds(2) && waited < .seconds(10), "\(waited)")
        await #expect(throws: EventLogError.self) { try await store.append(request("s", [event(1)], commandId: "c-2")) }
        for pid in postmaster { kill(pid, SIGCONT) }
        #expect(await waitUntil(timeout: 20) { store.writerFault == nil }, "\(store.writerFault ?? "")")
        #expect(try await store.commandResult("c-1")?.lastSequence == 1)
        await store.close()
    }

    @Test func theLocationComesFromTheURLThenThePGVariables() throws {
        let env = ["PGHOST": "db.example", "PGPORT": "6432", "PGUSER": "ops", "PGPASSWORD": "pw-env", "PGDATABASE": "hubs"]
        let full = try PostgresLocation(url: "postgres://hub:s%40cret@127.0.0.1:5433/log", environment: env)
        #expect(full == PostgresLocation(host: "127.0.0.1", port: 5433, user: "hub", password: "s@cret", database: "log"))
        #expect(full.description == "postgres://hub:***@127.0.0.1:5433/log")
        let bare = try PostgresLocation(url: "postgresql://", environment: env)
        #expect(bare == PostgresLocation(host: "db.example", port: 6432, user: "ops", password: "pw-env", database: "hubs"))
        #expect(!bare.description.contains("pw-env"))
        let defaults = try PostgresLocation(url: "postgres://", environment: [:])
        #expect(defaults == PostgresLocation(host: "localhost", port: 5432, user: "postgres", password: nil, database: "postgres"))
        #expect(throws: EventLogError.self) { try PostgresLocation(url: "postgres://h:99999/x", environment: [:]) }
        #expect(throws: EventLogError.self) { try PostgresLocation(url: "postgres://h/x?connect_timeout=3", environment: [:]) }
        #expect(PostgresLocation.masked("mysql://u:secret@h/x") == "mysql://u:***@h/x")
    }

    @Test func theConfigurationFileNamesTheLog() throws {
        let good = try HubConfig.parse(JSONValue.parse(Array(#"{"log":"postgres://hub@db:5432/hub"}"#.utf8)))
        #expect(good.log == "postgres://hub@db:5432/hub")
        #expect(HubPaths(dataDirectory: "/d", logURL: good.log).logDescription == "postgres://hub@db:5432/hub")
        #expect {
            try HubConfig.parse(JSONValue.parse(Array(#"{"log":"mysql://hub:secret@db/hub"}"#.utf8)))
        } throws: { error in
            let text = "\(error)"
            return text.contains("log") && text.contains("postgres://") && !text.contains("secret")
        }
    }

    @Test func theConfigurationNamesTheInstanceAndItsLease() throws {
        let good = try HubConfig.parse(JSONValue.parse(Array(#"{"instance":"b-2","lease_seconds":5}"#.utf8)))
        #expect(good.lease?.instance == "b-2" && good.lease?.ttl == .seconds(5))
        #expect(HubConfig().lease == nil, "no instance: no lease, a single hub as before")
        for bad in [#"{"instance":"a/b"}"#, #"{"instance":""}"#, #"{"lease_seconds":0.5}"#] {
            #expect(throws: HubConfig.Problem.self, "\(bad)") { try HubConfig.parse(JSONValue.parse(Array(bad.utf8))) }
        }
        #expect { try HubConfig.parse(JSONValue.parse(Array(#"{"instance":"a b"}"#.utf8))) } throws: {
            "\($0)".contains("instance") && "\($0)".contains("letters, digits")
        }
    }
}

/// Waits until `condition` holds (false: not within `timeout` seconds).
func waitUntil(timeout: Double, _ condition: () -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return condition()
}
