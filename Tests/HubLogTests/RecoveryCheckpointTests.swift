import Foundation
import Testing

@testable import HubLog

/// Opening after a recovery checkpoint (`recovery.ckpt`): only the records after it are read, and
/// a checkpoint the log does not agree with is never used (a full scan finds the same state).
@Suite struct RecoveryCheckpointTests {
    static let streams = (0..<7).map { "device/d\($0)" }

    /// Small segments, so the log spans several files.
    static let options = SegmentStoreOptions(segmentSize: 16 * 1024)

    /// What opening rebuilds, as a reader sees it.
    struct Opened: Equatable {
        var last: UInt64
        var head: [UInt8]?
        var versions: [UInt64?]
        var segments: Int
        /// Records read through the seek index from the middle of the log.
        var middle: [UInt64]
    }

    /// The chain hash of the last record, read from the files (sequence 0: the genesis hash).
    static func head(_ store: SegmentStore) throws -> [UInt8]? {
        var hash = store.lastSequence == 0 ? RecordFormat.genesisHash : nil
        try store.scanViews(from: store.lastSequence, through: store.lastSequence) {
            hash = $0.hash; return false
        }
        return hash
    }

    static func state(_ store: SegmentStore) throws -> Opened {
        var middle: [UInt64] = []
        let from = store.lastSequence / 2
        try store.scanViews(from: from, through: from + 3) {
            middle.append($0.sequence); return true
        }
        return Opened(
            last: store.lastSequence, head: try head(store),
            versions: streams.map { store.streamVersion($0) }, segments: store.recovery.segments, middle: middle)
    }

    /// Appends `count` commands (some of two events) from `start` on, 50 per group commit; `salt`
    /// changes the payloads only (the same sizes, other chain hashes).
    static func append(_ store: SegmentStore, _ count: Int, from start: Int = 0, salt: Int = 0) async throws {
        for chunk in stride(from: start, to: start + count, by: 50) {
            let requests = (chunk..<min(chunk + 50, start + count)).map { i in
                request(streams[i % streams.count], i + salt, commandId: "cmd-\(i)", count: i % 5 == 0 ? 2 : 1)
            }
            for answer in await store.appendAll(requests) { _ = try answer.get() }
        }
    }

    /// A closed log of `count` commands, and the state a full scan of it finds.
    static func makeLog(_ count: Int, salt: Int = 0) async throws -> (dir: String, scanned: Opened) {
        let dir = temporaryDirectory()
        let store = try SegmentStore(directory: dir, options: options)
        try await append(store, count, salt: salt)
        store.close()
        return (dir, try fullScan(dir))
    }

    /// The state opening finds without a checkpoint (read-only: nothing is written).
    static func fullScan(_ dir: String) throws -> Opened {
        let copy = temporaryDirectory()
        for name in try FileManager.default.contentsOfDirectory(atPath: dir) where name.hasSuffix(".seg") {
            try FileManager.default.copyItem(atPath: dir + "/" + name, toPath: copy + "/" + name)
        }
        let store = try SegmentStore(directory: copy, readOnly: true)
        defer { store.close() }
        #expect(store.recovery.checkpointSequence == nil)
        #expect(store.recovery.scannedRecords == Int(store.lastSequence))
        return try state(store)
    }

    var checkpointPath: (String) -> String { { $0 + "/" + RecoveryCheckpoint.fileName } }

