import Foundation
import Synchronization
import Testing

@testable import HubLog

/// The segment log's observation class (``Durability/observation``): written and readable when the
/// append returns, synced with the next immediate append, within the delay, and at close.
@Suite struct ObservationDurabilityTests {
    static func observation(_ stream: String, _ n: Int, commandId: String? = nil) -> AppendRequest {
        var r = request(stream, n, commandId: commandId)
        r.durability = .observation
        return r
    }

    /// The segment's writes and syncs, in order, while `body` runs.
    static func recording(_ directory: String, _ body: () async throws -> Void) async rethrows -> [FileIO.Operation] {
        let recorded = Mutex<[FileIO.Operation]>([])
        FileIO.recorder.withLock {
            $0 = { operation in
                switch operation {
                case .write(let path, _, _), .sync(let path):
                    if path.hasPrefix(directory) && path.hasSuffix(".seg") { recorded.withLock { $0.append(operation) } }
                default: break
                }
            }
        }
        defer { FileIO.recorder.withLock { $0 = nil } }
        try await body()
        return recorded.withLock { $0 }
    }

    @Test func observationsWaitForTheNextCommandsSyncAndAreReadableMeanwhile() async throws {
        let dir = temporaryDirectory()
        let store = try SegmentStore(directory: dir, options: SegmentStoreOptions(observationCommitDelay: .seconds(600)))
        let before = store.syncCount
        for n in 0..<5 { _ = try await store.append(Self.observation("device/plug", n)) }
        #expect(store.syncCount == before, "observations are not synced one by one")
        #expect(store.lastSequence == 5)
        #expect(try allRecords(store).map(\.sequence) == Array(1...5))
        // Another process sees them at the next write moment (HeldObservationsTests).
        // A command: one sync carries it and the five before it.
        let command = try await store.append(request("device/plug", 10, commandId: "switch-1"))
        #expect(command.firstSequence == 6)
        #expect(store.syncCount == before + 1)
        // An observation with a command id is a command (a client waits on it).
        _ = try await store.append(Self.observation("device/plug", 11, commandId: "reading-1"))
        #expect(store.syncCount == before + 2)
        store.close()
    }

    @Test func closingSyncsTheObservationsWaiting() async throws {
        let dir = temporaryDirectory()
        var store: SegmentStore! = try SegmentStore(directory: dir, options: SegmentStoreOptions(observationCommitDelay: .seconds(600)))
        let operations = try await Self.recording(dir) {
            _ = try await store.append(Self.observation("device/plug", 1))
            _ = try await store.append(Self.observation("device/plug", 2))
            store.close()
        }
        let lastWrite = try #require(operations.lastIndex { if case .write = $0 { true } else { false } })
        #expect(
            operations[(lastWrite + 1)...].contains { if case .sync = $0 { true } else { false } },
            "close syncs what was written: \(operations)")
        store = nil
        let reopened = try SegmentStore(directory: dir)
        #expect(reopened.lastSequence == 2)
        reopened.close()
    }

    @Test func observationsAreSyncedWithinTheDelay() async throws {
        let dir = temporaryDirectory()
        // Long enough that two appends on a loaded machine stay well inside it.
        let store = try SegmentStore(directory: dir, options: SegmentStoreOptions(observationCommitDelay: .seconds(2)))
        let before = store.syncCount
        let started = ContinuousClock.now
        _ = try await store.append(Self.observation("device/plug", 1))
        _ = try await store.append(Self.observation("device/plug", 2))
        // On a machine too loaded to append twice within the delay, the first is synced alone:
        // what is checked then is only that a sync comes.
        let inTime = ContinuousClock.now - started < .seconds(2)
        if inTime { #expect(store.syncCount == before) }
        while store.syncCount == before && ContinuousClock.now - started < .seconds(10) { try await Task.sleep(for: .milliseconds(10)) }
        if inTime { #expect(store.syncCount == before + 1, "one sync for both, within the delay") }
        #expect(ContinuousClock.now - started >= .seconds(2))
        store.close()
    }

    @Test func aDelayOfZeroSyncsEveryObservation() async throws {
        let dir = temporaryDirectory()
        let store = try SegmentStore(directory: dir)
        let before = store.syncCount
        for n in 0..<3 { _ = try await store.append(Self.observation("device/plug", n)) }
        #expect(store.syncCount == before + 3)
        store.close()
    }

    @Test func manyObservationsAreSyncedOnceTheirBytesAddUp() async throws {
        let dir = temporaryDirectory()
        let store = try SegmentStore(directory: dir, options: SegmentStoreOptions(observationCommitDelay: .seconds(600)))
        let before = store.syncCount
        // 40-byte payloads: about 120 bytes a frame, so 64 KiB take several hundred.
        for n in 0..<1000 { _ = try await store.append(Self.observation("device/plug", n)) }
        #expect(store.syncCount > before && store.syncCount <= before + 3, "\(store.syncCount - before) syncs")
        store.close()
    }
}
