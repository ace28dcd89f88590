import Foundation
import Testing

@testable import HubLog

/// Preallocated segments (``SegmentStoreOptions/preallocation``): the newest segment is extended
/// with written zeros ahead of its records, so the log's end is found by its frames, not the file's
/// size. A crash leaves zeros (no tail) or a write cut short in them (torn, cut into quarantine);
/// damage to a whole record is still refused.
@Suite struct PreallocationTests {
    /// A store with `count` appends, left open (as a crash leaves it), and a copy of its directory
    /// taken then: the copy is what the next open after a crash finds.
    func crashedCopy(
        count: Int, size: Int = 40, options: SegmentStoreOptions = SegmentStoreOptions()
    ) async throws -> (store: SegmentStore, copy: String) {
        let dir = temporaryDirectory()
        let store = try SegmentStore(directory: dir, options: options)
        for i in 0..<count {
            _ = try await store.append(
                AppendRequest(
                    stream: "device/\(i % 3)", expected: .any,
                    causation: Causation(commandId: nil, actor: "test"), events: [event(i, size: size)]))
        }
        let copy = temporaryDirectory()
        try copyRunningLog(dir, to: copy)
        return (store, copy)
    }

    @Test func theNewestSegmentRunsAheadInZerosAndClosedSegmentsEndAtTheirLastRecord() async throws {
        let options = SegmentStoreOptions(segmentSize: 8192, preallocation: 4096)
        let (store, copy) = try await crashedCopy(count: 200, options: options)
        let paths = segmentPaths(store.directory)
        #expect(paths.count > 2)
        for path in paths.dropLast() {
            let bytes = readFile(path), frames = frameOffsets(bytes)
            #expect(frames.last.map { $0.offset + $0.length } == bytes.count, "\(path) ends at its last record")
        }
        let newest = readFile(paths.last!), frames = frameOffsets(newest)
        let recordsEnd = frames.last.map { $0.offset + $0.length } ?? RecordFormat.segmentHeaderSize
        #expect(
            newest.count > recordsEnd && newest.count % 4096 == 0, "preallocated: \(newest.count) bytes for records ending at \(recordsEnd)"
        )
        #expect(newest[recordsEnd...].allSatisfy { $0 == 0 })
        let written = paths.dropLast().map { readFile($0).count }.reduce(recordsEnd, +)
        #expect(try LogVerifier.verify(directory: store.directory).bytes == written, "verify counts records, not the zeros")
        store.close()
        #expect(readFile(paths.last!).count == recordsEnd, "closing cuts the zeros")
        #expect(try LogVerifier.verify(directory: store.directory).records == 200)

