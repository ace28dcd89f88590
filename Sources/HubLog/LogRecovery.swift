#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Opening a log directory: scan every segment, check every frame, rebuild the indexes, and cut a
/// torn tail. Damage anywhere but the tail is corruption and refuses the open.
enum LogRecovery {
    struct Opened {
        var report: RecoveryReport
        var lastSequence: UInt64 = 0
        var lastHash = RecordFormat.genesisHash
        var streams: [String: UInt64] = [:]
        var commandResults: [String: AppendResult] = [:]
        var segments: [SegmentStore.Segment] = []
        var index: [SegmentStore.IndexEntry] = []
        /// End of the last sound record in the newest segment.
        var tailOffset = RecordFormat.segmentHeaderSize
        var lastCommand: (id: String, first: UInt64)? = nil

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
            if let id = view.commandId {
                let first = (lastCommand?.id == id) ? lastCommand!.first : view.sequence
                commandResults[id] = AppendResult(firstSequence: first, lastSequence: view.sequence,
                                                  streamVersion: view.streamVersion, duplicate: false)
                lastCommand = (id, first)
            } else {
                lastCommand = nil
            }
            lastSequence = view.sequence
            lastHash = view.hash
            tailOffset = offset + length
            return nil
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
    static func open(directory: String, repair: Bool = true) throws -> Opened {
        var opened = Opened(report: RecoveryReport(segments: 0, records: 0, truncatedTail: nil))
        var names = try segmentFiles(in: directory)
        if names.isEmpty {
            guard repair else { throw EventLogError.invalid("no event log in \(directory)") }
            let name = segmentName(1)
            try createSegment(directory: directory, name: name, firstSequence: 1)
            names = [name]
        }
        for (position, name) in names.enumerated() {
            let path = directory + "/" + name
            let isLast = position == names.count - 1
            let expectedFirst = opened.lastSequence + 1
            let headerProblem = try checkHeader(path: path, expectedFirst: expectedFirst)
            if let headerProblem {
                // A crash while creating the newest segment can leave its header short: rewrite it.
                if isLast, headerProblem == .short, !repair {
                    opened.segments.append(SegmentStore.Segment(firstSequence: expectedFirst, path: path, name: name))
                    break
                } else if isLast, headerProblem == .short {
                    try createSegment(directory: directory, name: name, firstSequence: expectedFirst, replace: true)
                    opened.report.truncatedTail = (name, 0, 0)
                } else {
                    throw EventLogError.corrupt(segment: name, offset: 0, sequence: expectedFirst,
                                                reason: headerProblem.description)
                }
            }
            opened.segments.append(SegmentStore.Segment(firstSequence: expectedFirst, path: path, name: name))
            let segmentIndex = opened.segments.count - 1
            let cursor = try SegmentCursor(path: path)
            var problem: String? = nil
            opened.tailOffset = RecordFormat.segmentHeaderSize
            let ended = try cursor.scan(from: RecordFormat.segmentHeaderSize) { view, offset, length in
                problem = opened.absorb(view, offset: offset, length: length, segmentIndex: segmentIndex)
                return problem == nil
            }
            switch ended {
            case .end:
                break
            case .stopped(let next):
                // The body refused a record: find the offset of that record (the frame before `next`).
                throw EventLogError.corrupt(segment: name, offset: UInt64(try frameStart(before: next, path: path)),
                                            sequence: opened.lastSequence + 1, reason: problem ?? "invalid record")
            case .incomplete(let offset), .damaged(let offset, _):
                let reason: String
                if case .damaged(_, let why) = ended { reason = why } else { reason = "record cut short" }
                guard isLast else {
                    throw EventLogError.corrupt(segment: name, offset: UInt64(offset), sequence: opened.lastSequence + 1,
                                                reason: reason + " in a segment that is not the last")
                }
                if let sound = try cursor.soundFrameExists(after: offset, minimumSequence: opened.lastSequence + 1) {
                    throw EventLogError.corrupt(segment: name, offset: UInt64(offset), sequence: opened.lastSequence + 1,
                                                reason: reason + "; sound records follow it (sequence \(sound.sequence) at offset \(sound.offset))")
                }
                guard repair else { break }
                let fd = try FileIO.openFile(path, flags: O_WRONLY)
                defer { close(fd) }
                let size = try FileIO.size(fd: fd, path: path)
                try FileIO.truncate(fd: fd, path: path, to: offset)
                try FileIO.dataSync(fd: fd, path: path)
                opened.report.truncatedTail = (name, offset, size - offset)
            }
        }
        opened.report.segments = opened.segments.count
        opened.report.records = opened.lastSequence
        return opened
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
        guard Array(header[0..<8]) == RecordFormat.segmentMagic else { return .badMagic }
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
