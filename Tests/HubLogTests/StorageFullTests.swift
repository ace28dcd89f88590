import DiskHarness
import Foundation
import Testing

@testable import HubLog

/// A full disk on a real file system (a small tmpfs filled with ballast): appends are refused with
/// a typed error and nothing of them stays, the store goes on, and appends succeed again once space
/// is freed, with a gapless, sound log.
@Suite(.serialized, .enabled(if: SmallDisk.available, Comment(rawValue: SmallDisk.unavailableReason)))
struct StorageFullTests {
    /// Three 8 KiB events: more than the slack of a page, so the write runs out of space mid-way.
    func big(_ n: Int, id: String? = nil) -> AppendRequest {
        AppendRequest(
            stream: "s", causation: Causation(commandId: id, actor: "test"),
            events: (0..<3).map {
                ProposedEvent(
                    type: "Big", schemaVersion: 1, timestamp: Int64(n + $0),
                    payload: [UInt8](repeating: UInt8(truncatingIfNeeded: n + $0), count: 8192))
            })
    }

    func expectStorageFull(_ result: Result<AppendResult, Error>, sourceLocation: SourceLocation = #_sourceLocation) {
        guard case .failure(let error) = result, case .storageFull(let path, let operation, let code)? = error as? EventLogError else {
            Issue.record("expected storageFull, got \(result)", sourceLocation: sourceLocation)
            return
        }
        #expect(path.hasSuffix(".seg") && operation == "write" && code == ENOSPC, sourceLocation: sourceLocation)
        #expect("\(error)".contains("the disk is full") && "\(error)".contains(path), sourceLocation: sourceLocation)
    }

    func waitForCondition(_ store: SegmentStore, full: Bool) async throws {
        for _ in 0..<100 where store.storageCondition.isFull != full { try await Task.sleep(for: .milliseconds(50)) }
        #expect(store.storageCondition.isFull == full)
    }

    /// A segment that grows with each write (no zeros ahead of its records: see the next test).
    @Test func appendsOnAFullDiskAreRefusedAndResumeWhenSpaceIsFreed() async throws {
        let disk = try SmallDisk(megabytes: 2)
        let directory = disk.path + "/log"
        let store = try SegmentStore(directory: directory, options: SegmentStoreOptions(preallocation: 0))
        for i in 0..<10 { _ = try await store.append(request("s", i, commandId: "c-\(i)")) }
        let segment = segmentPaths(directory)[0]
        let sizeBefore = readFile(segment).count
        try disk.fill()

        // One append, then a group commit of several: all refused, typed, nothing kept.
        expectStorageFull(await Result(catching: { try await store.append(big(100, id: "big-1")) }))
        let batch = await store.appendAll([big(200, id: "big-2"), big(300), request("s", 400, commandId: "c-1")])
        expectStorageFull(batch[0])
        expectStorageFull(batch[1])
        #expect(try batch[2].get().duplicate, "a retried id answers from the log, full disk or not")
        #expect(readFile(segment).count == sizeBefore, "no half-written record stays in the segment")
        #expect(store.lastSequence == 10)
        #expect(try store.commandResult("big-1") == nil)
        guard case .full(let path, _, let reason) = store.storageCondition else {
            Issue.record("the store must say the disk is full")
            return
        }
        #expect(path == segment && reason.contains("ENOSPC"))

        // Space back: the writer sees it by itself, and the same appends succeed.
        disk.free()
        try await waitForCondition(store, full: false)
        let result = try await store.append(big(100, id: "big-1"))
        #expect(result.firstSequence == 11 && result.lastSequence == 13 && !result.duplicate)
        _ = try await store.append(request("s", 500))
        #expect(try allRecords(store).map(\.sequence) == Array(1...14))
        #expect(try await store.verify(progress: nil).records == 14)
        store.close()

        // Reopened: nothing to cut, nothing quarantined, the chain verifies.
        let reopened = try SegmentStore(directory: directory)
        defer { reopened.close() }
        #expect(reopened.recovery.truncatedTail == nil && quarantineFiles(directory).isEmpty)
        #expect(reopened.lastSequence == 14)
        #expect(try await reopened.verify(progress: nil).records == 14)
    }

