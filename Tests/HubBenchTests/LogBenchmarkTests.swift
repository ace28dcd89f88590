import HubBench
import HubLog
import Testing

@Suite struct LogBenchmarkTests {
    @Test func tinyRunCountsAreConsistent() async throws {
        try await withTempDirectory { dir in
            let store = try SQLiteEventStore(path: dir + "/bench.sqlite")
            defer { store.close() }
            let config = LogBenchmark.Configuration(
                replayEventCount: 200, sequentialAppends: 30,
                concurrentWriters: 8, concurrentAppendsTotal: 50, bulkBatchSize: 20)
            let benchmark = LogBenchmark(configuration: config)
            var replayed: [UInt64] = []
            var streams: Set<String> = []
            var types: Set<String> = []
            var payloadSizes: [Int] = []
            let result = try await benchmark.run(store: store, label: "sqlite", progress: { _ in }) { record in
                replayed.append(record.sequence)
                streams.insert(record.stream)
                types.insert(record.type)
                payloadSizes.append(record.payload.count)
                #expect(record.causation.actor == "bench")
                #expect(record.causation.commandId?.count == 36)
            }
            #expect(replayed == Array(1...200))
            #expect(result.sequential == .init(appends: 30, events: 30, seconds: result.sequential.seconds))
            #expect(result.concurrent.appends == 50 && result.concurrent.events == 50)
            #expect(result.bulk.events == 120 && result.bulk.appends == 6)
            #expect(result.replay.events == 200)
            #expect(result.lastSequence == 200 && store.lastSequence == 200)
            #expect(payloadSizes.allSatisfy { (40...150).contains($0) })
            #expect(streams.contains { $0.hasPrefix("device/plug-") } && streams.contains { $0.hasPrefix("animal/a-") })
            #expect(types.isSubset(of: ["ReadingRecorded", "SwitchToggled", "ActivationChanged", "AvailabilityChanged"]))
            #expect(types.count >= 3)

            let table = LogBenchmarkResult.table(hub: result, sqlite: result, machine: machineDescription(dataDirectory: dir))
            #expect(table.contains("| workload | hub log | SQLite (WAL, FULL) | ratio |"))
            #expect(table.contains("1.0x"))
        }
    }

    @Test func refusesNonEmptyStore() async throws {
        try await withTempDirectory { dir in
            let store = try SQLiteEventStore(path: dir + "/bench.sqlite")
            defer { store.close() }
            _ = try await store.append(AppendRequest(stream: "s", causation: Causation(actor: "t"), events: [event("A", 0)]))
            await #expect(throws: EventLogError.self) {
                _ = try await LogBenchmark().run(store: store, progress: { _ in }) { _ in }
            }
        }
    }

    @Test func workloadIsDeterministicWithUniqueCommandIds() {
        let w = BenchmarkWorkload()
        let a = w.request(appendNumber: 12, firstIndex: 100, count: 5)
        let b = w.request(appendNumber: 12, firstIndex: 100, count: 5)
        #expect(a.events == b.events && a.stream == b.stream && a.causation == b.causation)
        #expect(a.events.map(\.timestamp) == a.events.map(\.timestamp).sorted())
        let ids = Set((0..<10_000).map(BenchmarkWorkload.commandId))
        #expect(ids.count == 10_000)
        let custom = BenchmarkWorkload(encoder: { kind, _, index in ("X" + kind.type.rawValue, 3, [UInt8(index % 256)]) })
        #expect(custom.event(stream: "device/plug-1", index: 7).payload == [7])
        #expect(custom.event(stream: "device/plug-1", index: 7).schemaVersion == 3)
    }
}