        // The crash's copy: every record, nothing cut, and appends go on over the zeros.
        let reopened = try SegmentStore(directory: copy, options: options)
        #expect(reopened.lastSequence == 200)
        #expect(reopened.recovery.truncatedTail == nil && quarantineFiles(copy).isEmpty)
        #expect(try await reopened.append(request("device/0", 999)).firstSequence == 201)
        reopened.close()
        #expect(try LogVerifier.verify(directory: copy).records == 201)
    }

    /// Once less than half a step of zeros is left after the records, the idle writer adds the next
    /// step by itself, so the next commit finds room and has only its data to sync.
    @Test func theIdleWriterExtendsTheSegmentBeforeAnyCommitNeedsIt() async throws {
        let options = SegmentStoreOptions(preallocation: 4096)
        let dir = temporaryDirectory()
        let store = try SegmentStore(directory: dir, options: options)
        defer { store.close() }
        let segment = segmentPaths(dir)[0]
        var records = 0
        repeat {
            _ = try await store.append(request("device/0", records))
            records += 1
        } while frameOffsets(readFile(segment)).last.map { $0.offset + $0.length }! < 4096 - 2048 + 1
        let recordsEnd = frameOffsets(readFile(segment)).last.map { $0.offset + $0.length }!
        let deadline = ContinuousClock.now + .seconds(5)
        while readFile(segment).count < 8192 && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(readFile(segment).count == 8192, "\(recordsEnd) bytes of records, \(readFile(segment).count) in the file")
        #expect(store.syncCount == records, "the extension's sync is not a commit")
    }

    /// The last record's write cut short by the crash, the rest of it never written (zeros): torn,
    /// cut into quarantine (its written bytes, not the unused zeros after them); the next append
    /// takes its sequence.
    @Test func aWriteCutShortInPreallocatedSpaceIsCutAsTorn() async throws {
        let (store, copy) = try await crashedCopy(count: 4)
        defer { store.close() }
        let segment = segmentPaths(copy)[0]
        var bytes = readFile(segment)
        let last = frameOffsets(bytes)[3]
        let cut = last.offset + last.length / 2
        let written = Array(bytes[last.offset..<cut])
        for i in cut..<(last.offset + last.length) { bytes[i] = 0 }
        writeFile(segment, bytes)
        #expect(try LogVerifier.verify(directory: copy).incompleteTail != nil)
        let reopened = try SegmentStore(directory: copy)
        #expect(reopened.lastSequence == 3)
        #expect(reopened.recovery.truncatedTail?.offset == last.offset)
        let name = "quarantine-00000000000000000001-\(last.offset).bin"
        #expect(quarantineFiles(copy) == [name])
        // Whole 512-byte blocks of zeros after the written bytes are left out; the rest is kept.
        let kept = readFile(copy + "/" + name)
        #expect(
            Array(kept.prefix(written.count)) == written && kept.count < 512 + written.count
                && kept.dropFirst(written.count).allSatisfy { $0 == 0 })
        #expect(try await reopened.append(request("device/0", 99)).firstSequence == 4)
        reopened.close()
        #expect(try LogVerifier.verify(directory: copy).records == 4)
    }

    /// A block in the middle of the last (large) record never reached the disk, its end did: torn.
    @Test func aBlockOfZerosInsideTheLastRecordIsATornWrite() async throws {
        let (store, copy) = try await crashedCopy(count: 3, size: 3000)
        defer { store.close() }
        let segment = segmentPaths(copy)[0]
        var bytes = readFile(segment)
        let last = frameOffsets(bytes)[2]
        let hole = (last.offset / 512 + 2) * 512
        #expect(hole + 512 < last.offset + last.length)
        for i in hole..<(hole + 512) { bytes[i] = 0 }
        writeFile(segment, bytes)
        let reopened = try SegmentStore(directory: copy)
        defer { reopened.close() }
        #expect(reopened.lastSequence == 2)
        #expect(reopened.recovery.truncatedTail?.offset == last.offset)
    }

    /// Zeros after it do not make damage to a whole last record a torn write: a flipped byte (or
    /// 511 zeroed bytes, less than a block) still refuses the open and changes nothing.
    @Test func damageToTheLastRecordIsRefusedWithZerosAfterIt() async throws {
        let (store, copy) = try await crashedCopy(count: 3, size: 3000)
        defer { store.close() }
        let segment = segmentPaths(copy)[0]
        let original = readFile(segment)
        let last = frameOffsets(original)[2]
        var flipped = original
        flipped[last.offset + 100] ^= 0x40
        var zeroed = original
        let start = (last.offset / 512 + 2) * 512 + 1
        for i in start..<(start + 511) { zeroed[i] = 0 }
        for bytes in [flipped, zeroed] {
            writeFile(segment, bytes)
            #expect(throws: EventLogError.self) { try SegmentStore(directory: copy).close() }
            #expect(throws: EventLogError.self) { try LogVerifier.verify(directory: copy) }
            #expect(readFile(segment) == bytes && quarantineFiles(copy).isEmpty)
        }
    }

    /// A read-only follower (another process's `events --follow`) reads a preallocated writer's
    /// records as they are committed, through rotations, and stops at the zeros.
    @Test func aFollowerReadsUpToTheZerosAndAcrossRotations() async throws {
        let options = SegmentStoreOptions(segmentSize: 8192, preallocation: 4096)
        let dir = temporaryDirectory()
        let store = try SegmentStore(directory: dir, options: options)
        defer { store.close() }
        _ = try await store.append(request("device/0", 0))
        let follower = try SegmentStore(directory: dir, readOnly: true)
        #expect(follower.lastSequence == 1)
        for i in 1..<150 { _ = try await store.append(request("device/\(i % 3)", i)) }
        try follower.refresh()
        #expect(follower.lastSequence == 150)
        #expect(try allRecords(follower).map(\.sequence) == Array(1...150))
    }

    /// The log writer thread's bytes dirtied (`/proc/self/task/TID/io` `write_bytes`), by thread id.
    static func writerThreads() -> [String: Int] {
        let root = "/proc/self/task"
        var out: [String: Int] = [:]
        for tid in (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? [] {
            guard let comm = try? String(contentsOfFile: "\(root)/\(tid)/comm", encoding: .utf8),
                comm.hasPrefix(SegmentStore.writerThreadName.prefix(15)),
                let io = try? String(contentsOfFile: "\(root)/\(tid)/io", encoding: .utf8),
                let line = io.split(separator: "\n").first(where: { $0.hasPrefix("write_bytes:") }),
                let bytes = Int(line.split(separator: " ").last ?? "")
            else { continue }
            out[tid] = bytes
        }
        return out
    }

    /// A small commit past the segment's first preallocation step dirties a page or two, not the
    /// step: the zeros are written a page at a time, so the page cache holds them in page-sized
    /// folios. (Written in one 1 MiB `pwrite`, on kernels whose ext4 caches a file in large folios,
    /// 6.16 and later, every later record dirtied, counted and kept dirty the whole megabyte.)
    @Test func aSmallCommitPastTheFirstStepDirtiesPagesNotTheStep() async throws {
        let dir = temporaryDirectory()
        let before = Set(Self.writerThreads().keys)
        let store = try SegmentStore(directory: dir)
        defer { store.close() }
        // Past the first megabyte of the segment: the writer extends it by the next step.
        _ = await store.appendAll(
            (0..<300).map { n in
                AppendRequest(stream: "device/big", causation: Causation(commandId: nil, actor: "test"), events: [event(n, size: 4000)])
            })
        _ = try await store.append(request("device/plug", 1000))
        let mine = Set(Self.writerThreads().keys).subtracting(before)
        guard mine.count == 1, let tid = mine.first else { return }  // another test's writer started meanwhile
        let start = Self.writerThreads()[tid] ?? 0
        for n in 0..<20 { _ = try await store.append(request("device/plug", 2000 + n)) }
        let dirtied = (Self.writerThreads()[tid] ?? 0) - start
        #expect(dirtied <= 20 * 16 * 1024, "20 commits of about 100 bytes dirtied \(dirtied) bytes")
    }
}
