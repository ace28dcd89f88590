import Foundation
import HubBench
import HubLog
import Testing

/// A fresh temporary directory, removed when the test ends.
func withTempDirectory<T>(_ body: (String) async throws -> T) async throws -> T {
    let dir = FileManager.default.temporaryDirectory
        .appendingPathComponent("hubbench-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: dir) }
    return try await body(dir.path)
}

func event(_ type: String, _ n: Int, bytes: Int = 48) -> ProposedEvent {
    ProposedEvent(
        type: type, schemaVersion: 1, timestamp: Int64(1_000 + n),
        payload: (0..<bytes).map { UInt8(truncatingIfNeeded: $0 &+ n) })
}

func readAll(_ store: any EventStore) async throws -> [EventRecord] {
    var records: [EventRecord] = []
    try await store.read(from: 1, through: .max) {
        records.append($0); return true
    }
    return records
}

@Suite struct SQLiteEventStoreTests {
    @Test func appendAndReadInOrderWithGaplessSequence() async throws {
        try await withTempDirectory { dir in
            let store = try SQLiteEventStore(path: dir + "/events.sqlite")
            defer { store.close() }
            #expect(store.lastSequence == 0)
            #expect(store.streamVersion("device/plug-1") == nil)

            let r1 = try await store.append(
                AppendRequest(
                    stream: "device/plug-1", causation: Causation(commandId: "c1", actor: "test"),
                    events: [event("SwitchToggled", 1), event("ReadingRecorded", 2)]))
            #expect(r1 == AppendResult(firstSequence: 1, lastSequence: 2, streamVersion: 1, duplicate: false))
            let r2 = try await store.append(
                AppendRequest(
                    stream: "animal/a-1", causation: Causation(actor: "driver:x"), events: [event("ActivationChanged", 3, bytes: 0)]))
            #expect(r2 == AppendResult(firstSequence: 3, lastSequence: 3, streamVersion: 0, duplicate: false))
            let r3 = try await store.append(
                AppendRequest(
                    stream: "device/plug-1", causation: Causation(commandId: "c3", actor: "test"), events: [event("ReadingRecorded", 4)]))
            #expect(r3 == AppendResult(firstSequence: 4, lastSequence: 4, streamVersion: 2, duplicate: false))
            // An empty append: last == first - 1, nothing written.
            let empty = try await store.append(AppendRequest(stream: "device/plug-1", causation: Causation(actor: "t"), events: []))
            #expect(empty == AppendResult(firstSequence: 5, lastSequence: 4, streamVersion: 2, duplicate: false))

            #expect(store.lastSequence == 4)
            #expect(store.streamVersion("device/plug-1") == 2)
            #expect(store.streamVersion("animal/a-1") == 0)

            let records = try await readAll(store)
            #expect(records.map(\.sequence) == [1, 2, 3, 4])
            #expect(records.map(\.stream) == ["device/plug-1", "device/plug-1", "animal/a-1", "device/plug-1"])
            #expect(records.map(\.streamVersion) == [0, 1, 0, 2])
            #expect(
                records[0]
                    == EventRecord(
                        sequence: 1, stream: "device/plug-1", streamVersion: 0, type: "SwitchToggled",
                        schemaVersion: 1, timestamp: 1_001,
                        causation: Causation(commandId: "c1", actor: "test"),
                        payload: event("SwitchToggled", 1).payload))
            #expect(records[2].causation == Causation(commandId: nil, actor: "driver:x"))
            #expect(records[2].payload == [])

            // Sub-ranges and early stop.
            var some: [UInt64] = []
            try store.read(from: 2, through: 3) {
                some.append($0.sequence); return true
            }
            #expect(some == [2, 3])
            var stopped: [UInt64] = []
            try store.read(from: 1, through: 4) {
                stopped.append($0.sequence); return stopped.count < 2
            }
            #expect(stopped == [1, 2])
        }
    }

    @Test func clearErrors() async throws {
        do {
            _ = try SQLiteEventStore(path: "/nonexistent-dir-\(UUID().uuidString)/events.sqlite")
            Issue.record("opening in a missing directory should fail")
        } catch let error as EventLogError {
            guard case let .io(_, operation, _) = error else { Issue.record("unexpected \(error)"); return }
            #expect(operation.contains("unable to open database file"))
        }
        try await withTempDirectory { dir in
            let store = try SQLiteEventStore(path: dir + "/events.sqlite")
            defer { store.close() }
            await #expect(throws: EventLogError.invalid("append: empty stream name")) {
                try await store.append(AppendRequest(stream: "", causation: Causation(actor: "t"), events: [event("A", 0)]))
            }
            #expect(store.lastSequence == 0)
        }
    }

    @Test func expectedVersion() async throws {
        try await withTempDirectory { dir in
            let store = try SQLiteEventStore(path: dir + "/events.sqlite")
            defer { store.close() }
            let stream = "device/plug-7"
            let first = try await store.append(
                AppendRequest(
                    stream: stream, expected: .noStream,
                    causation: Causation(actor: "t"), events: [event("A", 1)]))
            #expect(first.streamVersion == 0)

            await #expect(throws: EventLogError.wrongExpectedVersion(stream: stream, expected: .noStream, actual: 0)) {
                try await store.append(
                    AppendRequest(
                        stream: stream, expected: .noStream,
                        causation: Causation(actor: "t"), events: [event("A", 2)]))
            }
            await #expect(throws: EventLogError.wrongExpectedVersion(stream: stream, expected: .exact(5), actual: 0)) {
                try await store.append(
                    AppendRequest(
                        stream: stream, expected: .exact(5),
                        causation: Causation(actor: "t"), events: [event("A", 3)]))
            }
            await #expect(throws: EventLogError.wrongExpectedVersion(stream: "device/none", expected: .exact(0), actual: nil)) {
                try await store.append(
                    AppendRequest(
                        stream: "device/none", expected: .exact(0),
                        causation: Causation(actor: "t"), events: [event("A", 4)]))
            }
            let ok = try await store.append(
                AppendRequest(
                    stream: stream, expected: .exact(0),
                    causation: Causation(actor: "t"), events: [event("A", 5), event("A", 6)]))
            #expect(ok == AppendResult(firstSequence: 2, lastSequence: 3, streamVersion: 2, duplicate: false))
            // Failed appends left no gap.
            #expect(try await readAll(store).map(\.sequence) == [1, 2, 3])
        }
    }

    @Test func idempotentCommandId() async throws {
        try await withTempDirectory { dir in
            let store = try SQLiteEventStore(path: dir + "/events.sqlite")
            defer { store.close() }
            _ = try await store.append(
                AppendRequest(
                    stream: "s/0", causation: Causation(commandId: "other", actor: "t"),
                    events: [event("A", 0)]))
            let request = AppendRequest(
                stream: "s/1", expected: .noStream, causation: Causation(commandId: "cmd-42", actor: "t"),
                events: [event("A", 1), event("B", 2), event("C", 3)])
            let original = try await store.append(request)
            #expect(original == AppendResult(firstSequence: 2, lastSequence: 4, streamVersion: 2, duplicate: false))
            _ = try await store.append(AppendRequest(stream: "s/1", causation: Causation(actor: "t"), events: [event("D", 4)]))

            // The retry (even though .noStream no longer holds) returns the original result.
            let retry = try await store.append(request)
            var expected = original
            expected.duplicate = true
            #expect(retry == expected)
            #expect(store.lastSequence == 5)
            #expect(store.streamVersion("s/1") == 3)
            #expect(try await readAll(store).count == 5)
        }
    }

    @Test func reopenKeepsData() async throws {
        try await withTempDirectory { dir in
            let path = dir + "/events.sqlite"
            do {
                let store = try SQLiteEventStore(path: path)
                for i in 0..<10 {
                    _ = try await store.append(
                        AppendRequest(
                            stream: "device/plug-\(i % 3)",
                            causation: Causation(commandId: "c\(i)", actor: "t"),
                            events: [event("ReadingRecorded", i)]))
                }
                store.close()
                await #expect(throws: EventLogError.closed) {
                    try await store.append(AppendRequest(stream: "x", causation: Causation(actor: "t"), events: [event("A", 0)]))
                }
                #expect(throws: EventLogError.closed) { try store.read(from: 1, through: 10) { _ in true } }
            }
            let reopened = try SQLiteEventStore(path: path)
            defer { reopened.close() }
            #expect(reopened.lastSequence == 10)
            #expect(reopened.streamVersion("device/plug-0") == 3)
            let records = try await readAll(reopened)
            #expect(records.map(\.sequence) == Array(1...10))
            #expect(records[9].payload == event("ReadingRecorded", 9).payload)
            // Idempotency survives the reopen; sequences continue.
            let retry = try await reopened.append(
                AppendRequest(
                    stream: "device/plug-1", causation: Causation(commandId: "c4", actor: "t"),
                    events: [event("ReadingRecorded", 4)]))
            #expect(retry == AppendResult(firstSequence: 5, lastSequence: 5, streamVersion: 1, duplicate: true))
            let next = try await reopened.append(
                AppendRequest(
                    stream: "device/plug-1", causation: Causation(actor: "t"),
                    events: [event("ReadingRecorded", 10)]))
            #expect(next.firstSequence == 11)
        }
    }

    @Test func concurrentAppendsLandExactlyOnce() async throws {
        try await withTempDirectory { dir in
            let store = try SQLiteEventStore(path: dir + "/events.sqlite")
            defer { store.close() }
            let tasks = 16, perTask = 25
            let results = try await withThrowingTaskGroup(of: [AppendResult].self) { group in
                for t in 0..<tasks {
                    group.addTask {
                        var results: [AppendResult] = []
                        for i in 0..<perTask {
                            let request = AppendRequest(
                                stream: "device/plug-\(t % 4)",
                                causation: Causation(commandId: "t\(t)-\(i)", actor: "t\(t)"),
                                events: [event("ReadingRecorded", t * 1000 + i)])
                            results.append(try await store.append(request))
                            // Retrying the same command concurrently must not append again.
                            if i % 5 == 0 { results.append(try await store.append(request)) }
                        }
                        return results
                    }
                }
                var all: [AppendResult] = []
                for try await r in group { all += r }
                return all
            }
            let fresh = results.filter { !$0.duplicate }
            #expect(fresh.count == tasks * perTask)
            #expect(results.count - fresh.count == tasks * perTask / 5)
            #expect(Set(fresh.map(\.firstSequence)) == Set(1...UInt64(tasks * perTask)))
            #expect(store.lastSequence == UInt64(tasks * perTask))

            let records = try await readAll(store)
            #expect(records.map(\.sequence) == Array(1...UInt64(tasks * perTask)))
            #expect(Set(records.compactMap(\.causation.commandId)).count == tasks * perTask)
            for s in 0..<4 {
                let versions = records.filter { $0.stream == "device/plug-\(s)" }.map(\.streamVersion)
                #expect(versions == Array(0..<UInt64(versions.count)))
            }
        }
    }

    @Test func subscribeCatchesUpThenFollows() async throws {
        try await withTempDirectory { dir in
            let store = try SQLiteEventStore(path: dir + "/events.sqlite")
            defer { store.close() }
            for i in 0..<3 {
                _ = try await store.append(AppendRequest(stream: "s", causation: Causation(actor: "t"), events: [event("A", i)]))
            }
            var seen: [UInt64] = []
            var iterator = store.subscribe(from: 2).makeAsyncIterator()
            for _ in 0..<2 { if let r = try await iterator.next() { seen.append(r.sequence) } }
            // The next read finds nothing and waits for the append below.
            let appender = Task {
                try await Task.sleep(for: .milliseconds(50))
                _ = try await store.append(AppendRequest(stream: "s", causation: Causation(actor: "t"), events: [event("A", 9)]))
            }
            if let r = try await iterator.next() { seen.append(r.sequence) }
            try await appender.value
            #expect(seen == [2, 3, 4])
        }
    }

    @Test func waitForAppend() async throws {
        try await withTempDirectory { dir in
            let store = try SQLiteEventStore(path: dir + "/events.sqlite")
            _ = try await store.append(AppendRequest(stream: "s", causation: Causation(actor: "t"), events: [event("A", 0)]))
            try await store.waitForAppend(after: 0)  // already satisfied

            // Cancellation ends the wait.
            let cancelled = Task { try await store.waitForAppend(after: 1) }
            try await Task.sleep(for: .milliseconds(20))
            cancelled.cancel()
            await #expect(throws: CancellationError.self) { try await cancelled.value }

            // Close wakes waiters with .closed; later waits throw .closed at once.
            let waiting = Task { try await store.waitForAppend(after: 1) }
            try await Task.sleep(for: .milliseconds(20))
            store.close()
            await #expect(throws: EventLogError.closed) { try await waiting.value }
            await #expect(throws: EventLogError.closed) { try await store.waitForAppend(after: 1) }
        }
    }
}
