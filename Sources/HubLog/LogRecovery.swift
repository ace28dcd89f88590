#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Opening a log directory: scan the segments, check every frame read, rebuild the indexes, and cut
/// a torn tail into a quarantine file. Any other damage (a complete record that fails its checks
/// included, even the last one) is corruption and refuses the open. With a ``RecoveryCheckpoint``
/// the log agrees with, the scan starts after the checkpoint's record instead of at the first one.
enum LogRecovery {
    struct Opened {
        var report: RecoveryReport
        var lastSequence: UInt64 = 0
        var lastHash = RecordFormat.genesisHash
        var streams: [String: UInt64] = [:]
        /// The command-id index file the scan fills with the commands after ``commandsAfter``
        /// (nil: none, e.g. read-only).
        var commandSink: CommandIndexFile? = nil
        var commandsAfter: UInt64 = .max
        /// The chain hash of the record at ``commandsAfter`` (genesis for 0), to check the index is this log's.
        var hashAtCommandMark: [UInt8]? = nil
        /// The first error writing the command index during the scan.
        var commandIndexError: Error? = nil
        /// The commands the scan could not write into the index after ``commandIndexError`` (a
        /// full disk): kept in memory by the store until the next open indexes them again.
        var unindexedCommands: [String: AppendResult] = [:]
        var segments: [SegmentStore.Segment] = []
        var index: [SegmentStore.IndexEntry] = []
        /// End of the last sound record in the newest segment.
        var tailOffset = RecordFormat.segmentHeaderSize
        var lastCommand: (id: String, first: UInt64)? = nil
        /// Where the frame of the record at ``lastSequence`` starts (in the newest segment).
        var lastRecordOffset = 0
        /// Records and bytes the scan read (after the checkpoint, when one was used).
        var scannedRecords = 0
        var scannedBytes = 0
        /// Why no checkpoint was used, once the scan is done (nil when one was, or for a new log).
        var checkpointNote: String? = nil

        /// Takes the state a checkpoint recorded; `names` are the log's segment files.
        mutating func restore(_ checkpoint: RecoveryCheckpoint, directory: String, names: [String]) {
            lastSequence = checkpoint.sequence
            lastHash = checkpoint.hash
            streams = checkpoint.streams
            index = checkpoint.index
            segments = checkpoint.segments.enumerated().map { position, segment in
                SegmentStore.Segment(firstSequence: segment.firstSequence, path: directory + "/" + names[position], name: names[position])
            }
            tailOffset = checkpoint.segments[checkpoint.segments.count - 1].end
            lastRecordOffset = checkpoint.recordOffset
            report.checkpointSequence = checkpoint.sequence
            if commandsAfter == checkpoint.sequence { hashAtCommandMark = checkpoint.hash }
        }

        /// Takes one record into the indexes; returns why it does not fit, or nil.
        mutating func absorb(_ view: RecordView, offset: Int, length: Int, segmentIndex: Int) -> String? {
            let expected = lastSequence + 1
            guard view.sequence == expected else { return "sequence \(view.sequence) where \(expected) was expected" }
            let stream = view.stream
            let expectedVersion = streams[stream].map { $0 + 1 } ?? 0
            guard view.streamVersion == expectedVersion else {
                return "stream \(stream) version \(view.streamVersion) where \(expectedVersion) was expected"
            }
            streams[stream] = view.streamVersion
            if view.sequence % SegmentStore.indexStride == 1 {
                index.append(SegmentStore.IndexEntry(sequence: view.sequence, segment: segmentIndex, offset: offset))
            }
            indexCommand(view)
            lastSequence = view.sequence
            lastHash = view.hash
            lastRecordOffset = offset
            tailOffset = offset + length
            scannedRecords += 1
            scannedBytes += length
            return nil
        }

