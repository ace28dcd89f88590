import Foundation
import Testing

@testable import HubLog

@Suite struct SegmentStoreTests {
    @Test func appendsAreGaplessWithDenseStreamVersions() async throws {
        let dir = temporaryDirectory()
        let store = try SegmentStore(directory: dir)
        let a = try await store.append(request("device/a", 0, count: 3))
        let b = try await store.append(request("device/b", 3))
        let c = try await store.append(request("device/a", 4))
        #expect(a == AppendResult(firstSequence: 1, lastSequence: 3, streamVersion: 2, duplicate: false))
        #expect(b == AppendResult(firstSequence: 4, lastSequence: 4, streamVersion: 0, duplicate: false))
        #expect(c.streamVersion == 3)
        let records = try allRecords(store)
        #expect(records.map(\.sequence) == [1, 2, 3, 4, 5])
        #expect(records.map(\.streamVersion) == [0, 1, 2, 0, 3])
        #expect(records[0].payload == event(0).payload)
        #expect(store.streamVersion("device/a") == 3)
        store.close()
        let reopened = try SegmentStore(directory: dir)
        #expect(reopened.lastSequence == 5)
        #expect(try allRecords(reopened) == records)
        #expect(reopened.recovery.truncatedTail == nil)
        reopened.close()
    }

