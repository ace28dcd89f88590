#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What opening the log rebuilds by a scan, as it stood at one committed record: the file
/// `recovery.ckpt` in the log's directory, so that opening reads only the records after it.
///
/// It is bound to the log like a snapshot: it is used only when the log agrees (every segment it
/// names is there with its header, none has shrunk, the older ones have exactly the size it
/// recorded, and the frame that ends at its end offset is sound and holds its sequence and chain
/// hash). Anything else (missing, damaged, stale, from another log) makes opening scan every
/// record as before, with one line saying why. It is written after the records it covers are
/// synced (every ``SegmentStoreOptions/checkpointEvery`` bytes and at a clean close), atomically.
///
/// Layout (little-endian): magic `HUBRCK01`; u64 sequence; its 32-byte chain hash; u64 offset of
/// that record's frame; u32 segment count, then per segment u64 first sequence and u64 end offset
/// (the newest: the end of the record at the sequence); u32 stream count, then per stream u16
/// name length, the name, u64 version; u32 seek-index count, then per entry u64 sequence, u32
/// segment position, u64 offset; and a CRC32C of everything before it.
struct RecoveryCheckpoint: Equatable {
    static let fileName = "recovery.ckpt"
    static let magic: [UInt8] = Array("HUBRCK01".utf8)

    struct SegmentEnd: Equatable { var firstSequence: UInt64; var end: Int }

    /// The last record covered, its chain hash and where its frame starts (in the newest segment).
    var sequence: UInt64
    var hash: [UInt8]
    var recordOffset: Int
    /// Every segment through the one holding `sequence`, with where its sound records end.
    var segments: [SegmentEnd]
    var streams: [String: UInt64]
    var index: [SegmentStore.IndexEntry]

    static func == (a: Self, b: Self) -> Bool {
        a.sequence == b.sequence && a.hash == b.hash && a.recordOffset == b.recordOffset && a.segments == b.segments
            && a.streams == b.streams
            && a.index.map { [$0.sequence, UInt64($0.segment), UInt64($0.offset)] }
                == b.index.map { [$0.sequence, UInt64($0.segment), UInt64($0.offset)] }
    }

    // MARK: Codec

    func encoded() -> [UInt8] {
        var out = Self.magic
        out.reserveCapacity(128 + streams.count * 48 + index.count * 20)
        RecordFormat.appendLE(&out, sequence)
        out += hash
        RecordFormat.appendLE(&out, UInt64(recordOffset))
        RecordFormat.appendLE(&out, UInt32(segments.count))
        for segment in segments {
            RecordFormat.appendLE(&out, segment.firstSequence)
            RecordFormat.appendLE(&out, UInt64(segment.end))
        }
        RecordFormat.appendLE(&out, UInt32(streams.count))
        for (name, version) in streams.sorted(by: { $0.key < $1.key }) {
            let bytes = Array(name.utf8)
            RecordFormat.appendLE(&out, UInt16(bytes.count))
            out += bytes
            RecordFormat.appendLE(&out, version)
        }
        RecordFormat.appendLE(&out, UInt32(index.count))
        for entry in index {
            RecordFormat.appendLE(&out, entry.sequence)
            RecordFormat.appendLE(&out, UInt32(entry.segment))
            RecordFormat.appendLE(&out, UInt64(entry.offset))
        }
        let crc = out.withUnsafeBytes { CRC32C.checksum($0) }
        RecordFormat.appendLE(&out, crc)
        return out
    }