        /// Fills the command index with the record's command (when it is after ``commandsAfter``)
        /// and notes the chain hash at the index's mark.
        mutating func indexCommand(_ view: RecordView) {
            if view.sequence == commandsAfter { hashAtCommandMark = view.hash }
            if let id = view.commandId {
                let first = (lastCommand?.id == id) ? lastCommand!.first : view.sequence
                if view.sequence > commandsAfter, let sink = commandSink {
                    if commandIndexError == nil {
                        do { try sink.upsert(id, first: first, last: view.sequence) } catch { commandIndexError = error }
                    }
                    if commandIndexError != nil {
                        unindexedCommands[id] = AppendResult(
                            firstSequence: first, lastSequence: view.sequence,
                            streamVersion: view.streamVersion, duplicate: false)
                    }
                }
                lastCommand = (id, first)
            } else {
                lastCommand = nil
            }
        }
    }

    static func segmentName(_ firstSequence: UInt64) -> String {
        let digits = String(firstSequence)
        return String(repeating: "0", count: max(0, 20 - digits.count)) + digits + ".seg"
    }

    static func segmentFiles(in directory: String) throws -> [String] {
        try FileIO.listDirectory(directory).filter { $0.hasSuffix(".seg") }
    }

    /// `repair == false` (read-only) leaves a torn tail in place and stops reading before it.
    /// `commands`: the command-id index to fill with every command after `commandsAfter` (its mark).
    static func open(
        directory: String, repair: Bool = true, commands: CommandIndexFile? = nil,
        commandsAfter: UInt64 = .max
    ) throws -> Opened {
        var opened = Opened(report: RecoveryReport(segments: 0, records: 0, truncatedTail: nil))
        opened.commandSink = commands
        opened.commandsAfter = commandsAfter
        if commandsAfter == 0 { opened.hashAtCommandMark = RecordFormat.genesisHash }
        var names = try segmentFiles(in: directory)
        if names.isEmpty {
            guard repair else { throw EventLogError.noLog("no event log in \(directory)") }
            let name = segmentName(1)
            try createSegment(directory: directory, name: name, firstSequence: 1)
            names = [name]
        }
        // Where the scan starts: after a checkpoint the log agrees with, else at the first record.
        var resume: (position: Int, offset: Int)? = nil
        switch checkpoint(directory: directory, names: names) {
        case .use(let checkpoint):
            opened.restore(checkpoint, directory: directory, names: names)
            resume = (checkpoint.segments.count - 1, opened.tailOffset)
            if commands != nil && commandsAfter < checkpoint.sequence { try catchUpCommands(&opened) }
        case .scan(let why):
            opened.checkpointNote = why.map { "the recovery checkpoint \(RecoveryCheckpoint.fileName) \($0)" }
        }
        for (position, name) in names.enumerated() {
            if let resume, position < resume.position { continue }
            let path = directory + "/" + name
            let isLast = position == names.count - 1
            let expectedFirst = opened.lastSequence + 1
            let headerProblem = resume?.position == position ? nil : try checkHeader(path: path, expectedFirst: expectedFirst)
            if let headerProblem {
                // A crash while creating the newest segment can leave its header short: rewrite it.
                if isLast, headerProblem == .short, !repair {
                    opened.segments.append(SegmentStore.Segment(firstSequence: expectedFirst, path: path, name: name))
                    break
                } else if isLast, headerProblem == .short {
                    // Keep whatever part of the header was written before rewriting it.
                    let bytes = try FileIO.readTail(path: path, from: 0)
                    let kept = bytes.isEmpty ? nil : try quarantine(bytes, directory: directory, segment: name, offset: 0)
                    try createSegment(directory: directory, name: name, firstSequence: expectedFirst, replace: true)
                    opened.report.truncatedTail = (name, 0, bytes.count)
                    opened.report.quarantine = kept
                } else {
                    throw EventLogError.corrupt(
                        segment: name, offset: 0, sequence: expectedFirst,
                        reason: headerProblem.description)
                }
            }
            var from = RecordFormat.segmentHeaderSize
            if let resume, resume.position == position {
                from = resume.offset
            } else {
                opened.segments.append(SegmentStore.Segment(firstSequence: expectedFirst, path: path, name: name))
            }
            let segmentIndex = opened.segments.count - 1
            let cursor = try SegmentCursor(path: path)
            var problem: String? = nil
            opened.tailOffset = from
            let ended = try cursor.scan(from: from) { view, offset, length in
                problem = opened.absorb(view, offset: offset, length: length, segmentIndex: segmentIndex)
                return problem == nil
            }
            switch ended {
            case .end:
                break
            case .stopped(let next):
                // The body refused a record: find the offset of that record (the frame before `next`).
                throw EventLogError.corrupt(
                    segment: name, offset: UInt64(try frameStart(before: next, path: path)),
                    sequence: opened.lastSequence + 1, reason: problem ?? "invalid record")
            case .incomplete, .damaged:
                guard let tail = try classifyTail(ended, cursor: cursor, isLast: isLast, nextSequence: opened.lastSequence + 1) else {
                    break
                }
                switch tail {
                case .corrupt(let offset, let reason):
                    throw EventLogError.corrupt(segment: name, offset: UInt64(offset), sequence: opened.lastSequence + 1, reason: reason)
                case .torn(let offset, _):
                    guard repair else { break }
                    // Nothing is deleted: the cut bytes go to a quarantine file (synced) before the cut
                    // (without the unused zeros of a preallocated segment after them).
                    let bytes = withoutUnusedEnd(try FileIO.readTail(path: path, from: offset), at: offset)
                    let kept = try quarantine(bytes, directory: directory, segment: name, offset: offset)
                    let fd = try FileIO.openFile(path, flags: O_WRONLY)
                    defer { close(fd) }
                    try FileIO.truncate(fd: fd, path: path, to: offset)
                    try FileIO.dataSync(fd: fd, path: path)
                    opened.report.truncatedTail = (name, offset, bytes.count)
                    opened.report.quarantine = kept
                }
            }
        }
        opened.report.segments = opened.segments.count
        opened.report.records = opened.lastSequence
        opened.report.scannedRecords = opened.scannedRecords
        if resume == nil, opened.lastSequence > 0 {
            let why = opened.checkpointNote ?? "there was no recovery checkpoint (\(RecoveryCheckpoint.fileName))"
            opened.checkpointNote = why + ": opening scanned all \(opened.lastSequence) records"
        } else {
            opened.checkpointNote = nil
        }
        return opened
    }