    @Test func aCleanCloseLeavesACheckpointAndTheNextOpenReadsNoRecord() async throws {
        let (dir, scanned) = try await Self.makeLog(1200)
        #expect(scanned.segments > 3, "the log should span several segments")
        for readOnly in [false, true] {
            let store = try SegmentStore(directory: dir, options: Self.options, readOnly: readOnly)
            #expect(store.recovery.checkpointSequence == scanned.last)
            #expect(store.recovery.scannedRecords == 0)
            #expect(try Self.state(store) == scanned)
            #expect(store.openingNotes.isEmpty, "\(store.openingNotes)")
            store.close()
        }
        // The reopened log takes appends as if it had been scanned: gapless, versions go on.
        let store = try SegmentStore(directory: dir, options: Self.options)
        let next = try await store.append(request(Self.streams[0], 0, expected: .exact(try #require(scanned.versions[0]))))
        #expect(next.firstSequence == scanned.last + 1)
        store.close()
        #expect(try LogVerifier.verify(directory: dir).records == scanned.last + 1)
    }

    /// After a crash the checkpoint is older than the log: opening reads only the records after it.
    @Test func anOlderCheckpointMeansReadingOnlyTheRecordsAfterIt() async throws {
        let (dir, _) = try await Self.makeLog(600)
        let old = readFile(checkpointPath(dir))
        let store = try SegmentStore(directory: dir, options: Self.options)
        let before = store.lastSequence
        try await Self.append(store, 130, from: 600)
        store.close()
        writeFile(checkpointPath(dir), old)
        let scanned = try Self.fullScan(dir)
        let reopened = try SegmentStore(directory: dir, options: Self.options)
        defer { reopened.close() }
        #expect(reopened.recovery.checkpointSequence == before)
        #expect(reopened.recovery.scannedRecords == Int(scanned.last - before))
        #expect(try Self.state(reopened) == scanned)
        // The commands after the checkpoint are known (their ids were indexed from the tail).
        #expect(try reopened.commandResult("cmd-729")?.lastSequence == scanned.last)
    }

    /// The crash itself: a copy of the directory taken while the store runs (no close) opens from
    /// the newest checkpoint the writer wrote on its way.
    @Test func theWriterCheckpointsAsItGoesSoACrashImageReadsOnlyTheTail() async throws {
        let dir = temporaryDirectory()
        var options = Self.options
        options.checkpointEvery = 8 * 1024
        let store = try SegmentStore(directory: dir, options: options)
        try await Self.append(store, 1000)
        let image = temporaryDirectory()
        try copyRunningLog(dir, to: image)
        store.close()
        let scanned = try Self.fullScan(image)
        let opened = try SegmentStore(directory: image, options: options)
        defer { opened.close() }
        let from = try #require(opened.recovery.checkpointSequence)
        #expect(from > 0)
        #expect(opened.recovery.scannedRecords == Int(scanned.last - from))
        // At most about `checkpointEvery` bytes of records (~100 bytes each) were read.
        #expect(opened.recovery.scannedRecords < 200, "scanned \(opened.recovery.scannedRecords)")
        #expect(try Self.state(opened) == scanned)
    }

    /// A torn write after the checkpoint is found and cut exactly as by a full scan.
    @Test func aTornTailAfterTheCheckpointIsCutAsBefore() async throws {
        let (dir, _) = try await Self.makeLog(600)
        let old = readFile(checkpointPath(dir))
        let store = try SegmentStore(directory: dir, options: Self.options)
        let before = store.lastSequence
        try await Self.append(store, 10, from: 600)
        store.close()
        writeFile(checkpointPath(dir), old)
        let newest = try #require(segmentPaths(dir).last)
        let bytes = readFile(newest)
        let last = try #require(frameOffsets(bytes).last)
        let cut = last.offset + last.length / 2
        writeFile(newest, Array(bytes[0..<cut]))
        let reopened = try SegmentStore(directory: dir, options: Self.options)
        #expect(reopened.recovery.checkpointSequence == before)
        #expect(reopened.lastSequence == before + 11)
        #expect(reopened.recovery.truncatedTail?.offset == last.offset)
        #expect(reopened.recovery.truncatedTail?.bytes == cut - last.offset)
        #expect(quarantineFiles(dir).count == 1)
        reopened.close()
        let again = try SegmentStore(directory: dir, options: Self.options)
        defer { again.close() }
        #expect(again.lastSequence == before + 11)
        #expect(try LogVerifier.verify(directory: dir).records == before + 11)
    }

    /// Every checkpoint that cannot be used: the open scans every record, finds what a full scan
    /// finds, says why in one line, and leaves a fresh checkpoint for the next open.
    @Test(arguments: [
        ("missing", "there was no recovery checkpoint"),
        ("flipped byte", "was damaged (checksum mismatch)"),
        ("cut short", "was damaged"),
        ("garbage", "was damaged (not a recovery checkpoint"),
        ("another log's", "did not match the log (the record at offset"),
        ("newest segment shorter", "did not match the log (segment"),
        ("a segment gone", "did not match the log (it names")
    ])
    func aCheckpointTheLogDoesNotAgreeWithIsNotUsed(damage: String, note: String) async throws {
        let (dir, _) = try await Self.makeLog(900)
        let path = checkpointPath(dir)
        var expectTorn = false
        switch damage {
        case "missing":
            try FileManager.default.removeItem(atPath: path)
        case "flipped byte":
            var bytes = readFile(path)
            bytes[bytes.count / 2] ^= 0x10
            writeFile(path, bytes)
        case "cut short":
            writeFile(path, Array(readFile(path).prefix(40)))
        case "garbage":
            writeFile(path, Array("hello".utf8))
        case "another log's":
            let (other, _) = try await Self.makeLog(900, salt: 1)
            try FileManager.default.removeItem(atPath: path)
            try FileManager.default.copyItem(atPath: checkpointPath(other), toPath: path)
        case "newest segment shorter":
            let newest = try #require(segmentPaths(dir).last)
            let bytes = readFile(newest)
            writeFile(newest, Array(bytes.dropLast(7)))
            expectTorn = true
        case "a segment gone":
            try FileManager.default.removeItem(atPath: try #require(segmentPaths(dir).last))
        default:
            Issue.record("unknown case \(damage)")
        }
        let scanned = try Self.fullScan(dir)
        let store = try SegmentStore(directory: dir, options: Self.options)
        #expect(store.recovery.checkpointSequence == nil, "\(damage)")
        #expect(store.recovery.scannedRecords == Int(scanned.last), "\(damage)")
        #expect(try Self.state(store) == scanned, "\(damage)")
        #expect(store.recovery.truncatedTail != nil || !expectTorn, "\(damage)")
        let line = store.openingNotes.first { $0.contains(RecoveryCheckpoint.fileName) }
        #expect(line?.contains(note) == true, "\(damage): \(store.openingNotes)")
        #expect(line?.hasSuffix("opening scanned all \(scanned.last) records") == true, "\(damage): \(String(describing: line))")
        store.close()
        let again = try SegmentStore(directory: dir, options: Self.options)
        defer { again.close() }
        #expect(again.recovery.checkpointSequence == scanned.last, "\(damage)")
        #expect(again.recovery.scannedRecords == 0, "\(damage)")
        #expect(again.openingNotes.isEmpty, "\(damage): \(again.openingNotes)")
    }

    /// A crash between the command index's checkpoint and the log's: the records from the index's
    /// mark through the checkpoint are read for their commands, and no more.
    @Test func aCommandIndexBehindTheCheckpointCatchesUpFromItsMark() async throws {
        let (dir, _) = try await Self.makeLog(900)
        let store = try SegmentStore(directory: dir, options: Self.options)
        let mark = store.lastSequence
        let idx = readFile(dir + "/commands.idx")
        try await Self.append(store, 20, from: 900)
        store.close()
        writeFile(dir + "/commands.idx", idx)
        let scanned = try Self.fullScan(dir)
        let reopened = try SegmentStore(directory: dir, options: Self.options)
        defer { reopened.close() }
        #expect(reopened.recovery.checkpointSequence == scanned.last)
        #expect(reopened.recovery.scannedRecords == Int(scanned.last - mark) + 1, "from the mark's own record on")
        #expect(reopened.openingNotes.isEmpty, "\(reopened.openingNotes)")
        #expect(try Self.state(reopened) == scanned)
        // Every command after the index's old mark is known again, and the ones before it still.
        #expect(try reopened.commandResult("cmd-919")?.lastSequence == scanned.last)
        #expect(try reopened.commandResult("cmd-2")?.lastSequence == 4)
    }

    /// A missing command index is rebuilt from the whole log (the one line says so), the rest of
    /// the state comes from the checkpoint.
    @Test func aMissingCommandIndexIsRebuiltBesideTheCheckpoint() async throws {
        let (dir, scanned) = try await Self.makeLog(300)
        try FileManager.default.removeItem(atPath: dir + "/commands.idx")
        let reopened = try SegmentStore(directory: dir, options: Self.options)
        defer { reopened.close() }
        #expect(reopened.recovery.checkpointSequence == scanned.last)
        #expect(reopened.openingNotes == ["the command index commands.idx was missing: rebuilt by a scan of \(scanned.last) records"])
        #expect(try reopened.commandResult("cmd-0")?.lastSequence == 2)
        #expect(try reopened.commandResult("cmd-299")?.lastSequence == scanned.last)
    }

    /// The price of not reading the whole log: damage before the checkpoint is not seen by opening,
    /// but by every read of the damaged record and by `verify`; without the checkpoint opening refuses.
    @Test func damageBeforeTheCheckpointIsFoundByReadsAndVerify() async throws {
        let (dir, _) = try await Self.makeLog(300)
        let first = try #require(segmentPaths(dir).first)
        var bytes = readFile(first)
        let frame = frameOffsets(bytes)[1]
        bytes[frame.offset + 20] ^= 0x40
        writeFile(first, bytes)
        let store = try SegmentStore(directory: dir, options: Self.options)
        #expect(store.recovery.checkpointSequence != nil)
        await #expect(throws: EventLogError.self) { try await store.read(from: 1, through: 5) { _ in true } }
        store.close()
        #expect(throws: EventLogError.self) { try LogVerifier.verify(directory: dir) }
        try FileManager.default.removeItem(atPath: checkpointPath(dir))
        do {
            let full = try SegmentStore(directory: dir, options: Self.options)
            full.close()
            Issue.record("a full scan opened a log with a damaged record")
        } catch let EventLogError.corrupt(_, offset, sequence, _) {
            #expect(offset == UInt64(frame.offset) && sequence == 2)
        }
    }

    @Test func theCheckpointCodecRoundTripsAndRefusesEveryCut() throws {
        let checkpoint = RecoveryCheckpoint(
            sequence: 2049, hash: (0..<32).map { UInt8($0) }, recordOffset: 900,
            segments: [.init(firstSequence: 1, end: 5000), .init(firstSequence: 2000, end: 1000)],
            streams: ["device/a": 7, "hub": 0, "animal/ü": 12],
            index: [
                .init(sequence: 1, segment: 0, offset: 16), .init(sequence: 1025, segment: 0, offset: 2500),
                .init(sequence: 2049, segment: 1, offset: 900)
            ])
        let bytes = checkpoint.encoded()
        #expect(try RecoveryCheckpoint.decode(bytes) == checkpoint)
        for length in 0..<bytes.count {
            #expect(throws: CheckpointProblem.self, "cut at \(length)") { try RecoveryCheckpoint.decode(Array(bytes[0..<length])) }
        }
    }
}
