import Foundation
import Synchronization
import Testing

@testable import HubLog

@Suite struct ReadOnlyTests {
    @Test func aSecondWriterIsRefused() throws {
        let dir = temporaryDirectory()
        let store = try SegmentStore(directory: dir)
        defer { store.close() }
        do {
            _ = try SegmentStore(directory: dir)
            Issue.record("two writers opened one log")
        } catch let EventLogError.invalid(message) {
            #expect(message.contains("in use by another hub process"))
        }
    }

    @Test func aReaderFollowsTheWriterAcrossSegmentsWithoutRepairing() async throws {
        let dir = temporaryDirectory()
        let writer = try SegmentStore(directory: dir, options: SegmentStoreOptions(segmentSize: 2048))
        defer { writer.close() }
        for i in 0..<10 { _ = try await writer.append(request("s", i)) }
        let reader = try SegmentStore(directory: dir, readOnly: true)
        #expect(reader.lastSequence == 10)
        await #expect(throws: EventLogError.self) { try await reader.append(request("s", 0)) }
        let follow = Task {
            var seen: [UInt64] = []
            for try await record in reader.subscribe(from: 8) {
                seen.append(record.sequence)
                if record.sequence == 60 { break }
            }
            return seen
        }
        for i in 10..<60 { _ = try await writer.append(request("s", i)) }
        #expect(try await follow.value == Array(8...60))
        #expect(segmentPaths(dir).count > 1)
    }

    @Test func aReaderRefusesAppendAllInsteadOfWaitingForAWriterItHasNot() async throws {
        let (dir, _) = try await makeLog(count: 3)
        let reader = try SegmentStore(directory: dir, readOnly: true)
        // Waited for with a deadline: a read-only store has no writer thread to answer a queued
        // append, so a wait on the task itself could hang the test instead of failing it.
        let answered = Mutex<[Result<AppendResult, Error>]?>(nil)
        Task {
            let r = await reader.appendAll([request("s", 3), request("s", 4)]); answered.withLock { $0 = r }
        }
        let deadline = ContinuousClock.now + .seconds(5)
        while answered.withLock({ $0 == nil }) && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        let results = answered.withLock { $0 }
        #expect(results?.count == 2, "appendAll on a read-only store was not answered within 5 s")
        for result in results ?? [] {
            #expect(throws: EventLogError.self) { try result.get() }
        }
        #expect(reader.lastSequence == 3)
    }

    @Test func aReaderLeavesATornTailAlone() async throws {
        let (dir, segment) = try await makeLog(count: 3)
        let bytes = readFile(segment)
        writeFile(segment, Array(bytes.dropLast(5)))
        let reader = try SegmentStore(directory: dir, readOnly: true)
        #expect(reader.lastSequence == 2)
        #expect(readFile(segment).count == bytes.count - 5)
    }
}

/// The writer thread shows in `top -H` and profiles by its name.
@Suite struct WriterThreadNameTests {
    @Test func theWriterThreadIsNamed() async throws {
        let store = try SegmentStore(directory: temporaryDirectory())
        defer { store.close() }
        _ = try await store.append(request("s", 0))  // the writer has run
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? [])
            .compactMap { try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8) }
            .map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        #expect(names.contains(SegmentStore.writerThreadName), "threads: \(names)")
    }
}
