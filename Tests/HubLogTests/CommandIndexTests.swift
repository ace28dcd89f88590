import Foundation
import Testing

@testable import HubLog

/// The command-id index: permanent idempotency with a bounded window in memory and the rest in
/// `commands.idx`, which start-up does not rebuild by a scan unless it is missing, damaged or not
/// this log's.
@Suite struct CommandIndexTests {
    /// Appends `ids` as commands, `batch` per group commit.
    func appendCommands(_ store: SegmentStore, _ ids: [String], batch: Int = 500) async throws -> [String: AppendResult] {
        var results: [String: AppendResult] = [:]
        for start in stride(from: 0, to: ids.count, by: batch) {
            let chunk = Array(ids[start..<min(start + batch, ids.count)])
            let answers = await store.appendAll(chunk.enumerated().map { i, id in request("device/d\(i % 7)", start + i, commandId: id) })
            for (id, answer) in zip(chunk, answers) { results[id] = try answer.get() }
        }
        return results
    }

    func options(window: Int = 8) -> SegmentStoreOptions { SegmentStoreOptions(commandWindow: window) }

    /// Returns once the ids of every commit so far are in the index file: the writer writes a
    /// commit's ids there after answering its callers, and starts the next commit (this append,
    /// which has no command id) only after that.
    func settle(_ store: SegmentStore) async throws {
        _ = try await store.append(request("device/settle", 0))
    }

    /// A hub runs for months: the window's memory is taken once, on the first command, and never
    /// grows with the commands that pass through it (it keeps 16-byte keys, not the ids' strings;
    /// before, each id cost ~230 bytes of heap until the window was full).
    @Test func theWindowTakesItsMemoryOnceOnTheFirstCommand() async throws {
        let store = try SegmentStore(directory: temporaryDirectory(), options: options(window: 4096))
        #expect(store.commands.windowBytes == 0, "a store that took no command holds no window")
        _ = try await appendCommands(store, ["first"])
        let once = store.commands.windowBytes
        #expect(once >= 4096 * (16 + MemoryLayout<AppendResult>.stride))
        _ = try await appendCommands(store, (0..<10_000).map { "\(UUID().uuidString)-\($0)" })
        #expect(store.commands.windowBytes == once)
        #expect(store.commands.memoryEntries == 4096)
        store.close()
    }

    @Test func aRepeatedIdLongAfterTheWindowGetsTheOriginalResult() async throws {
        let dir = temporaryDirectory()
        let store = try SegmentStore(directory: dir, options: options())
        let ids = (0..<1000).map { "cmd-\($0)" }
        let originals = try await appendCommands(store, ids)
        // Memory holds the window only, never every id.
        #expect(store.commands.memoryEntries <= 8)
        try await settle(store)
        #expect(store.commands.fileEntries == 1000)
        let last = store.lastSequence
        for id in ["cmd-0", "cmd-1", "cmd-500", "cmd-991"] {
            let again = try await store.append(request("device/x", 0, commandId: id))
            var expected = try #require(originals[id])
            expected.duplicate = true
            #expect(again == expected)
            #expect(try store.commandResult(id) == expected)
        }
        #expect(store.lastSequence == last)
        #expect(try store.commandResult("never-sent") == nil)
        store.close()
    }

    @Test func aMultiEventCommandIsAnsweredWithItsWholeRange() async throws {
        let dir = temporaryDirectory()
        let store = try SegmentStore(directory: dir, options: options(window: 1))
        let first = try await store.append(request("device/a", 0, commandId: "multi", count: 3))
        _ = try await appendCommands(store, (0..<20).map { "other-\($0)" })
        store.close()
        let reopened = try SegmentStore(directory: dir, options: options(window: 1))
        defer { reopened.close() }
        let again = try await reopened.append(request("device/a", 0, commandId: "multi"))
        #expect(again.duplicate && again.firstSequence == first.firstSequence && again.lastSequence == first.lastSequence)
        #expect(again.streamVersion == first.streamVersion)
    }