    /// Whether opening may start after the checkpoint in `directory`.
    enum CheckpointUse {
        case use(RecoveryCheckpoint)
        /// Scan every record; why, when there is a checkpoint that cannot be used.
        case scan(String?)
    }

    static func checkpoint(directory: String, names: [String]) -> CheckpointUse {
        switch RecoveryCheckpoint.load(directory: directory) {
        case .missing:
            return .scan(nil)
        case .damaged(let why):
            return .scan("was damaged (\(why))")
        case .found(let checkpoint):
            do {
                if let why = try checkpoint.mismatch(directory: directory, names: names) {
                    return .scan("did not match the log (\(why))")
                }
            } catch {
                return .scan("could not be checked against the log (\(error))")
            }
            return .use(checkpoint)
        }
    }

    /// The command index's mark is before the checkpoint (a crash between their checkpoints, or an
    /// index made afresh): reads the records from the mark through the checkpoint's, seeking by the
    /// checkpoint's index, to index their commands and find the chain hash at the mark.
    static func catchUpCommands(_ opened: inout Opened) throws {
        let through = opened.lastSequence, start = max(opened.commandsAfter, 1)
        if opened.commandsAfter == 0 { opened.hashAtCommandMark = RecordFormat.genesisHash }
        var position = 0, offset = RecordFormat.segmentHeaderSize
        if let entry = SegmentStore.seekEntry(opened.index, for: start) {
            (position, offset) = (entry.segment, entry.offset)
        }
        var done = false
        while !done && position < opened.segments.count {
            let segment = opened.segments[position]
            let cursor = try SegmentCursor(path: segment.path)
            let ended = try cursor.scan(from: offset) { view, _, _ in
                guard view.sequence >= start else { return true }
                opened.indexCommand(view)
                opened.scannedRecords += 1
                done = view.sequence >= through
                return !done
            }
            if !done, case .incomplete(let at) = ended {
                throw EventLogError.corrupt(
                    segment: segment.name, offset: UInt64(at), sequence: nil, reason: "record cut short before the recovery checkpoint")
            }
            if !done, case .damaged(let at, let why) = ended {
                throw EventLogError.corrupt(segment: segment.name, offset: UInt64(at), sequence: nil, reason: why)
            }
            position += 1
            offset = RecordFormat.segmentHeaderSize
        }
    }

