import Foundation
import HubApp
import HubEngine
import HubHTTP
import HubHistory
import HubLog
import HubMQTT
import Synchronization
import Testing

/// The EventStore contract, clause by clause, against the segment log and PostgreSQL alike, so a
/// clause cannot hold for one backend and silently not for the other.
@Suite(.serialized) struct EventStoreContractTests {
    @Test(arguments: Backend.allCases)
    func concurrentAppendsGetAGaplessSequenceAndDenseStreamVersions(_ backend: Backend) async throws {
        guard let place = try LogPlace.fresh(backend) else { return }
        let store = try await place.open()
        // 40 writers at once, over 4 streams: the store orders them.
        let results = await withTaskGroup(of: Result<AppendResult, Error>.self) { group in
            for n in 0..<40 {
                group.addTask {
                    do { return .success(try await store.append(request("s\(n % 4)", [event(n), event(n + 100)]))) } catch {
                        return .failure(error)
                    }
                }
            }
            var all: [Result<AppendResult, Error>] = []
            for await result in group { all.append(result) }
            return all
        }
        #expect(results.allSatisfy { (try? $0.get()) != nil })
        #expect(store.lastSequence == 80)
        let records = try await allRecords(store)
        #expect(records.map(\.sequence) == Array(1...80))
        for stream in 0..<4 {
            let versions = records.filter { $0.stream == "s\(stream)" }.map(\.streamVersion)
            #expect(versions == Array(0..<20))
            #expect(try await store.streamVersion("s\(stream)") == 19)
        }
        #expect(try await store.streamVersion("nobody") == nil)
        // Both events of one append are consecutive.
        for result in results { let r = try result.get(); #expect(r.lastSequence == r.firstSequence + 1) }
        #expect(try await store.verify(progress: nil).records == 80)
        await store.close()
    }

    @Test(arguments: Backend.allCases)
    func aWrongExpectedVersionWritesNothing(_ backend: Backend) async throws {
        guard let place = try LogPlace.fresh(backend) else { return }
        let store = try await place.open()
        let first = try await store.append(request("device/lamp", [event(1), event(2)], expected: .noStream))
        #expect(first == AppendResult(firstSequence: 1, lastSequence: 2, streamVersion: 1, duplicate: false))
        await #expect(throws: EventLogError.wrongExpectedVersion(stream: "device/lamp", expected: .noStream, actual: 1)) {
            try await store.append(request("device/lamp", [event(3)], expected: .noStream))
        }
        await #expect(throws: EventLogError.wrongExpectedVersion(stream: "device/lamp", expected: .exact(0), actual: 1)) {
            try await store.append(request("device/lamp", [event(3)], expected: .exact(0)))
        }
        await #expect(throws: EventLogError.wrongExpectedVersion(stream: "device/other", expected: .exact(0), actual: nil)) {
            try await store.append(request("device/other", [event(3)], expected: .exact(0)))
        }
        #expect(store.lastSequence == 2)
        let next = try await store.append(request("device/lamp", [event(3)], expected: .exact(1)))
        #expect(next == AppendResult(firstSequence: 3, lastSequence: 3, streamVersion: 2, duplicate: false))
        // In one batch, a refused request does not stop the others, and a later one sees an earlier one.
        let batch = await store.appendAll([
            request("device/lamp", [event(4)], expected: .exact(2)),
            request("device/lamp", [event(5)], expected: .exact(2)),
            request("device/lamp", [event(6)], expected: .exact(3))
        ])
        #expect((try? batch[0].get())?.streamVersion == 3)
        #expect((try? batch[1].get()) == nil)
        #expect((try? batch[2].get())?.firstSequence == 5)
        #expect(try await allRecords(store).map(\.sequence) == Array(1...5))
        await store.close()
    }

    @Test(arguments: Backend.allCases)
    func aCommandIdIsRememberedForGoodAcrossReopening(_ backend: Backend) async throws {
        guard let place = try LogPlace.fresh(backend) else { return }
        var store = try await place.open()
        _ = try await store.append(request("a", [event(0)]))
        let original = try await store.append(request("b", [event(1), event(2)], commandId: "cmd-1"))
        #expect(original == AppendResult(firstSequence: 2, lastSequence: 3, streamVersion: 1, duplicate: false))
        // The same id in one batch: the second is the first's duplicate.
        let batch = await store.appendAll([request("c", [event(3)], commandId: "cmd-2"), request("c", [event(4)], commandId: "cmd-2")])
        #expect(try batch[1].get() == AppendResult(firstSequence: 4, lastSequence: 4, streamVersion: 0, duplicate: true))
        await store.close()

        store = try await place.open()
        var again = original
        again.duplicate = true
        // Answered before the expected-version check, and nothing is written.
        #expect(try await store.append(request("b", [event(9)], expected: .noStream, commandId: "cmd-1")) == again)
        #expect(try await store.commandResult("cmd-1") == again)
        #expect(try await store.commandResult("never") == nil)
        #expect(store.lastSequence == 4)
        // Without events, and beside a new id in one batch: still the original's duplicate, and
        // the new one is appended (on PostgreSQL: the lookup, then the insert that finds the id).
        #expect(try await store.append(request("b", [], commandId: "cmd-1")) == again)
        let mixed = await store.appendAll([request("d", [event(5)], commandId: "cmd-3"), request("b", [event(10)], commandId: "cmd-1")])
        #expect(try mixed[0].get() == AppendResult(firstSequence: 5, lastSequence: 5, streamVersion: 0, duplicate: false))
        #expect(try mixed[1].get() == again)
        #expect(store.lastSequence == 5)
        #expect(try await store.verify(progress: nil).records == 5)
        await store.close()
    }

    /// Record time only moves forward: an event proposed with a time earlier than the record
    /// before it (another stream's append that got there first) is recorded at that record's
    /// time, never before it; across batches, concurrent appends and reopening. A bound in time is
    /// then one place in the log.
    @Test(arguments: Backend.allCases)
    func recordTimeNeverGoesBackwards(_ backend: Backend) async throws {
        guard let place = try LogPlace.fresh(backend) else { return }
        func at(_ time: Int64, _ n: Int) -> ProposedEvent {
            ProposedEvent(type: "Noted", schemaVersion: 1, timestamp: time, payload: Array("payload \(n)".utf8))
        }
        var store = try await place.open()
        _ = try await store.append(request("a", [at(2_000, 1)]))
        _ = try await store.append(request("b", [at(1_000, 2), at(3_000, 3), at(2_500, 4)]))
        let batch = await store.appendAll([request("c", [at(1_500, 5)]), request("a", [at(4_000, 6)]), request("b", [at(3_999, 7)])])
        #expect(batch.allSatisfy { (try? $0.get()) != nil })
        #expect(try await allRecords(store).map(\.timestamp) == [2_000, 2_000, 3_000, 3_000, 3_000, 4_000, 4_000])
        await store.close()

        let reopened = try await place.open()
        store = reopened
        _ = try await reopened.append(request("d", [at(10, 8)]))
        // 30 writers at once, each proposing a time from before it waited: the log's times still only rise.
        await withTaskGroup(of: Void.self) { group in
            for n in 0..<30 {
                group.addTask { _ = try? await reopened.append(request("s\(n % 3)", [at(5_000 + Int64(30 - n), 100 + n)])) }
            }
        }
        let records = try await allRecords(store)
        #expect(records[7].timestamp == 4_000)  // after reopening, still no earlier than the newest
        #expect(records.count == 38)
        #expect(zip(records, records.dropFirst()).allSatisfy { $0.timestamp <= $1.timestamp })
        // The payload (where an observation's own time lives) is as proposed.
        #expect(records[1].payload == Array("payload 2".utf8))
        #expect(try await store.verify(progress: nil).records == 38)
        await store.close()
    }

    /// Reads longer than one of PostgreSQL's chunks (1,024 rows, the next asked for while the
    /// caller goes through one): every record once and in order, from anywhere to anywhere, and a
    /// read stopped early leaves the store ready for the next.
    @Test(arguments: Backend.allCases)
    func readsAcrossManyChunksGiveEveryRecordOnceInOrder(_ backend: Backend) async throws {
        guard let place = try LogPlace.fresh(backend) else { return }
        let store = try await place.open()
        for batch in 0..<25 {
            _ = try await store.append(request("s\(batch % 3)", (0..<100).map { event(batch * 100 + $0) }))
        }
        func sequences(_ from: UInt64, _ through: UInt64, stopAfter limit: Int = .max) async throws -> [UInt64] {
            var seen: [UInt64] = []
            try await store.read(from: from, through: through) {
                seen.append($0.sequence); return seen.count < limit
            }
            return seen
        }
        #expect(try await sequences(1, 2_500) == Array(1...2_500))
        #expect(try await sequences(1_000, 2_049) == Array(1_000...2_049))
        #expect(try await sequences(2_048, 9_999) == Array(2_048...2_500), "past the end: up to the last record")
        #expect(try await sequences(1, 2_500, stopAfter: 1_500) == Array(1...1_500))
        #expect(try await sequences(1_025, 1_025) == [1_025])
        let payloads = try await allRecords(store).map { String(decoding: $0.payload, as: UTF8.self) }
        #expect(payloads == (0..<2_500).map { "payload \($0)" })
        #expect(try await store.verify(progress: nil).records == 2_500)
        await store.close()
    }

    @Test(arguments: Backend.allCases)
    func aFollowerIsWokenByAnAppend(_ backend: Backend) async throws {
        guard let place = try LogPlace.fresh(backend) else { return }
        let store = try await place.open()
        _ = try await store.append(request("a", [event(0)]))
        let follower = Task { () -> [UInt64] in
            var seen: [UInt64] = []
            for try await record in store.subscribe(from: 1) {
                seen.append(record.sequence)
                if seen.count == 3 { break }
            }
            return seen
        }
        try await Task.sleep(nanoseconds: 200_000_000)
        _ = try await store.append(request("a", [event(1), event(2)]))
        let deadline = Task {
            try await Task.sleep(nanoseconds: 10_000_000_000); follower.cancel()
        }
        let seen = try await follower.value
        deadline.cancel()
        #expect(seen == [1, 2, 3])
        await store.close()
    }

    @Test(arguments: Backend.allCases)
    func aReaderBesideTheWriterIsWokenByItsAppends(_ backend: Backend) async throws {
        guard let place = try LogPlace.fresh(backend) else { return }
        let writer = try await place.open()
        _ = try await writer.append(request("a", [event(0)]))
        let reader = try await place.open(readOnly: true)
        #expect(reader.lastSequence == 1)
        await #expect(throws: EventLogError.self) { try await reader.append(request("a", [event(1)])) }
        let waiting = Task { try await reader.waitForAppend(after: 1) }
        _ = try await writer.append(request("a", [event(1)]))
        let deadline = Task {
            try await Task.sleep(nanoseconds: 10_000_000_000); waiting.cancel()
        }
        try await waiting.value
        deadline.cancel()
        #expect(try await allRecords(reader).count == 2)
        await reader.close()
        await writer.close()
    }

    /// Followers cancelled just as the log moves (a hub stopping while events arrive) end: a store
    /// never wakes a waiting task while holding the lock the task's cancellation handler needs. The
    /// PostgreSQL store did, and the two threads waited for each other for ever (a stepped-down
    /// hub that never finished stopping).
    @Test(arguments: Backend.allCases)
    func followersCancelledWhileTheLogMovesEnd(_ backend: Backend) async throws {
        guard let place = try LogPlace.fresh(backend) else { return }
        let store = try await place.open()
        let rounds = 300, followers = 32
        for round in 0..<rounds {
            let after = store.lastSequence
            let waiting = (0..<followers).map { _ in Task { try? await store.waitForAppend(after: after) } }
            let append = Task { try await store.append(request("m", [event(round)])) }
            try await Task.sleep(for: .microseconds(Int.random(in: 0...1500)))
            // Cancelled from a thread of its own: if that thread and the store wait for each other,
            // the test's pool threads are still free to say so.
            Thread.detachNewThread { for task in waiting { task.cancel() } }
            let ended = await within(seconds: 10) { for task in waiting { await task.value } }
            try #require(ended, "round \(round): followers cancelled while the log moved never ended")
            _ = try await append.value
        }
        #expect(store.lastSequence == UInt64(rounds))
        await store.close()
    }

    /// Observations (``Durability/observation``) are committed when the append returns: sequenced
    /// between the commands around them, readable, and beside the store (read-only, as
    /// `hub events` is) once written; a command id makes one a command (idempotent); closing loses
    /// none. The segment log holds them for a long delay here, PostgreSQL commits them at once.
    @Test(arguments: Backend.allCases)
    func observationsAreCommittedInOrderWhenTheyReturnAndCloseLosesNone(_ backend: Backend) async throws {
        guard let place = try LogPlace.fresh(backend) else { return }
        let store = try await place.paths.openEventStore(options: SegmentStoreOptions(observationCommitDelay: .seconds(600)))
        func observation(_ n: Int, commandId: String? = nil) -> AppendRequest {
            AppendRequest(
                stream: "device/plug", causation: Causation(commandId: commandId, actor: "driver:test"), events: [event(n)],
                durability: .observation)
        }
        let first = try await store.append(observation(1))
        #expect(first.firstSequence == 1)
        _ = try await store.append(request("device/plug", [event(2)], commandId: "switch-1"))
        let results = await store.appendAll([observation(3), observation(4)])
        #expect(results.compactMap { try? $0.get().firstSequence } == [3, 4])
        let version = try await store.streamVersion("device/plug")
        #expect(store.lastSequence == 4 && version == 3)
        #expect(try await allRecords(store).map(\.payload) == (1...4).map { event($0).payload })
        // Another process sees them once they are written: PostgreSQL's at once, the segment log's
        // at its next write moment (it holds observations in memory until then, when it can
        // stage them on a tmpfs: docs/operations.md, Durability).
        let beside = try await place.paths.openEventStore(readOnly: true)
        if let segments = beside as? SegmentStore { try segments.refresh() }
        #expect(beside.lastSequence == 4 || (backend == .segments && beside.lastSequence == 2))
        await beside.close()
        // With a command id it is remembered as a command is.
        let once = try await store.append(observation(5, commandId: "reading-5"))
        let again = try await store.append(observation(5, commandId: "reading-5"))
        #expect(again.duplicate && again.firstSequence == once.firstSequence)
        _ = try await store.append(observation(6))
        await store.close()
        let reopened = try await place.open()
        #expect(reopened.lastSequence == 6)
        #expect(try await allRecords(reopened).map(\.payload) == (1...6).map { event($0).payload })
        #expect(try await reopened.verify(progress: nil).records == 6)
        await reopened.close()
    }

    /// Every read is asynchronous and calls its closure on the caller's actor (the hub folds into
    /// its own state from inside `read`); the hashes `readViews` hands out are the ones
    /// `chainHash(at:)` answers, and `verify` reports the last.
    @Test(arguments: Backend.allCases)
    func readsCallTheirClosureOnTheCallersActor(_ backend: Backend) async throws {
        guard let place = try LogPlace.fresh(backend) else { return }
        let store = try await place.open()
        for n in 0..<5 { _ = try await store.append(request("s\(n % 2)", [event(n)])) }
        let folder = Folder(store: store)
        try await folder.fold()
        #expect(await folder.sequences == [1, 2, 3, 4, 5])
        let hashes = await folder.hashes
        #expect(hashes.count == 5)
        for sequence in 1...5 { #expect(try await store.chainHash(at: UInt64(sequence)) == hashes[sequence - 1]) }
        #expect(try await store.chainHash(at: 6) == nil)
        #expect(try await store.verify(progress: nil).headHash == LogVerifier.hex(hashes[4]))
        await store.close()
    }
}