    /// With zeros written ahead of the records, appends go on into that room while the disk is full;
    /// once it is used up the next append is refused, and the segment is cut back to its last record.
    @Test func thePreallocatedRoomIsUsedUpBeforeAFullDiskRefusesAppends() async throws {
        let disk = try SmallDisk(megabytes: 2)
        let directory = disk.path + "/log"
        let store = try SegmentStore(directory: directory, options: SegmentStoreOptions(preallocation: 64 * 1024))
        for i in 0..<10 { _ = try await store.append(request("s", i, commandId: "c-\(i)")) }
        try disk.fill()
        var accepted = 0, refusal: Result<AppendResult, Error>? = nil
        for n in 0..<10 {
            let result = await Result(catching: { try await store.append(big(100 * n, id: "big-\(n)")) })
            if case .failure = result { refusal = result; break }
            accepted += 1
        }
        #expect(accepted >= 1, "the room written ahead takes appends while the disk is full")
        guard let refusal else { Issue.record("the room never ran out"); return }
        expectStorageFull(refusal)
        #expect(store.lastSequence == UInt64(10 + 3 * accepted))
        let segment = segmentPaths(directory)[0]
        let frames = frameOffsets(readFile(segment))
        #expect(readFile(segment).count == frames.last.map { $0.offset + $0.length }, "cut back to its last record")

        disk.free()
        try await waitForCondition(store, full: false)
        #expect(try await store.append(big(999, id: "big-after")).firstSequence == UInt64(10 + 3 * accepted + 1))
        store.close()
        let reopened = try SegmentStore(directory: directory)
        defer { reopened.close() }
        #expect(reopened.recovery.truncatedTail == nil && quarantineFiles(directory).isEmpty)
        #expect(try await reopened.verify(progress: nil).records == UInt64(10 + 3 * accepted + 3))
    }

    @Test func aFullDiskWhileStartingASegmentLeavesNoSegmentBehind() async throws {
        let disk = try SmallDisk(megabytes: 2)
        let directory = disk.path + "/log"
        let store = try SegmentStore(directory: directory, options: SegmentStoreOptions(segmentSize: 20_000))
        _ = try await store.append(big(0))  // ~24 KiB: the next append starts a new segment
        let before = segmentPaths(directory)
        let sizeBefore = readFile(before.last!).count
        try disk.fill()

        expectStorageFullAnyOperation(await Result(catching: { try await store.append(big(10, id: "rotating")) }))
        #expect(segmentPaths(directory) == before, "the segment the failed commit started is removed")
        #expect(readFile(before.last!).count == sizeBefore)
        #expect(store.storageCondition.isFull)

        disk.free()
        try await waitForCondition(store, full: false)
        _ = try await store.append(big(10, id: "rotating"))
        _ = try await store.append(big(20))
        #expect(try allRecords(store).map(\.sequence) == Array(1...9))
        #expect(try await store.verify(progress: nil).records == 9)
        store.close()
        let reopened = try SegmentStore(directory: directory)
        defer { reopened.close() }
        #expect(reopened.recovery.truncatedTail == nil && reopened.lastSequence == 9)
    }

    /// Creating a segment may fail at its header or at the file itself: any storage-full operation.
    func expectStorageFullAnyOperation(_ result: Result<AppendResult, Error>, sourceLocation: SourceLocation = #_sourceLocation) {
        guard case .failure(let error) = result, case .storageFull? = error as? EventLogError else {
            Issue.record("expected storageFull, got \(result)", sourceLocation: sourceLocation)
            return
        }
    }

    @Test func aFailedSnapshotWriteLeavesNoTempFileAndKeepsThePreviousOne() async throws {
        let disk = try SmallDisk(megabytes: 1)
        let snapshots = try SnapshotStore(directory: disk.path + "/snapshots")
        let hash = [UInt8](repeating: 7, count: 32)
        try snapshots.save(sequence: 5, chainHash: hash, bytes: [UInt8](repeating: 1, count: 1000))
        try disk.fill()
        #expect(throws: EventLogError.self) {
            try snapshots.save(sequence: 9, chainHash: hash, bytes: [UInt8](repeating: 2, count: 64 * 1024))
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: snapshots.directory)
        #expect(!names.contains { $0.hasSuffix(".tmp") }, "\(names)")
        #expect(try snapshots.names() == ["snapshot-00000000000000000005.snap"])
        #expect(try snapshots.read("snapshot-00000000000000000005.snap").get().bytes.count == 1000)
    }
}

extension Result where Failure == Error {
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