    /// What the bytes after the last sound frame of a segment are. `open` and ``LogVerifier`` both
    /// decide with this, so they never disagree.
    ///
    /// Nothing but zeros after the last sound frame of the newest segment is no tail at all: the
    /// unused end of a preallocated segment (``SegmentStoreOptions/preallocation``), or a file that
    /// grew before a crash while its data never reached the disk. The records end there.
    enum Tail: Equatable {
        /// A write cut short by a crash, with nothing sound after it, at the end of the newest
        /// segment: a frame that ends before its declared length (the file ends, or its last bytes
        /// and everything after are zeros), a frame with a 512-byte block of zeros in it (a block
        /// of the write that never reached the disk, or that the write never got to), or a frame
        /// whose start, up to the next 512-byte boundary (at least its length field), is zeros (the
        /// write's first block never reached the disk while later ones did). Sound records may
        /// follow it only when they are the rest of its own sync group (their frames' place in
        /// their group says it began at or before the torn spot): writes never synced. Never an
        /// acknowledged record; opening cuts it into quarantine.
        case torn(offset: Int, reason: String)
        /// Damage: a complete frame that fails its checks, anything bad before the newest segment's
        /// end, or a bad spot with sound records of a later sync group after it. Opening refuses;
        /// nothing is changed.
        case corrupt(offset: Int, reason: String)
    }

    /// Classifies how a scan of a segment ended; nil when it ended cleanly.
    static func classifyTail(_ ended: ScanEnd, cursor: SegmentCursor, isLast: Bool, nextSequence: UInt64) throws -> Tail? {
        let offset: Int, reason: String, torn: Bool
        switch ended {
        case .end, .stopped:
            return nil
        case .incomplete(let at):
            (offset, reason, torn) = (at, "record cut short", true)
        case .damaged(let at, let why):
            if try cursor.onlyZeros(from: at) {
                guard !isLast else { return nil }
                (offset, reason, torn) = (at, "zero-filled tail", true)
            } else if let unwritten = try cursor.unwrittenPart(ofFrameAt: at) {
                (offset, reason, torn) = (at, unwritten, true)
            } else {
                (offset, reason, torn) = (at, why, false)
            }
        }
        guard isLast else { return .corrupt(offset: offset, reason: reason + " in a segment that is not the last") }
        if let sound = try cursor.soundFrameExists(after: offset, minimumSequence: nextSequence, groupBeganBy: nextSequence) {
            // The sound records after a torn spot that belong to the same sync group as it (their
            // frames say where their group began) were never synced, so never acknowledged as
            // durable: the rest of writes whose sync never came. A record of a later group is
            // written only after the torn spot's group was synced: then this is damage.
            guard torn, sound.restOfUnsyncedGroup else {
                return .corrupt(
                    offset: offset, reason: reason + "; sound records follow it (sequence \(sound.sequence) at offset \(sound.offset))")
            }
            return .torn(
                offset: offset,
                reason: reason
                    + "; the records after it (from sequence \(sound.sequence) at offset \(sound.offset)) are of the same sync group, never synced"
            )
        }
        guard torn else {
            return .corrupt(
                offset: offset, reason: reason + " in the last record (the frame is complete, so this is damage, not a torn write)")
        }
        return .torn(offset: offset, reason: reason)
    }

