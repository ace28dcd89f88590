#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How a scan over a segment's frames ended.
enum ScanEnd: Equatable {
    /// Clean end of file at this offset.
    case end(offset: Int)
    /// The caller's body asked to stop; `offset` is where the next frame starts.
    case stopped(offset: Int)
    /// The file ends inside a frame that starts at `offset`.
    case incomplete(offset: Int)
    /// The frame at `offset` is not sound.
    case damaged(offset: Int, reason: String)
}

/// Reads a segment file's frames in large chunks, handing out borrowed record views.
final class SegmentCursor {
    let path: String
    private let fd: Int32
    private var buffer: UnsafeMutableRawBufferPointer
    /// File offset of buffer[0] and the number of valid bytes in the buffer.
    private var bufferStart = 0
    private var bufferCount = 0
    private var fileExhausted = false

    init(path: String, chunkSize: Int = 1 << 20) throws {
        self.path = path
        fd = try FileIO.openFile(path, flags: O_RDONLY)
        buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize, alignment: 16)
    }

    deinit {
        buffer.deallocate()
        close(fd)
    }

    /// Makes sure the buffer holds `count` bytes starting at file offset `offset`, if the file has them.
    /// Returns the number of bytes available from `offset` (may be less than `count` at end of file).
    private func fill(from offset: Int, count: Int) throws -> Int {
        let have = bufferStart + bufferCount - offset
        if offset >= bufferStart && have >= count { return have }
        if offset >= bufferStart && fileExhausted && have >= 0 { return have }
        if count > buffer.count {
            let bigger = UnsafeMutableRawBufferPointer.allocate(byteCount: max(count, buffer.count * 2), alignment: 16)
            buffer.deallocate()
            buffer = bigger
            bufferCount = 0
        }
        // Keep the bytes we already have from `offset` on, then read behind them.
        var kept = 0
        if offset >= bufferStart && have > 0 && bufferCount > 0 {
            kept = have
            let from = offset - bufferStart
            if from > 0 { buffer.baseAddress!.copyMemory(from: buffer.baseAddress! + from, byteCount: kept) }
        }
        bufferStart = offset
        let target = UnsafeMutableRawBufferPointer(rebasing: buffer[kept...])
        let n = try FileIO.read(fd: fd, path: path, into: target, at: offset + kept)
        bufferCount = kept + n
        fileExhausted = n < target.count
        return bufferCount
    }

    /// Calls `body` with each sound frame from `offset` on, until the file ends, a frame is bad, or
    /// `body` returns false.
    func scan(from offset: Int, _ body: (RecordView, _ offset: Int, _ frameLength: Int) throws -> Bool) throws -> ScanEnd {
        var position = offset
        fileExhausted = false
        bufferCount = 0
        bufferStart = offset
        while true {
            let headerAvailable = try fill(from: position, count: RecordFormat.frameHeaderSize)
            if headerAvailable == 0 { return .end(offset: position) }
            if headerAvailable < RecordFormat.frameHeaderSize { return .incomplete(offset: position) }
            let local = position - bufferStart
            let raw = UnsafeRawBufferPointer(buffer)
            let length = raw.loadUnaligned(fromByteOffset: local, as: UInt32.self).littleEndian
            let frameLength = RecordFormat.frameHeaderSize + Int(length)
            if RecordFormat.writeIndex(length: length, check: raw.loadUnaligned(fromByteOffset: local + 4, as: UInt32.self).littleEndian)
                != nil,
                Int(length) <= RecordFormat.maxBodySize
            {
                let available = try fill(from: position, count: frameLength)
                if available < frameLength { return .incomplete(offset: position) }
            }
            let view = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(buffer)[(position - bufferStart)..<bufferCount])
            switch RecordFormat.checkFrame(view, at: 0) {
            case .incomplete:
                return .incomplete(offset: position)
            case let .damaged(reason):
                return .damaged(offset: position, reason: reason)
            case let .valid(bodyLength, _):
                let bodyBuffer = UnsafeRawBufferPointer(
                    rebasing: view[RecordFormat.frameHeaderSize..<(RecordFormat.frameHeaderSize + bodyLength)])
                let record = RecordView(body: bodyBuffer)!
                let keepGoing = try body(record, position, frameLength)
                position += frameLength
                if !keepGoing { return .stopped(offset: position) }
            }
        }
    }

    /// True if every byte from `offset` to the end of the file is zero (a file extended by a crash
    /// before its data reached the disk).
    func onlyZeros(from offset: Int) throws -> Bool {
        var position = offset
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = try chunk.withUnsafeMutableBytes { try FileIO.read(fd: fd, path: path, into: $0, at: position) }
            if n == 0 { return true }
            for i in 0..<n where chunk[i] != 0 { return false }
            position += n
        }
    }

    /// The unit a disk writes whole: the torn-write rules look for blocks of this size, aligned in
    /// the file, that hold only zeros.
    static let blockSize = 512

    /// Why the frame at `offset` (which failed its checks) reads as a write that did not finish, or
    /// nil when it reads as damage: its last 8 bytes and everything after them are zeros (the file's
    /// data ends before the frame does), it overlaps an aligned block of zeros (a block of the
    /// write never reached the disk), or its start is zeros up to the next block boundary (the
    /// write's first block never reached the disk while later ones did). Without a sound header only
    /// the header itself is looked at.
    func unwrittenPart(ofFrameAt offset: Int) throws -> String? {
        var header = [UInt8](repeating: 0, count: RecordFormat.frameHeaderSize)
        let n = try header.withUnsafeMutableBytes { try FileIO.read(fd: fd, path: path, into: $0, at: offset) }
        var end = offset + n
        if n == header.count {
            let length = header.withUnsafeBytes { $0.loadUnaligned(as: UInt32.self).littleEndian }
            let check = header.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 4, as: UInt32.self).littleEndian }
            if RecordFormat.writeIndex(length: length, check: check) != nil, Int(length) <= RecordFormat.maxBodySize {
                end = offset + RecordFormat.frameHeaderSize + Int(length)
                if try onlyZeros(from: end - 8) { return "record cut short (its end and all after it are zeros)" }
            }
        }
        let block = Self.blockSize
        // The write's first block never reached the disk while later ones did (a disk may write a
        // request's blocks in any order): that block kept only the records before the frame, and the
        // frame's start up to the block's end is zeros. A real frame never starts with a zero length.
        let boundary = (offset / block + 1) * block
        if boundary - offset >= 4 {
            var start = [UInt8](repeating: 0, count: boundary - offset)
            let read = try start.withUnsafeMutableBytes { try FileIO.read(fd: fd, path: path, into: $0, at: offset) }
            if read == start.count, start.allSatisfy({ $0 == 0 }) {
                return
                    "the record's first \(read) bytes, up to the \(block)-byte block boundary at offset \(boundary), are zeros (the write's first block never reached the disk)"
            }
        }
        let fileSize = try FileIO.size(fd: fd, path: path)
        let first = offset / block * block, last = min((end + block - 1) / block * block, fileSize)
        guard last > first else { return nil }
        var bytes = [UInt8](repeating: 0, count: last - first)
        let read = try bytes.withUnsafeMutableBytes { try FileIO.read(fd: fd, path: path, into: $0, at: first) }
        var start = 0
        while start + block <= read {
            if bytes[start..<(start + block)].allSatisfy({ $0 == 0 }) {
                return
                    "a \(block)-byte block of zeros at offset \(first + start) inside the record (part of the write never reached the disk)"
            }
            start += block
        }
        return nil
    }

    /// The first sound frame that starts anywhere in (offset, end of file), if any: used to tell a
    /// torn tail (nothing sound after the bad spot) from damage in the middle of the log. With it,
    /// whether it and every sound frame after it are records of a sync group that began at or before
    /// sequence `groupBeganBy` (``RecordFormat`` frames carry their place in their sync group): the
    /// rest of the group the bad spot is in, never synced, rather than records after damage.
    func soundFrameExists(
        after offset: Int, minimumSequence: UInt64, groupBeganBy: UInt64 = 0
    )
        throws -> (offset: Int, sequence: UInt64, restOfUnsyncedGroup: Bool)?
    {
        let fileSize = try FileIO.size(fd: fd, path: path)
        guard fileSize > offset + 1 else { return nil }
        let bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: fileSize - offset, alignment: 16)
        defer { bytes.deallocate() }
        let n = try FileIO.read(fd: fd, path: path, into: bytes, at: offset)
        let raw = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(bytes)[0..<n])
        var i = 1
        while i + RecordFormat.frameHeaderSize <= n {
            if let found = Self.soundRecord(raw, at: i), found.view.sequence >= minimumSequence {
                return (offset + i, found.view.sequence, Self.restOfUnsyncedGroup(raw, from: i, groupBeganBy: groupBeganBy))
            }
            i += 1
        }
        return nil
    }

    /// The record of the sound frame at `i` of `raw`, its place in its sync group and its frame's
    /// length; nil when no sound frame starts there.
    static func soundRecord(_ raw: UnsafeRawBufferPointer, at i: Int) -> (view: RecordView, place: UInt32, length: Int)? {
        let length = raw.loadUnaligned(fromByteOffset: i, as: UInt32.self)
        guard length != 0,
            RecordFormat.writeIndex(length: length, check: raw.loadUnaligned(fromByteOffset: i + 4, as: UInt32.self)) != nil,
            case let .valid(bodyLength, place) = RecordFormat.checkFrame(raw, at: i),
            let view = RecordView(body: UnsafeRawBufferPointer(rebasing: raw[(i + 12)..<(i + 12 + bodyLength)]))
        else { return nil }
        return (view, place, RecordFormat.frameHeaderSize + bodyLength)
    }

    /// Whether every sound frame from `start` of `raw` on (the first one starts there) is a record
    /// of a sync group that began at or before sequence `bound` (its sequence minus its place in
    /// its group), in rising sequence order. The bytes between and after them that are not sound
    /// frames are passed over: blocks of that same never-synced group that did not reach the disk
    /// (a power cut may keep any of a group's blocks). A record of a later group (written only
    /// after `bound`'s group was synced) makes it false.
    static func restOfUnsyncedGroup(_ raw: UnsafeRawBufferPointer, from start: Int, groupBeganBy bound: UInt64) -> Bool {
        var i = start
        var previous: UInt64? = nil
        while i + RecordFormat.frameHeaderSize <= raw.count {
            guard let (view, place, length) = soundRecord(raw, at: i) else {
                i += 1
                continue
            }
            guard view.sequence >= UInt64(place), view.sequence - UInt64(place) <= bound,
                previous.map({ view.sequence > $0 }) ?? true
            else { return false }
            previous = view.sequence
            i += length
        }
        return true
    }
}