    @Test func afterARestartTheIndexAnswersWithoutAScan() async throws {
        let dir = temporaryDirectory()
        let store = try SegmentStore(directory: dir, options: options())
        let originals = try await appendCommands(store, (0..<300).map { "cmd-\($0)" })
        store.close()
        let reopened = try SegmentStore(directory: dir, options: options())
        defer { reopened.close() }
        #expect(reopened.openingNotes.isEmpty, "an index that matches the log is not rebuilt")
        #expect(reopened.commands.memoryEntries == 0, "start-up loads no command id into memory")
        for id in ["cmd-0", "cmd-150", "cmd-299"] {
            let again = try await reopened.append(request("device/x", 0, commandId: id))
            #expect(again.duplicate && again.firstSequence == originals[id]!.firstSequence)
        }
        #expect(reopened.lastSequence == 300)
    }

    @Test func aCrashAfterTheLastCheckpointIsMendedFromTheTail() async throws {
        let dir = temporaryDirectory()
        let store = try SegmentStore(directory: dir, options: options())
        _ = try await appendCommands(store, (0..<10).map { "early-\($0)" })
        store.close()
        let header = Array(readFile(dir + "/commands.idx")[0..<CommandIndexFile.headerSize])
        let again = try SegmentStore(directory: dir, options: options())
        _ = try await appendCommands(again, (0..<10).map { "late-\($0)" })
        again.close()
        // As if the hub died before checkpointing the late ones: the header still says 10, and the
        // late slots were never written.
        try rewriteIndex(dir, header: header, keepingOnly: 10)
        let reopened = try SegmentStore(directory: dir, options: options())
        defer { reopened.close() }
        #expect(reopened.openingNotes.isEmpty)
        #expect(try reopened.commandResult("late-9")?.firstSequence == 20)
        #expect(try reopened.commandResult("early-0")?.firstSequence == 1)
    }

    @Test func aDeletedOrDamagedIndexIsRebuiltAndSaysSo() async throws {
        let dir = temporaryDirectory()
        let store = try SegmentStore(directory: dir, options: options())
        let originals = try await appendCommands(store, (0..<50).map { "cmd-\($0)" })
        store.close()

        try FileManager.default.removeItem(atPath: dir + "/commands.idx")
        let rebuilt = try SegmentStore(directory: dir, options: options())
        #expect(rebuilt.openingNotes == ["the command index commands.idx was missing: rebuilt by a scan of 50 records"])
        #expect(try rebuilt.commandResult("cmd-7")?.firstSequence == originals["cmd-7"]!.firstSequence)
        rebuilt.close()

        var bytes = readFile(dir + "/commands.idx")
        bytes[20] ^= 0xFF
        writeFile(dir + "/commands.idx", bytes)
        let repaired = try SegmentStore(directory: dir, options: options())
        #expect(
            repaired.openingNotes == [
                "the command index commands.idx was damaged (header checksum mismatch): rebuilt by a scan of 50 records"
            ])
        #expect(try repaired.commandResult("cmd-49")?.firstSequence == originals["cmd-49"]!.firstSequence)
        repaired.close()

