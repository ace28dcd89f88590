import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The copy, in memory that outlives the process (a file on tmpfs, `/dev/shm`), of the observation
/// frames the writer holds back from their segment until the next write moment (see
/// ``SegmentStoreOptions/observationCommitDelay``). A killed hub leaves it behind and the next open
/// puts its frames into the segment, so a killed process loses no held observation, as it lost none
/// when every frame went to the page cache at once; a power cut loses them (as it loses unsynced
/// pages). Not thread-safe: the writer thread only.
///
/// The file: `HUBHELD1`, the held frames' segment (its first sequence), the offset in it where they
/// go, the offset and chain hash of the record before them (the segment's header size and the
/// genesis hash when none), then the frames as they will be written.
final class StagedFrames {
    static let magic: [UInt8] = Array("HUBHELD1".utf8)
    static let headerSize = 8 + 8 + 8 + 8 + RecordFormat.hashSize

    let path: String
    private let fd: Int32
    /// Bytes of frames in the file after its header (0: no header either).
    private var frameBytes = 0

    private init(path: String, fd: Int32) {
        self.path = path
        self.fd = fd
    }

    deinit { close(fd) }

    /// Where the log in `logDirectory` stages its held frames under `directory`: named by the log's
    /// `LOCK` file (device, inode and change time), so no other log, even one later made in the same
    /// place, takes them. Nil when `directory` is not a tmpfs (a copy on disk would cost the writes
    /// holding saves) or the lock file cannot be read.
    static func path(in directory: String, logDirectory: String) -> String? {
        guard fileSystemType(of: directory) == "tmpfs", access(directory, W_OK) == 0 else { return nil }
        var lock = stat()
        guard stat(logDirectory + "/LOCK", &lock) == 0 else { return nil }
        return directory + "/hub-held-\(lock.st_dev)-\(lock.st_ino)-\(lock.st_ctim.tv_sec).\(lock.st_ctim.tv_nsec)"
    }

    /// The type of the file system `path` is on (`/proc/self/mountinfo`: the mount with the longest
    /// point that holds it), nil when it cannot be told.
    static func fileSystemType(of path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        let full = String(cString: resolved)
        free(resolved)
        // A proc file states no size: read to its end.
        guard let table = try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8) else { return nil }
        var best: (point: String, type: String)? = nil
        for line in table.split(separator: "\n") {
            // id parent major:minor root point options [optional...] - type source super-options
            let fields = line.split(separator: " ")
            guard fields.count > 4, let dash = fields.firstIndex(of: "-"), dash + 1 < fields.count else { continue }
            let point = String(fields[4]).replacingOccurrences(of: "\\040", with: " ")
            let holds = point == "/" || full == point || full.hasPrefix(point + "/")
            if holds, point.count >= (best?.point.count ?? -1) { best = (point, String(fields[dash + 1])) }
        }
        return best?.type
    }

    /// Why nothing can be staged (the staging directory is not a tmpfs this process may write).
    struct NotStaged: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// Makes an empty staging file at `path`.
    static func create(path: String) throws -> StagedFrames {
        let fd = try FileIO.openFile(path, flags: O_RDWR | O_CREAT | O_TRUNC, mode: 0o600)
        return StagedFrames(path: path, fd: fd)
    }

    /// Adds held frames: the first after a write moment start the file with where they go.
    func append(
        _ frames: ArraySlice<UInt8>, segmentFirst: UInt64, offset: Int, previousOffset: Int, previousHash: [UInt8]
    ) throws {
        if frameBytes == 0 {
            var header = Self.magic
            for n in [segmentFirst, UInt64(offset), UInt64(previousOffset)] { withUnsafeBytes(of: n.littleEndian) { header += $0 } }
            header += previousHash
            try header.withUnsafeBytes { try FileIO.writeAll(fd: fd, path: path, $0, at: 0) }
        }
        try frames.withUnsafeBytes { try FileIO.writeAll(fd: fd, path: path, $0, at: Self.headerSize + frameBytes) }
        frameBytes += frames.count
    }

    /// The held frames are in their segment: the file is emptied.
    func clear() throws {
        guard frameBytes > 0 else { return }
        try FileIO.truncate(fd: fd, path: path, to: 0)
        frameBytes = 0
    }

    /// Removes the file (the store closed with nothing held).
    func remove() { FileIO.remove(path) }

    /// What ``restore(path:directory:)`` did.
    enum Restored: Equatable {
        case nothing
        /// `bytes` of frames written into `segment` at `offset`.
        case wrote(segment: String, offset: Int, bytes: Int)
        /// The staged frames were not put back, and why.
        case ignored(String)
    }

    /// Before the log in `directory` is opened: puts the frames staged at `path` (by a writer that
    /// was killed) into their segment, where they go, when that place still holds only the zeros
    /// written ahead of the records and the record before it is the one they follow (its offset and
    /// chain hash). Opening then reads them as any other record (their checksums and chain checked).
    /// The staging file is removed.
    static func restore(path: String, directory: String) throws -> Restored {
        guard FileIO.exists(path) else { return .nothing }
        defer { FileIO.remove(path) }
        let staged = try FileIO.readAll(path: path)
        guard staged.count > headerSize else { return .nothing }
        guard Array(staged[0..<8]) == magic else { return .ignored("\(path) is not a staging file") }
        func number(_ at: Int) -> UInt64 { staged.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: at, as: UInt64.self).littleEndian } }
        let first = number(8), offset = Int(number(16)), previousOffset = Int(number(24))
        let previousHash = Array(staged[32..<headerSize])
        let frames = Array(staged[headerSize...])
        let name = LogRecovery.segmentName(first)
        let segment = directory + "/" + name
        guard FileIO.exists(segment) else { return .ignored("its segment \(name) is not there") }
        let fd = try FileIO.openFile(segment, flags: O_RDWR)
        defer { close(fd) }
        // The record the frames follow must be there, ending where they start.
        if offset == RecordFormat.segmentHeaderSize && previousOffset == offset {
            guard frames.withUnsafeBytes({ SegmentCursor.soundRecord($0, at: 0)?.view.sequence }) == first else {
                return .ignored("its first frame is not the first record of \(name)")
            }
        } else {
            guard previousOffset < offset else { return .ignored("it names no record before its frames") }
            var before = [UInt8](repeating: 0, count: offset - previousOffset)
            let got = try before.withUnsafeMutableBytes { try FileIO.read(fd: fd, path: segment, into: $0, at: previousOffset) }
            guard got == before.count,
                let found = before.withUnsafeBytes({ SegmentCursor.soundRecord($0, at: 0) }),
                found.length == before.count, found.view.hash == previousHash
            else { return .ignored("the record they follow is not at offset \(previousOffset) of \(name)") }
        }
        var place = [UInt8](repeating: 0, count: frames.count)
        let got = try place.withUnsafeMutableBytes { try FileIO.read(fd: fd, path: segment, into: $0, at: offset) }
        if got == frames.count && place == frames { return .nothing }  // written before the kill
        guard place[..<got].allSatisfy({ $0 == 0 }) else { return .ignored("offset \(offset) of \(name) holds other bytes") }
        try frames.withUnsafeBytes { try FileIO.writeAll(fd: fd, path: segment, $0, at: offset) }
        try FileIO.dataSync(fd: fd, path: segment)
        return .wrote(segment: name, offset: offset, bytes: frames.count)
    }
}