    /// Decodes a checkpoint file's bytes; throws a sentence saying what is wrong.
    static func decode(_ bytes: [UInt8]) throws(CheckpointProblem) -> RecoveryCheckpoint {
        guard bytes.count >= magic.count + 4, Array(bytes[0..<magic.count]) == magic else {
            throw CheckpointProblem("not a recovery checkpoint (bad magic or cut short)")
        }
        let stored = bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: bytes.count - 4, as: UInt32.self).littleEndian }
        guard stored == bytes.withUnsafeBytes({ CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[0..<(bytes.count - 4)])) }) else {
            throw CheckpointProblem("checksum mismatch")
        }
        var reader = ByteReader(bytes: bytes, position: magic.count, end: bytes.count - 4)
        let sequence = try reader.u64(), hash = try reader.bytes(RecordFormat.hashSize), recordOffset = Int(try reader.u64())
        var segments: [SegmentEnd] = []
        for _ in 0..<(try reader.count(perItem: 16)) {
            segments.append(SegmentEnd(firstSequence: try reader.u64(), end: Int(try reader.u64())))
        }
        var streams: [String: UInt64] = [:]
        for _ in 0..<(try reader.count(perItem: 10)) {
            let name = String(decoding: try reader.bytes(Int(try reader.u16())), as: UTF8.self)
            streams[name] = try reader.u64()
        }
        var index: [SegmentStore.IndexEntry] = []
        for _ in 0..<(try reader.count(perItem: 20)) {
            index.append(SegmentStore.IndexEntry(sequence: try reader.u64(), segment: Int(try reader.u32()), offset: Int(try reader.u64())))
        }
        guard reader.position == reader.end else { throw CheckpointProblem("\(reader.end - reader.position) bytes left over") }
        guard sequence >= 1, !segments.isEmpty, segments[0].firstSequence == 1 else {
            throw CheckpointProblem("covers no record")
        }
        guard index.allSatisfy({ $0.segment < segments.count && $0.offset < segments[$0.segment].end }) else {
            throw CheckpointProblem("a seek-index entry points past its segment's end")
        }
        return RecoveryCheckpoint(
            sequence: sequence, hash: hash, recordOffset: recordOffset, segments: segments,
            streams: streams, index: index)
    }

    // MARK: Files

    /// What was found in a log directory.
    enum Loading {
        case found(RecoveryCheckpoint)
        case missing
        case damaged(String)
    }

    static func load(directory: String) -> Loading {
        let path = directory + "/" + fileName
        guard FileIO.exists(path) else { return .missing }
        do {
            return .found(try decode(try FileIO.readAll(path: path)))
        } catch let problem as CheckpointProblem {
            return .damaged(problem.reason)
        } catch {
            return .damaged("unreadable (\(error))")
        }
    }

    /// Writes the file atomically (a crash leaves the old one or the new one, both whole).
    func write(directory: String) throws {
        try FileIO.writeAtomically(encoded(), to: directory + "/" + Self.fileName, directory: directory)
    }

    // MARK: Binding to the log

    /// Why the log in `directory` (its segment files `names`, sorted) does not agree with this
    /// checkpoint; nil when it does.
    func mismatch(directory: String, names: [String]) throws -> String? {
        guard names.count >= segments.count else {
            return "it names \(segments.count) segments but the log has \(names.count)"
        }
        var previousFirst: UInt64 = 0
        for (position, segment) in segments.enumerated() {
            let name = names[position], path = directory + "/" + name
            guard segment.firstSequence > previousFirst, name == LogRecovery.segmentName(segment.firstSequence) else {
                return "segment \(name) is not the checkpoint's \(LogRecovery.segmentName(segment.firstSequence))"
            }
            previousFirst = segment.firstSequence
            if let problem = try LogRecovery.checkHeader(path: path, expectedFirst: segment.firstSequence) {
                return "segment \(name): \(problem)"
            }
            let size = try FileIO.size(path: path)
            let isNewest = position == segments.count - 1
            if size < segment.end || (!isNewest && size != segment.end) {
                return "segment \(name) has \(size) bytes where the checkpoint recorded \(segment.end)"
            }
        }
        return try recordMismatch(path: directory + "/" + names[segments.count - 1])
    }

    /// Whether the frame from ``recordOffset`` to the newest segment's end is sound and is the
    /// record at ``sequence`` with ``hash``.
    private func recordMismatch(path: String) throws -> String? {
        let end = segments[segments.count - 1].end
        guard recordOffset >= RecordFormat.segmentHeaderSize, end - recordOffset > RecordFormat.frameHeaderSize,
            end - recordOffset <= RecordFormat.frameHeaderSize + RecordFormat.maxBodySize
        else {
            return "its record offsets \(recordOffset)..<\(end) cannot hold a frame"
        }
        let fd = try FileIO.openFile(path, flags: O_RDONLY)
        defer { close(fd) }
        var frame = [UInt8](repeating: 0, count: end - recordOffset)
        let n = try frame.withUnsafeMutableBytes { try FileIO.read(fd: fd, path: path, into: $0, at: recordOffset) }
        return frame.withUnsafeBytes { raw -> String? in
            guard n == frame.count, case let .valid(bodyLength, _) = RecordFormat.checkFrame(raw, at: 0),
                RecordFormat.frameHeaderSize + bodyLength == frame.count,
                let view = RecordView(body: UnsafeRawBufferPointer(rebasing: raw[RecordFormat.frameHeaderSize...]))
            else {
                return "no sound record at offset \(recordOffset)"
            }
            guard view.sequence == sequence, view.hash == hash else {
                return "the record at offset \(recordOffset) is sequence \(view.sequence) with another chain hash, not sequence \(sequence)"
            }
            return nil
        }
    }
}

/// Why a checkpoint file cannot be read.
struct CheckpointProblem: Error {
    var reason: String
    init(_ reason: String) { self.reason = reason }
}

/// Bounds-checked little-endian reads over a byte array.
private struct ByteReader {
    let bytes: [UInt8]
    var position: Int
    let end: Int

    mutating func bytes(_ count: Int) throws(CheckpointProblem) -> [UInt8] {
        guard count >= 0, end - position >= count else { throw CheckpointProblem("cut short at byte \(position)") }
        defer { position += count }
        return Array(bytes[position..<(position + count)])
    }

    mutating func integer<T: FixedWidthInteger>(_: T.Type) throws(CheckpointProblem) -> T {
        let raw = try bytes(MemoryLayout<T>.size)
        return raw.withUnsafeBytes { T(littleEndian: $0.loadUnaligned(as: T.self)) }
    }

    mutating func u16() throws(CheckpointProblem) -> UInt16 { try integer(UInt16.self) }
    mutating func u32() throws(CheckpointProblem) -> UInt32 { try integer(UInt32.self) }
    mutating func u64() throws(CheckpointProblem) -> UInt64 { try integer(UInt64.self) }

    /// A u32 count of items of at least `perItem` bytes each, refused when the rest cannot hold them.
    mutating func count(perItem: Int) throws(CheckpointProblem) -> Int {
        let n = Int(try u32())
        guard n <= (end - position) / perItem else { throw CheckpointProblem("a count of \(n) does not fit the file") }
        return n
    }
}