        let quiet = try SegmentStore(directory: dir, options: options())
        #expect(quiet.openingNotes.isEmpty)
        quiet.close()
    }

    @Test func anIndexOfAnotherLogIsRebuilt() async throws {
        let a = temporaryDirectory(), b = temporaryDirectory()
        let storeA = try SegmentStore(directory: a, options: options())
        _ = try await appendCommands(storeA, (0..<20).map { "a-\($0)" })
        storeA.close()
        let storeB = try SegmentStore(directory: b, options: options())
        _ = try await appendCommands(storeB, (0..<30).map { "b-\($0)" })
        storeB.close()
        try FileManager.default.removeItem(atPath: b + "/commands.idx")
        try FileManager.default.copyItem(atPath: a + "/commands.idx", toPath: b + "/commands.idx")
        let opened = try SegmentStore(directory: b, options: options())
        defer { opened.close() }
        #expect(
            opened.openingNotes == [
                "the command index commands.idx did not match the log (its chain hash at sequence 20 is not the log's): rebuilt by a scan of 30 records"
            ])
        #expect(try opened.commandResult("a-3") == nil)
        #expect(try opened.commandResult("b-29")?.firstSequence == 30)
    }

    @Test func entriesBeyondTheLogsEndAfterATailCutAreIgnored() async throws {
        let dir = temporaryDirectory()
        let store = try SegmentStore(directory: dir, options: options(window: 1))
        _ = try await appendCommands(store, (1...10).map { "cmd-\($0)" })
        store.close()
        let header = Array(readFile(dir + "/commands.idx")[0..<CommandIndexFile.headerSize])
        let more = try SegmentStore(directory: dir, options: options(window: 1))
        _ = try await appendCommands(more, (11...15).map { "cmd-\($0)" }, batch: 1)
        more.close()
        // The index holds slots for 11...15 but its header is back at 10 (no checkpoint since), and
        // the log loses its tail in the middle of record 13.
        var header10 = readFile(dir + "/commands.idx")
        header10.replaceSubrange(0..<header.count, with: header)
        writeFile(dir + "/commands.idx", header10)
        let segment = segmentPaths(dir).last!
        var bytes = readFile(segment)
        let frames = frameOffsets(bytes)
        bytes.removeLast(bytes.count - (frames[12].offset + 20))
        writeFile(segment, bytes)

        let reopened = try SegmentStore(directory: dir, options: options(window: 1))
        #expect(reopened.recovery.truncatedTail != nil)
        #expect(reopened.lastSequence == 12)
        // The torn tail is said (and the recovery checkpoint, now past the log's end), not the index: it matches the log through 10.
        #expect(!reopened.openingNotes.contains { $0.contains("commands.idx") }, "\(reopened.openingNotes)")
        #expect(try reopened.commandResult("cmd-12")?.firstSequence == 12)
        for id in ["cmd-13", "cmd-14", "cmd-15"] { #expect(try reopened.commandResult(id) == nil, "\(id) was cut") }
        // Sequence 13 now holds another command: the stale slot for cmd-13 names it, and is refused.
        _ = try await reopened.append(request("device/y", 0, commandId: "other"))
        #expect(try reopened.commandResult("cmd-13") == nil)
        let retried = try await reopened.append(request("device/y", 1, commandId: "cmd-13"))
        #expect(!retried.duplicate && retried.firstSequence == 14)
        _ = try await appendCommands(reopened, (0..<5).map { "filler-\($0)" })
        let twice = try await reopened.append(request("device/y", 2, commandId: "cmd-13"))
        #expect(twice.duplicate && twice.firstSequence == 14)
        reopened.close()

        let last = try SegmentStore(directory: dir, options: options(window: 1))
        defer { last.close() }
        #expect(try last.commandResult("cmd-13")?.firstSequence == 14)
        #expect(try last.commandResult("cmd-15") == nil)
    }

    @Test func theFileGrowsAndKeepsEveryId() async throws {
        let dir = temporaryDirectory()
        let store = try SegmentStore(directory: dir, options: options())
        let count = Int(CommandIndexFile.initialSlots)  // past 70 % of the first table: it doubles
        let originals = try await appendCommands(store, (0..<count).map { "grow-\($0)" }, batch: 1024)
        store.close()
        let size = try FileManager.default.attributesOfItem(atPath: dir + "/commands.idx")[.size] as! Int
        #expect(size == CommandIndexFile.headerSize + 2 * Int(CommandIndexFile.initialSlots) * CommandIndexFile.slotSize)
        let reopened = try SegmentStore(directory: dir, options: options())
        defer { reopened.close() }
        #expect(reopened.openingNotes.isEmpty)
        for i in stride(from: 0, to: count, by: 97) {
            #expect(try reopened.commandResult("grow-\(i)")?.firstSequence == originals["grow-\(i)"]!.firstSequence)
        }
    }

    /// A table that grows is laid out in memory and written in large writes when it is small
    /// enough, slot by slot in the new file otherwise: both keep every entry where a probe finds it.
    @Test(arguments: [32 << 20, 0]) func aGrowingTableKeepsEveryEntryLaidOutEitherWay(inMemory: Int) throws {
        let dir = temporaryDirectory()
        let file = try CommandIndexFile.create(directory: dir)
        defer { file.close() }
        file.growInMemoryBytes = inMemory
        let count = 3 * Int(CommandIndexFile.initialSlots)  // two doublings
        for i in 0..<count {
            try file.upsert("id-\(i)", first: UInt64(2 * i + 1), last: UInt64(2 * i + 2))
        }
        #expect(file.slotCount == 8 * CommandIndexFile.initialSlots)
        #expect(file.count == UInt64(count))
        for i in 0..<count {
            let found = try file.candidates(key: CommandIndexFile.key("id-\(i)"))
            #expect(found.count == 1 && found.first?.first == UInt64(2 * i + 1) && found.first?.last == UInt64(2 * i + 2), "id-\(i)")
        }
        #expect(try file.candidates(key: CommandIndexFile.key("never")).isEmpty)
    }

    /// After a crash the header's count can be behind the slots written since its checkpoint (they
    /// are found again, not counted again): the table must still grow instead of filling up.
    @Test func slotsWrittenAfterTheLastCheckpointDoNotFillTheTable() async throws {
        let dir = temporaryDirectory()
        let store = try SegmentStore(directory: dir, options: options())
        _ = try await appendCommands(store, (0..<1000).map { "a-\($0)" })
        store.close()
        let header = Array(readFile(dir + "/commands.idx")[0..<CommandIndexFile.headerSize])
        let more = try SegmentStore(directory: dir, options: options())
        _ = try await appendCommands(more, (0..<1800).map { "b-\($0)" })
        more.close()
        var bytes = readFile(dir + "/commands.idx")
        bytes.replaceSubrange(0..<header.count, with: header)  // as if killed before checkpointing the b-s
        writeFile(dir + "/commands.idx", bytes)
        let reopened = try SegmentStore(directory: dir, options: options())
        defer { reopened.close() }
        // 2800 slots used, 1000 counted: 1400 more would overfill 4096 slots on the count alone.
        let results = try await appendCommands(reopened, (0..<1400).map { "c-\($0)" })
        #expect(results.count == 1400)
        try await settle(reopened)
        #expect(reopened.commands.fileEntries == 4200)
        for id in ["a-0", "b-1799", "c-1399"] { #expect(try reopened.commandResult(id) != nil, "\(id)") }
    }

    /// Writes `header` over the index and empties every slot whose first sequence is above `keepingOnly`.
    func rewriteIndex(_ dir: String, header: [UInt8], keepingOnly limit: UInt64) throws {
        var bytes = readFile(dir + "/commands.idx")
        bytes.replaceSubrange(0..<header.count, with: header)
        var offset = CommandIndexFile.headerSize
        while offset + CommandIndexFile.slotSize <= bytes.count {
            let first = bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset + 16, as: UInt64.self).littleEndian }
            if first > limit {
                bytes.replaceSubrange(
                    offset..<(offset + CommandIndexFile.slotSize), with: [UInt8](repeating: 0, count: CommandIndexFile.slotSize))
            }
            offset += CommandIndexFile.slotSize
        }
        writeFile(dir + "/commands.idx", bytes)
    }

    /// An index that cannot be read answers with the error, never "no such command" (which would
    /// run a retried command a second time): `commandResult` throws what failed and where.
    @Test func anIndexThatCannotBeReadIsAnErrorNotAnUnknownCommand() async throws {
        let dir = temporaryDirectory()
        let store = try SegmentStore(directory: dir, options: options())
        _ = try await appendCommands(store, (0..<20).map { "cmd-\($0)" })
        store.close()
        let reopened = try SegmentStore(directory: dir, options: options(window: 1))
        defer { reopened.close() }
        #expect(try reopened.commandResult("cmd-3")?.firstSequence == 4)
        // The index file loses its slots while the store has it open (a damaged disk, a stray truncate).
        let fd = open(dir + "/commands.idx", O_WRONLY)
        #expect(fd >= 0 && ftruncate(fd, off_t(CommandIndexFile.headerSize)) == 0)
        close(fd)
        do {
            let answer = try reopened.commandResult("cmd-7")
            Issue.record("an unreadable index answered \(String(describing: answer))")
        } catch let error as EventLogError {
            #expect(error == .io(path: dir + "/commands.idx", operation: "read (file shorter than its slots)", errno: EIO))
            #expect("\(error)".contains(dir + "/commands.idx"), "\(error)")
        }
        // The same id asked in an append is refused with that error, and nothing is appended.
        let last = reopened.lastSequence
        await #expect(throws: EventLogError.self) { try await reopened.append(request("device/x", 0, commandId: "cmd-7")) }
        #expect(reopened.lastSequence == last)
    }

}