    @Test func expectedVersionIsEnforced() async throws {
        let store = try SegmentStore(directory: temporaryDirectory())
        defer { store.close() }
        _ = try await store.append(request("s", 0, expected: .noStream))
        await #expect(throws: EventLogError.wrongExpectedVersion(stream: "s", expected: .noStream, actual: 0)) {
            try await store.append(request("s", 1, expected: .noStream))
        }
        await #expect(throws: EventLogError.self) { try await store.append(request("s", 1, expected: .exact(5))) }
        let ok = try await store.append(request("s", 1, expected: .exact(0)))
        #expect(ok.streamVersion == 1)
        #expect(store.lastSequence == 2)
    }

    @Test func retriedCommandAppendsNothingAndReturnsTheOriginal() async throws {
        let dir = temporaryDirectory()
        let store = try SegmentStore(directory: dir)
        let first = try await store.append(request("s", 0, commandId: "cmd-1", count: 2))
        let again = try await store.append(request("s", 9, commandId: "cmd-1"))
        #expect(again.duplicate)
        #expect(again.firstSequence == first.firstSequence && again.lastSequence == first.lastSequence)
        #expect(store.lastSequence == 2)
        // Concurrent retries of one command land once.
        try await withThrowingTaskGroup(of: AppendResult.self) { group in
            for i in 0..<10 { group.addTask { try await store.append(request("t", i, commandId: "cmd-2")) } }
            var duplicates = 0
            for try await r in group where r.duplicate { duplicates += 1 }
            #expect(duplicates == 9)
        }
        #expect(store.lastSequence == 3)
        store.close()
        // Idempotency survives a restart.
        let reopened = try SegmentStore(directory: dir)
        defer { reopened.close() }
        let afterRestart = try await reopened.append(request("s", 0, commandId: "cmd-1"))
        #expect(afterRestart.duplicate && afterRestart.firstSequence == 1 && afterRestart.lastSequence == 2)
        #expect(reopened.lastSequence == 3)
    }

    @Test func concurrentAppendsShareSyncs() async throws {
        let store = try SegmentStore(directory: temporaryDirectory())
        defer { store.close() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<64 { group.addTask { for j in 0..<10 { _ = try await store.append(request("device/\(i)", j)) } } }
            try await group.waitForAll()
        }
        #expect(store.lastSequence == 640)
        #expect(store.syncCount < 640, "group commit should share syncs, got \(store.syncCount)")
        let records = try allRecords(store)
        #expect(records.map(\.sequence) == Array(1...640))
        for i in 0..<64 { #expect(store.streamVersion("device/\(i)") == 9) }
    }

    @Test func segmentsRotateAndReadAcrossThem() async throws {
        let dir = temporaryDirectory()
        let store = try SegmentStore(directory: dir, options: SegmentStoreOptions(segmentSize: 4096))
        for i in 0..<300 { _ = try await store.append(request("d/\(i % 7)", i)) }
        #expect(segmentPaths(dir).count > 5)
        var some: [UInt64] = []
        try await store.read(from: 150, through: 160) {
            some.append($0.sequence); return true
        }
        #expect(some == Array(150...160))
        store.close()
        let reopened = try SegmentStore(directory: dir, options: SegmentStoreOptions(segmentSize: 4096))
        #expect(try allRecords(reopened).map(\.sequence) == Array(1...300))
        _ = try await reopened.append(request("d/0", 300))
        reopened.close()
        let report = try LogVerifier.verify(directory: dir)
        #expect(report.records == 301)
        #expect(report.segments == segmentPaths(dir).count)
    }

    @Test func anOversizedEventIsRejectedAlone() async throws {
        let store = try SegmentStore(directory: temporaryDirectory())
        defer { store.close() }
        let huge = AppendRequest(
            stream: "s", causation: Causation(actor: "t"),
            events: [ProposedEvent(type: "X", schemaVersion: 1, timestamp: 0, payload: [UInt8](repeating: 1, count: 17 << 20))])
        await #expect(throws: EventLogError.self) { try await store.append(huge) }
        let ok = try await store.append(request("s", 1))
        #expect(ok.firstSequence == 1)
    }

    @Test func aFailedSyncStopsTheWriter() async throws {
        let store = try SegmentStore(directory: temporaryDirectory(), options: SegmentStoreOptions(failSyncNumber: 2))
        defer { store.close() }
        _ = try await store.append(request("s", 0))
        await #expect(throws: EventLogError.self) { try await store.append(request("s", 1)) }
        // No retry: the writer stays stopped.
        do {
            _ = try await store.append(request("s", 2))
            Issue.record("append after a failed sync must fail")
        } catch let EventLogError.writerStopped(reason) {
            #expect(reason.contains("fdatasync"))
        }
        #expect(store.lastSequence == 1)
    }

    @Test func subscriptionCatchesUpThenFollows() async throws {
        let store = try SegmentStore(directory: temporaryDirectory())
        defer { store.close() }
        for i in 0..<5 { _ = try await store.append(request("s", i)) }
        let reader = Task {
            var seen: [UInt64] = []
            for try await record in store.subscribe(from: 3) {
                seen.append(record.sequence)
                if seen.count == 6 { break }
            }
            return seen
        }
        try await Task.sleep(for: .milliseconds(50))
        for i in 5..<8 { _ = try await store.append(request("s", i)) }
        let seen = try await reader.value
        #expect(seen == [3, 4, 5, 6, 7, 8])
    }

    @Test func snapshotsKeepTheNewestOneTheLogVouchesFor() async throws {
        let dir = temporaryDirectory()
        let snapshots = try SnapshotStore(directory: dir)
        let h10 = [UInt8](repeating: 10, count: 32), h20 = [UInt8](repeating: 20, count: 32)
        try snapshots.save(sequence: 10, chainHash: h10, bytes: [1, 2, 3])
        try snapshots.save(sequence: 20, chainHash: h20, bytes: [4, 5])
        let log: [UInt64: [UInt8]] = [10: h10, 20: h20]
        #expect(try await snapshots.loadLatest { log[$0] }.snapshot?.sequence == 20)
        // Damage the newest: it is set aside (kept) and the older one is used.
        let newest = dir + "/snapshot-00000000000000000020.snap"
        var bytes = readFile(newest)
        bytes[bytes.count - 1] ^= 0xFF
        writeFile(newest, bytes)
        let found = try await snapshots.loadLatest { log[$0] }
        #expect(found.snapshot?.sequence == 10 && found.snapshot?.bytes == [1, 2, 3])
        #expect(found.notes.count == 1 && found.notes[0].contains("CRC32C"), "\(found.notes)")
        #expect(readFile(newest + ".set-aside") == bytes)
        // A log with another hash at 10 (or one that ends before it): set aside too, nothing used.
        let other = try await snapshots.loadLatest { _ in [UInt8](repeating: 0, count: 32) }
        #expect(other.snapshot == nil && other.notes.first?.contains("chain hash") == true)
        #expect(FileManager.default.fileExists(atPath: dir + "/snapshot-00000000000000000010.snap.set-aside"))
        #expect(try snapshots.names().isEmpty)
        // Another directory's key: the seal does not match.
        try snapshots.save(sequence: 30, chainHash: h10, bytes: [7])
        let elsewhere = temporaryDirectory()
        let copy = try SnapshotStore(directory: elsewhere)
        writeFile(elsewhere + "/snapshot-00000000000000000030.snap", readFile(dir + "/snapshot-00000000000000000030.snap"))
        let foreign = try await copy.loadLatest { _ in h10 }
        #expect(foreign.snapshot == nil && foreign.notes.first?.contains("seal") == true, "\(foreign.notes)")
    }

    @Test func chainHashAtASequenceIsTheRecordsHash() async throws {
        let dir = temporaryDirectory()
        let store = try SegmentStore(directory: dir, options: SegmentStoreOptions(segmentSize: 64 * 1024))
        _ = await store.appendAll((0..<1500).map { request("s\($0 % 4)", $0) })
        var hashes: [[UInt8]] = [RecordFormat.genesisHash]
        try await store.readViews(from: 1, through: .max) {
            hashes.append($0.hash); return true
        }
        #expect(hashes.count == 1501)
        for sequence: UInt64 in [0, 1, 2, 1024, 1025, 1499, 1500] {
            #expect(try await store.chainHash(at: sequence) == hashes[Int(sequence)], "at \(sequence)")
        }
        #expect(try await store.chainHash(at: 1501) == nil)
        store.close()
        let readOnly = try SegmentStore(directory: dir, readOnly: true)
        for sequence: UInt64 in [1, 1025, 1500] { #expect(try await readOnly.chainHash(at: sequence) == hashes[Int(sequence)]) }
        // The protocol's default (built on readViews) gives the same answers.
        let any: any EventStore = DefaultsOnly(base: readOnly)
        for sequence: UInt64 in [0, 1, 1025, 1500] { #expect(try await any.chainHash(at: sequence) == hashes[Int(sequence)]) }
        #expect(try await any.chainHash(at: 1501) == nil)
    }

    /// In asynchronous code a call on a `SegmentStore` is the store's own read, not the protocol's
    /// default: `verify` checks the segment files (and counts them), as `hub verify` does.
    @Test func anAsyncCallOnTheSegmentStoreIsItsOwnVerify() async throws {
        let store = try SegmentStore(directory: temporaryDirectory())
        _ = await store.appendAll((0..<10).map { request("s", $0) })
        let report = try await store.verify(progress: nil)
        #expect(report.records == 10 && report.segments == 1 && report.bytes > 0, "\(report)")
        store.close()
    }

    @Test func crc32cMatchesKnownVectors() {
        #expect(CRC32C.checksum(Array("123456789".utf8)) == 0xE306_9283)
        #expect(CRC32C.checksum([UInt8](repeating: 0, count: 32)) == 0x8A91_36AA)
        // Hardware and table versions agree on every length and alignment.
        let bytes = (0..<300).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
        bytes.withUnsafeBytes { raw in
            for start in 0..<9 {
                for end in stride(from: start, through: 300, by: 7) {
                    let slice = UnsafeRawBufferPointer(rebasing: raw[start..<end])
                    #expect(CRC32C.checksum(slice) == CRC32C.software(slice), "\(start)..<\(end)")
                }
            }
        }
    }
}

/// A store that implements only the core requirements, so the protocol's defaults are what runs.
struct DefaultsOnly: EventStore {
    let base: SegmentStore
    func append(_ request: AppendRequest) async throws -> AppendResult { try await base.append(request) }
    var lastSequence: UInt64 { base.lastSequence }
    func commandResult(_ commandId: String) throws -> AppendResult? { try base.commandResult(commandId) }
    func streamVersion(_ stream: String) -> UInt64? { base.streamVersion(stream) }
    func read(from: UInt64, through: UInt64, _ body: (EventRecord) throws -> Bool) throws {
        try base.scanRecords(from: from, through: through, body)
    }
    func waitForAppend(after sequence: UInt64) async throws { try await base.waitForAppend(after: sequence) }
    func close() async { base.close() }
}
