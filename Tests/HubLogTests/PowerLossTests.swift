import Foundation
import Synchronization
import Testing

@testable import HubLog

/// Power loss, not just a killed process: a kill keeps the page cache, a power cut keeps only what
/// was synced. The log's every change to its files is recorded through ``FileIO/recorder`` while
/// appends are acknowledged; then, at every point of that history, the crash states a power cut
/// could leave are built (each file's unsynced writes all lost, all kept, kept up to one write that
/// is torn at a sector boundary, its first or its last sectors on disk, or kept except one the disk
/// had not flushed) and
/// opened: each must recover to a prefix of what was appended that holds every acknowledged record.
/// In the spirit of ALICE and CrashMonkey, for data writes; file creation, renames and removals are
/// taken as done (the log syncs its directory after each).
@Suite(.serialized) struct PowerLossTests {
    /// One file of the model: its bytes as the process saw them, as last synced, and the data
    /// changes since that sync.
    struct File {
        var current: [UInt8] = []
        var durable: [UInt8] = []
        var pending: [Change] = []
        /// Where a write without an offset lands.
        var position = 0
    }

    enum Change {
        case write(offset: Int, bytes: [UInt8])
        case truncate(Int)

        func apply(_ bytes: inout [UInt8]) {
            switch self {
            case let .write(offset, data):
                if bytes.count < offset + data.count { bytes += [UInt8](repeating: 0, count: offset + data.count - bytes.count) }
                bytes.replaceSubrange(offset..<offset + data.count, with: data)
            case .truncate(let length):
                if bytes.count > length {
                    bytes.removeLast(bytes.count - length)
                } else {
                    bytes += [UInt8](repeating: 0, count: length - bytes.count)
                }
            }
        }

        /// The part of a torn write before or after its first 512-byte sector boundary (a disk
        /// writes a sector whole or not at all); nil for a write within one sector, or a truncate.
        func half(_ first: Bool) -> Change? {
            guard case let .write(offset, data) = self else { return nil }
            let boundary = (offset / 512 + 1) * 512
            guard boundary < offset + data.count else { return nil }
            let cut = boundary - offset
            return first ? .write(offset: offset, bytes: Array(data[..<cut])) : .write(offset: boundary, bytes: Array(data[cut...]))
        }
    }

    /// The files after `operations`, by path relative to the log directory.
    static func model(_ operations: ArraySlice<FileIO.Operation>, root: String) -> [String: File] {
        var files: [String: File] = [:]
        func name(_ path: String) -> String { String(path.dropFirst(root.count)) }
        func change(_ path: String, _ change: Change) {
            var file = files[name(path)] ?? File()
            change.apply(&file.current)
            file.pending.append(change)
            files[name(path)] = file
        }
        for operation in operations {
            switch operation {
            case let .open(path, flags):
                var file = files[name(path)] ?? File()
                file.position = 0
                files[name(path)] = file
                if flags & O_TRUNC != 0 { change(path, .truncate(0)) }
            case let .write(path, offset, bytes):
                let at = offset ?? files[name(path)]?.position ?? 0
                change(path, .write(offset: at, bytes: bytes))
                if offset == nil { files[name(path)]?.position = at + bytes.count }
            case let .zeros(path, range):
                change(path, .write(offset: range.lowerBound, bytes: [UInt8](repeating: 0, count: range.count)))
            case let .truncate(path, length):
                change(path, .truncate(length))
            case .sync(let path):
                if var file = files[name(path)] {
                    file.durable = file.current
                    file.pending = []
                    files[name(path)] = file
                }
            case .syncDirectory:
                break
            case let .rename(from, to):
                files[name(to)] = files.removeValue(forKey: name(from))
            case .remove(let path):
                files[name(path)] = nil
            }
        }
        return files
    }

    /// How a crash state came about, for the one file varied.
    enum Kind: String {
        case synced, all, firstSectors, lastSectors, skipped
    }