/// Reads a log into its own state from inside the reads' closures.
actor Folder {
    let store: any EventStore
    var sequences: [UInt64] = []
    var hashes: [[UInt8]] = []

    init(store: any EventStore) { self.store = store }

    func fold() async throws {
        try await store.read(from: 1, through: .max) { record in
            self.assertIsolated("read calls its closure on the caller's actor")
            sequences.append(record.sequence)
            return true
        }
        try await store.readViews(from: 1, through: .max) { view in
            self.assertIsolated("readViews calls its closure on the caller's actor")
            hashes.append(view.hash)
            return true
        }
    }
}

/// Whether `body` ended within `seconds` (false: it still runs, and is left running).
func within(seconds: Double, _ body: @escaping @Sendable () async -> Void) async -> Bool {
    final class Answer: Sendable {
        let given = Atomic<Bool>(false)
        let continuation: CheckedContinuation<Bool, Never>
        init(_ continuation: CheckedContinuation<Bool, Never>) { self.continuation = continuation }
        func give(_ value: Bool) {
            if !given.exchange(true, ordering: .relaxed) { continuation.resume(returning: value) }
        }
    }
    return await withCheckedContinuation { continuation in
        let answer = Answer(continuation)
        Task {
            await body(); answer.give(true)
        }
        Task {
            try? await Task.sleep(for: .seconds(seconds)); answer.give(false)
        }
    }
}