    /// `bytes` (read from file offset `offset` to the end of the file) without the whole 512-byte
    /// blocks of zeros at their end: the unused part of a preallocated segment, not a write's bytes.
    static func withoutUnusedEnd(_ bytes: [UInt8], at offset: Int) -> [UInt8] {
        let block = SegmentCursor.blockSize
        let written = (bytes.lastIndex { $0 != 0 }).map { $0 + 1 } ?? 0
        let keepEnd = (offset + written + block - 1) / block * block - offset
        guard bytes.count - keepEnd >= block else { return bytes }
        return Array(bytes[0..<keepEnd])
    }

    /// Writes bytes about to be cut from `segment` at `offset` to `quarantine-<segment>-<offset>.bin`
    /// in the log's directory (atomically and synced), and returns that file's name. An existing file
    /// with other bytes is never overwritten: the name gets a `-2`, `-3`... suffix.
    static func quarantine(_ bytes: [UInt8], directory: String, segment: String, offset: Int) throws -> String {
        let base = "quarantine-" + segment.replacingSuffix(".seg", with: "") + "-\(offset)"
        var name = base + ".bin", n = 1
        while FileIO.exists(directory + "/" + name) {
            if (try? FileIO.readAll(path: directory + "/" + name)) == bytes { return name }
            n += 1
            name = base + "-\(n).bin"
        }
        try FileIO.writeAtomically(bytes, to: directory + "/" + name, directory: directory)
        return name
    }

    /// The offset of the frame that ends at `end` (found by walking the segment from its start).
    static func frameStart(before end: Int, path: String) throws -> Int {
        let cursor = try SegmentCursor(path: path)
        var start = RecordFormat.segmentHeaderSize
        _ = try cursor.scan(from: RecordFormat.segmentHeaderSize) { _, offset, length in
            if offset + length >= end { start = offset; return false }
            return true
        }
        return start
    }

    enum HeaderProblem: Equatable, CustomStringConvertible {
        case short, badMagic, wrongFirst(UInt64, expected: UInt64)
        var description: String {
            switch self {
            case .short: return "segment header cut short"
            case .badMagic: return "not a hub log segment (bad magic)"
            case let .wrongFirst(first, expected):
                return "segment starts at sequence \(first) where \(expected) was expected (a segment is missing or misplaced)"
            }
        }
    }

    static func checkHeader(path: String, expectedFirst: UInt64) throws -> HeaderProblem? {
        let fd = try FileIO.openFile(path, flags: O_RDONLY)
        defer { close(fd) }
        var header = [UInt8](repeating: 0, count: RecordFormat.segmentHeaderSize)
        let n = try header.withUnsafeMutableBytes { try FileIO.read(fd: fd, path: path, into: $0, at: 0) }
        guard n == RecordFormat.segmentHeaderSize else { return .short }
        guard Array(header[0..<8]) == RecordFormat.segmentMagic || Array(header[0..<8]) == RecordFormat.segmentMagicV1 else {
            return .badMagic
        }
        let first = header.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self).littleEndian }
        return first == expectedFirst ? nil : .wrongFirst(first, expected: expectedFirst)
    }

    static func createSegment(directory: String, name: String, firstSequence: UInt64, replace: Bool = false) throws {
        let path = directory + "/" + name
        let fd = try FileIO.openFile(path, flags: O_WRONLY | O_CREAT | (replace ? O_TRUNC : O_EXCL))
        defer { close(fd) }
        try RecordFormat.segmentHeader(firstSequence: firstSequence).withUnsafeBytes {
            try FileIO.writeAll(fd: fd, path: path, $0)
        }
        try FileIO.dataSync(fd: fd, path: path)
        try FileIO.syncDirectory(directory)
    }
}