    /// What a power cut may leave of one file: its synced bytes plus some of its unsynced changes.
    /// `coalescing`: the unsynced writes count by the runs of bytes they changed, not write by
    /// write (appends that waited in the page cache for one sync reach the disk as one run of
    /// pages, whatever writes made them).
    static func outcomes(_ file: File, coalescing: Bool = false) -> [(bytes: [UInt8], kind: Kind)] {
        var out: [(bytes: [UInt8], kind: Kind)] = [(file.durable, .synced), (file.current, .all)]
        let pending = coalescing ? coalesced(file.pending, current: file.current) : file.pending
        for j in pending.indices {
            var before = file.durable
            for change in pending[..<j] { change.apply(&before) }
            for first in [true, false] {
                guard let torn = pending[j].half(first) else { continue }
                var bytes = before
                torn.apply(&bytes)
                out.append((bytes, first ? .firstSectors : .lastSectors))
            }
            var skipped = file.durable  // every change but this one reached the disk
            for (k, change) in pending.enumerated() where k != j { change.apply(&skipped) }
            out.append((skipped, .skipped))
        }
        return out
    }

    /// The unsynced writes of a file as the page cache holds them: each run of bytes written since
    /// the last sync, with its bytes as they are now, is one write (in file order). Unchanged when
    /// a truncate is among them.
    static func coalesced(_ changes: [Change], current: [UInt8]) -> [Change] {
        var ranges: [Range<Int>] = []
        for change in changes {
            guard case let .write(offset, bytes) = change else { return changes }
            ranges.append(offset..<(offset + bytes.count))
        }
        var runs: [Range<Int>] = []
        for range in ranges.sorted(by: { $0.lowerBound < $1.lowerBound }) {
            if let last = runs.last, range.lowerBound <= last.upperBound {
                runs[runs.count - 1] = last.lowerBound..<max(last.upperBound, range.upperBound)
            } else {
                runs.append(range)
            }
        }
        return runs.map { .write(offset: $0.lowerBound, bytes: Array(current[$0])) }
    }

    /// Opens a crash state as the hub would after the power came back: its files in a log
    /// directory of their own (removed afterwards); the records the store recovers.
    static func recovered(_ state: [String: [UInt8]], options: SegmentStoreOptions) throws -> [EventRecord] {
        let base = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: base) }
        let image = base + "/log"
        try FileManager.default.createDirectory(atPath: image, withIntermediateDirectories: true)
        for (name, bytes) in state { FileManager.default.createFile(atPath: image + "/" + name, contents: Data(bytes)) }
        let store = try SegmentStore(directory: image, options: options)
        defer { store.close() }
        return try allRecords(store)
    }

    /// Every crash state at one point: one file's outcome varied at a time, the others all synced
    /// only or all kept.
    static func states(_ files: [String: File], coalescing: Bool = false) -> [(files: [String: [UInt8]], kind: Kind)] {
        var states: [(files: [String: [UInt8]], kind: Kind)] = []
        var seen = Set<Int>()
        let names = files.keys.sorted()
        for base in [false, true] {
            let others = files.mapValues { base ? $0.current : $0.durable }
            for name in names where !files[name]!.pending.isEmpty {
                for (bytes, kind) in outcomes(files[name]!, coalescing: coalescing) {
                    var state = others
                    state[name] = bytes
                    var hasher = Hasher()
                    for key in names { hasher.combine(key); hasher.combine(state[key]!) }
                    if seen.insert(hasher.finalize()).inserted { states.append((state, kind)) }
                }
            }
            if names.allSatisfy({ files[$0]!.pending.isEmpty }), seen.insert(base ? 1 : 0).inserted {
                states.append((others, base ? .all : .synced))
            }
        }
        return states
    }

    /// Appends, each acknowledged (some with command ids, some of several events), across segment
    /// ends and recovery checkpoints; returns what was appended, the recorded changes, and after
    /// how many changes each append was acknowledged.
    static func workload(
        directory: String, options: SegmentStoreOptions, observations: Bool = false
    ) async throws
        -> (requests: [AppendRequest], operations: [FileIO.Operation], acknowledgedAt: [Int])
    {
        let recorded = Mutex<[FileIO.Operation]>([])
        let root = directory + "/"
        FileIO.recorder.withLock {
            $0 = { operation in
                let path: String
                switch operation {
                case .open(let p, _), .write(let p, _, _), .zeros(let p, _), .truncate(let p, _), .sync(let p), .syncDirectory(let p),
                    .remove(let p):
                    path = p
                case .rename(let from, _): path = from
                }
                if path.hasPrefix(root) { recorded.withLock { $0.append(operation) } }
            }
        }
        defer { FileIO.recorder.withLock { $0 = nil } }
        let store = try SegmentStore(directory: directory, options: options)
        var requests: [AppendRequest] = []
        var acknowledgedAt: [Int] = []
        for n in 0..<14 {
            var request = PowerLossTests.request(n)
            // Commands every fourth append, observations (synced with the next command) between.
            if observations {
                request.causation.commandId = n % 4 == 3 ? "c-\(n)" : nil
                request.durability = .observation
            }
            _ = try await store.append(request)
            requests.append(request)
            acknowledgedAt.append(recorded.withLock { $0.count })
        }
        store.close()
        return (requests, recorded.withLock { $0 }, acknowledgedAt)
    }

    static func request(_ n: Int) -> AppendRequest {
        let events = (0..<(n % 3 == 2 ? 3 : 1)).map { event(n * 10 + $0, size: 120 + 37 * (n % 5)) }
        return AppendRequest(
            stream: "device/d\(n % 4)", expected: .any,
            causation: Causation(commandId: n % 2 == 0 ? "c-\(n)" : nil, actor: "test"), events: events)
    }

    /// The rule that lets a torn last write be cut does not cover damage before a later write: the
    /// first block of record 2's write lost (zeros up to the block boundary) while record 3, appended
    /// (and synced) after it, is sound is refused and named; nothing is changed.
    @Test func aLostFirstBlockBeforeALaterWriteIsRefused() async throws {
        let directory = temporaryDirectory()
        let store = try SegmentStore(directory: directory)
        for n in 0..<3 {
            _ = try await store.append(
                AppendRequest(
                    stream: "device/d", expected: .any, causation: Causation(commandId: nil, actor: "test"),
                    events: [event(n, size: 700)]))
        }
        store.close()
        try? FileManager.default.removeItem(atPath: directory + "/" + RecoveryCheckpoint.fileName)
        let segment = segmentPaths(directory)[0]
        var bytes = readFile(segment)
        let second = frameOffsets(bytes)[1].offset
        for i in second..<((second / 512 + 1) * 512) { bytes[i] = 0 }
        writeFile(segment, bytes)
        #expect {
            try SegmentStore(directory: directory).close()
        } throws: { error in
            guard case let .corrupt(_, offset, sequence, reason)? = error as? EventLogError else { return false }
            return offset == UInt64(second) && sequence == 2 && reason.contains("sound records follow it")
        }
        #expect(readFile(segment) == bytes, "a refused open must not change the file")
    }

    /// The same lost first block, when what follows is the rest of the same write (a group commit of
    /// three appends, never synced: the power cut came before its sync), is a torn write: opening
    /// cuts it back to the records before it.
    @Test func aLostFirstBlockOfTheLastWriteIsCutWithTheRestOfThatWrite() async throws {
        let directory = temporaryDirectory()
        let store = try SegmentStore(directory: directory)
        _ = try await store.append(
            AppendRequest(
                stream: "device/d", expected: .any, causation: Causation(commandId: nil, actor: "test"),
                events: [event(0, size: 700)]))
        let group = (1...3).map { n in
            AppendRequest(
                stream: "device/d\(n)", expected: .any, causation: Causation(commandId: nil, actor: "test"), events: [event(n, size: 700)])
        }
        for result in await store.appendAll(group) { _ = try result.get() }
        store.close()
        try? FileManager.default.removeItem(atPath: directory + "/" + RecoveryCheckpoint.fileName)
        let segment = segmentPaths(directory)[0]
        var bytes = readFile(segment)
        let frames = frameOffsets(bytes)
        #expect(frames.count == 4)
        let second = frames[1].offset
        for i in second..<((second / 512 + 1) * 512) { bytes[i] = 0 }
        writeFile(segment, bytes)
        let reopened = try SegmentStore(directory: directory)
        defer { reopened.close() }
        #expect(reopened.lastSequence == 1)
        #expect(reopened.recovery.truncatedTail?.offset == second)
    }

    /// Appends one by one to a new log whose observations wait for their sync (a delay far longer
    /// than the test): a command (synced with everything before it) where `commands` says so, an
    /// observation otherwise, each its own write of one 700-byte event. Returns the segment's path
    /// and its frames, with no recovery checkpoint left to skip them.
    static func appendOneByOne(
        _ directory: String, commands: [Bool]
    ) async throws -> (segment: String, frames: [(offset: Int, length: Int)]) {
        let store = try SegmentStore(directory: directory, options: SegmentStoreOptions(observationCommitDelay: .seconds(600)))
        for (n, command) in commands.enumerated() {
            var request = AppendRequest(
                stream: "device/d\(n)", expected: .any, causation: Causation(commandId: command ? "c-\(n)" : nil, actor: "test"),
                events: [event(n, size: 700)])
            request.durability = .observation
            _ = try await store.append(request)
        }
        store.close()
        try? FileManager.default.removeItem(atPath: directory + "/" + RecoveryCheckpoint.fileName)
        let segment = segmentPaths(directory)[0]
        return (segment, frameOffsets(readFile(segment)))
    }

    /// Zeros the first block of each frame at `offsets` of a segment file, up to the next 512-byte
    /// boundary (that block of its write never reached the disk); returns the file's new bytes.
    static func loseFirstBlocks(_ segment: String, at offsets: [Int]) -> [UInt8] {
        var bytes = readFile(segment)
        for offset in offsets {
            for i in offset..<((offset / 512 + 1) * 512) { bytes[i] = 0 }
        }
        writeFile(segment, bytes)
        return bytes
    }

    /// Observations written one by one after a command share one sync group until the next sync:
    /// the first block of the first one lost, while the later writes of the group reached the disk,
    /// is a torn tail (none of them was synced), cut back to the command.
    @Test func aLostFirstBlockOfAnUnsyncedGroupIsCutWithTheLaterWritesOfThatGroup() async throws {
        let directory = temporaryDirectory()
        let (segment, frames) = try await Self.appendOneByOne(directory, commands: [true, false, false, false])
        #expect(frames.count == 4)
        _ = Self.loseFirstBlocks(segment, at: [frames[1].offset])
        let reopened = try SegmentStore(directory: directory)
        defer { reopened.close() }
        #expect(reopened.lastSequence == 1)
        #expect(reopened.recovery.truncatedTail?.offset == frames[1].offset)
    }

    /// A power cut may keep any of an unsynced group's blocks: two of them lost, with writes of the
    /// group between and after them, is still the group's torn tail, cut back to its start.
    @Test func twoLostBlocksOfAnUnsyncedGroupAreCutWithTheWholeGroup() async throws {
        let directory = temporaryDirectory()
        let (segment, frames) = try await Self.appendOneByOne(directory, commands: [true, false, false, false, false, false])
        _ = Self.loseFirstBlocks(segment, at: [frames[1].offset, frames[3].offset])
        let reopened = try SegmentStore(directory: directory)
        defer { reopened.close() }
        #expect(reopened.lastSequence == 1)
        #expect(reopened.recovery.truncatedTail?.offset == frames[1].offset)
    }

    /// A group synced by a command is durable: the first block of one of its records lost, with a
    /// later group after it, is damage in synced data. Opening refuses and names it, changing nothing.
    @Test func aLostFirstBlockInASyncedGroupBeforeALaterGroupIsRefused() async throws {
        let directory = temporaryDirectory()
        // Groups: [1], [2, 3, 4] (synced by the command 4), [5, 6] (not synced).
        let (segment, frames) = try await Self.appendOneByOne(directory, commands: [true, false, false, true, false, false])
        let third = frames[2].offset
        let bytes = Self.loseFirstBlocks(segment, at: [third])
        #expect {
            try SegmentStore(directory: directory).close()
        } throws: { error in
            guard case let .corrupt(_, offset, sequence, reason)? = error as? EventLogError else { return false }
            return offset == UInt64(third) && sequence == 3 && reason.contains("sound records follow it")
        }
        #expect(readFile(segment) == bytes, "a refused open must not change the file")
        #expect(throws: EventLogError.self) { try LogVerifier.verify(directory: directory) }
    }

    @Test(arguments: [0, 1024])
    func everyCrashStateAPowerCutCouldLeaveRecoversEveryAcknowledgedRecord(preallocation: Int) async throws {
        let directory = temporaryDirectory()
        let options = SegmentStoreOptions(segmentSize: 2048, checkpointEvery: 1500, preallocation: preallocation)
        let (requests, operations, acknowledgedAt) = try await Self.workload(directory: directory + "/log", options: options)
        #expect(operations.contains { if case .sync = $0 { true } else { false } })
        let expected = requests.flatMap { request in request.events.map { (request.stream, $0.payload) } }
        let eventsBefore = requests.reduce(into: [0]) { $0.append($0.last! + $1.events.count) }
        var checked = 0
        var failures: [Kind: Int] = [:]
        for point in 0...operations.count {
            let files = Self.model(operations[..<point], root: directory + "/log/")
            let acknowledged = eventsBefore[acknowledgedAt.filter { $0 <= point }.count]
            for (state, kind) in Self.states(files) {
                let records: [EventRecord]
                do {
                    records = try Self.recovered(state, options: options)
                } catch {
                    failures[kind, default: 0] += 1
                    Issue.record("crash after change \(point) of \(operations.count) (\(kind)): the log did not open: \(error)")
                    continue
                }
                #expect(
                    records.count >= acknowledged && records.count <= expected.count,
                    "crash after change \(point): \(records.count) records recovered, \(acknowledged) acknowledged")
                for (i, record) in records.enumerated() where i < expected.count {
                    #expect(
                        record.sequence == UInt64(i + 1) && record.stream == expected[i].0 && record.payload == expected[i].1,
                        "crash after change \(point): record \(i + 1) is not the one appended")
                }
                checked += 1
            }
        }
        print(
            "power loss (preallocation \(preallocation)): \(operations.count) recorded changes, \(checked) crash states recovered every "
                + "acknowledged record; did not open: \(failures.map { "\($0.key.rawValue) \($0.value)" }.sorted())")
        #expect(checked > operations.count)
    }

    /// As above, with observations (``Durability/observation``, a delay far longer than the test)
    /// between commands: every crash state holds every record up to the last command acknowledged
    /// (its sync carried the observations before it) and recovers to a prefix of what was appended.
    @Test(arguments: [0, 1024])
    func aPowerCutLosesAtMostTheObservationsAfterTheLastCommand(preallocation: Int) async throws {
        let directory = temporaryDirectory()
        let options = SegmentStoreOptions(
            segmentSize: 2048, checkpointEvery: 1500, preallocation: preallocation,
            observationCommitDelay: .seconds(600))
        let (requests, operations, acknowledgedAt) = try await Self.workload(
            directory: directory + "/log", options: options, observations: true)
        let expected = requests.flatMap { request in request.events.map { (request.stream, $0.payload) } }
        let eventsBefore = requests.reduce(into: [0]) { $0.append($0.last! + $1.events.count) }
        var checked = 0, lostObservations = 0
        for point in 0...operations.count {
            let files = Self.model(operations[..<point], root: directory + "/log/")
            let answered = acknowledgedAt.filter { $0 <= point }.count
            let lastCommand = requests[..<answered].lastIndex { $0.needsDurability }
            let durable = lastCommand.map { eventsBefore[$0 + 1] } ?? 0
            for (state, kind) in Self.states(files, coalescing: true) {
                let records: [EventRecord]
                do {
                    records = try Self.recovered(state, options: options)
                } catch {
                    Issue.record("crash after change \(point) of \(operations.count) (\(kind)): the log did not open: \(error)")
                    continue
                }
                #expect(
                    records.count >= durable && records.count <= expected.count,
                    "crash after change \(point): \(records.count) records recovered, \(durable) acknowledged durable")
                for (i, record) in records.enumerated() where i < expected.count {
                    #expect(
                        record.sequence == UInt64(i + 1) && record.stream == expected[i].0 && record.payload == expected[i].1,
                        "crash after change \(point): record \(i + 1) is not the one appended")
                }
                if records.count < eventsBefore[answered] { lostObservations += 1 }
                checked += 1
            }
        }
        print(
            "power loss with observations (preallocation \(preallocation)): \(operations.count) recorded changes, \(checked) crash states "
                + "kept every record up to the last command; \(lostObservations) lost acknowledged observations after it")
        #expect(checked > operations.count)
        #expect(lostObservations > 0, "the model lets a power cut take unsynced observations")
    }
}
