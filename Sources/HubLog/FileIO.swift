import CThreadName
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Thin POSIX wrappers that turn failures into `EventLogError.io` naming the path and operation.
///
/// Every change the log makes to its files goes through here, so a test can record them
/// (``recorder``): the power-loss test replays the crash states a power cut could leave.
package enum FileIO {
    /// One change to a file, as ``recorder`` is told of it (after it succeeded).
    package enum Operation: Sendable, Equatable {
        /// `open(2)` with these flags (`O_CREAT`, `O_TRUNC` matter).
        case open(path: String, flags: Int32)
        /// Bytes written at `offset`, or at the file's position (nil: sequential writes from 0
        /// after the open, as the log's fresh files are written).
        case write(path: String, offset: Int?, bytes: [UInt8])
        /// Zeros written over a range (preallocation).
        case zeros(path: String, range: Range<Int>)
        case truncate(path: String, length: Int)
        /// `fdatasync`/`fsync` of the file: what was written before is durable.
        case sync(path: String)
        case syncDirectory(path: String)
        case rename(from: String, to: String)
        case remove(path: String)
    }

    /// Told of every change, in order (tests only; nil otherwise: the log pays one lock per change).
    package static let recorder = Mutex<(@Sendable (Operation) -> Void)?>(nil)

    static func record(_ operation: @autoclosure () -> Operation) {
        if let recorder = recorder.withLock({ $0 }) { recorder(operation()) }
    }

    package static func openFile(_ path: String, flags: Int32, mode: mode_t = 0o644) throws -> Int32 {
        let fd = open(path, flags | O_CLOEXEC, mode)
        guard fd >= 0 else { throw spaceFailure(path: path, operation: "open", errno: errno) }
        if flags & (O_CREAT | O_TRUNC) != 0 { record(.open(path: path, flags: flags)) }
        return fd
    }

    package static func size(fd: Int32, path: String) throws -> Int {
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw EventLogError.io(path: path, operation: "fstat", errno: errno) }
        return Int(st.st_size)
    }

    package static func size(path: String) throws -> Int {
        var st = stat()
        guard stat(path, &st) == 0 else { throw EventLogError.io(path: path, operation: "stat", errno: errno) }
        return Int(st.st_size)
    }

    /// Reads up to `count` bytes at `offset`; fewer only at end of file.
    package static func read(fd: Int32, path: String, into buffer: UnsafeMutableRawBufferPointer, at offset: Int) throws -> Int {
        var done = 0
        while done < buffer.count {
            let n = pread(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset + done))
            if n < 0 {
                if errno == EINTR { continue }
                throw EventLogError.io(path: path, operation: "read", errno: errno)
            }
            if n == 0 { break }
            done += n
        }
        return done
    }

    package static func readAll(path: String) throws -> [UInt8] {
        let fd = try openFile(path, flags: O_RDONLY)
        defer { close(fd) }
        let size = try size(fd: fd, path: path)
        var bytes = [UInt8](repeating: 0, count: size)
        let n = try bytes.withUnsafeMutableBytes { try read(fd: fd, path: path, into: $0, at: 0) }
        if n < size { bytes.removeLast(size - n) }
        return bytes
    }

    /// The bytes of the file at `path` from `offset` to its end.
    package static func readTail(path: String, from offset: Int) throws -> [UInt8] {
        let fd = try openFile(path, flags: O_RDONLY)
        defer { close(fd) }
        let size = try size(fd: fd, path: path)
        guard size > offset else { return [] }
        var bytes = [UInt8](repeating: 0, count: size - offset)
        let n = try bytes.withUnsafeMutableBytes { try read(fd: fd, path: path, into: $0, at: offset) }
        if n < bytes.count { bytes.removeLast(bytes.count - n) }
        return bytes
    }

    /// Writes all of `bytes` at the file's position, or at `offset` (pwrite; the file grows if the
    /// range ends past its end).
    package static func writeAll(fd: Int32, path: String, _ bytes: UnsafeRawBufferPointer, at offset: Int? = nil) throws {
        try writeAllUnrecorded(fd: fd, path: path, bytes, at: offset)
        record(.write(path: path, offset: offset, bytes: Array(bytes)))
    }

    private static func writeAllUnrecorded(fd: Int32, path: String, _ bytes: UnsafeRawBufferPointer, at offset: Int?) throws {
        var done = 0
        while done < bytes.count {
            let start = bytes.baseAddress! + done, count = bytes.count - done
            let n = offset.map { pwrite(fd, start, count, off_t($0 + done)) } ?? write(fd, start, count)
            if n < 0 {
                if errno == EINTR { continue }
                throw spaceFailure(path: path, operation: "write", errno: errno)
            }
            done += n
        }
    }

    /// Writes zero bytes over `range` of the file (real zeros, not a hole: the blocks are allocated
    /// and written, so later writes into them change no file metadata).
    ///
    /// A page at a time: the page cache keeps a file in folios as large as the writes that made
    /// them (ext4 from Linux 6.16), and a later write of a few bytes marks its whole folio dirty.
    /// With zeros written in one 1 MiB `pwrite`, every later record counted a megabyte in the
    /// process's `write_bytes` and in the kernel's dirty-page accounting (the disk itself wrote
    /// only the blocks changed); written a page at a time, a record dirties its page.
    package static func writeZeros(fd: Int32, path: String, _ range: Range<Int>) throws {
        let zeros = UnsafeMutableRawBufferPointer.allocate(byteCount: pageSize, alignment: 16)
        defer { zeros.deallocate() }
        zeros.initializeMemory(as: UInt8.self, repeating: 0)
        var offset = range.lowerBound
        while offset < range.upperBound {
            let n = min(pageSize - offset % pageSize, range.upperBound - offset)
            try writeAllUnrecorded(fd: fd, path: path, UnsafeRawBufferPointer(rebasing: zeros[0..<n]), at: offset)
            offset += n
        }
        record(.zeros(path: path, range: range))
    }

    /// The unit ``writeZeros(fd:path:_:)`` writes in.
    static let pageSize = 4096

    /// Starts writing the file's dirty pages now without waiting for them (`sync_file_range`,
    /// `SYNC_FILE_RANGE_WRITE`): blocks a growing file still needs are allocated now, in the file
    /// system's journal commit of this moment, rather than by the kernel's flusher half a minute
    /// later in a commit of their own. Not a sync: nothing is durable by it. A failure is ignored
    /// (the flusher writes the pages later).
    package static func startWriteback(fd: Int32) {
        _ = hub_start_writeback(fd)
    }

    package static func dataSync(fd: Int32, path: String) throws {
        #if canImport(Glibc)
        let rc = fdatasync(fd)
        #else
        let rc = fsync(fd)
        #endif
        guard rc == 0 else { throw EventLogError.io(path: path, operation: "fdatasync", errno: errno) }
        record(.sync(path: path))
    }

    package static func syncDirectory(_ path: String) throws {
        let fd = try openFile(path, flags: O_RDONLY | O_DIRECTORY)
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw EventLogError.io(path: path, operation: "fsync", errno: errno) }
        record(.syncDirectory(path: path))
    }

    package static func truncate(fd: Int32, path: String, to length: Int) throws {
        guard ftruncate(fd, off_t(length)) == 0 else {
            throw EventLogError.io(path: path, operation: "ftruncate", errno: errno)
        }
        record(.truncate(path: path, length: length))
    }

    package static func makeDirectory(_ path: String, mode: mode_t = 0o755) throws {
        var parts: [String] = []
        for component in path.split(separator: "/", omittingEmptySubsequences: false) {
            parts.append(String(component))
            let prefix = parts.joined(separator: "/")
            if prefix.isEmpty { continue }
            if mkdir(prefix, mode) != 0 && errno != EEXIST {
                throw spaceFailure(path: prefix, operation: "mkdir", errno: errno)
            }
        }
    }

    /// Takes an exclusive advisory lock on `path` (created if missing) and returns its descriptor.
    package static func lockExclusively(_ path: String) throws -> Int32 {
        let fd = try openFile(path, flags: O_RDWR | O_CREAT)
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let code = errno
            close(fd)
            if code == EWOULDBLOCK {
                throw EventLogError.invalid("the event log \(path.dropLast(5)) is in use by another hub process")
            }
            throw EventLogError.io(path: path, operation: "flock", errno: code)
        }
        return fd
    }

    package static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    package static func listDirectory(_ path: String) throws -> [String] {
        guard let dir = opendir(path) else { throw EventLogError.io(path: path, operation: "opendir", errno: errno) }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    package static func rename(_ from: String, _ to: String) throws {
        #if canImport(Glibc)
        let rc = Glibc.rename(from, to)
        #else
        let rc = Darwin.rename(from, to)
        #endif
        guard rc == 0 else { throw EventLogError.io(path: to, operation: "rename", errno: errno) }
        record(.rename(from: from, to: to))
    }

    package static func remove(_ path: String) {
        if unlink(path) == 0 { record(.remove(path: path)) }
    }

    /// Writes a file atomically: temp file, fsync, rename, fsync the directory. When any step fails
    /// the temp file is removed (a full disk leaves no empty or partial `.tmp` behind) and the file
    /// at `path`, if any, is untouched.
    package static func writeAtomically(_ bytes: [UInt8], to path: String, directory: String, mode: mode_t = 0o644) throws {
        let temp = path + ".tmp"
        let fd = try openFile(temp, flags: O_WRONLY | O_CREAT | O_TRUNC, mode: mode)
        do {
            try bytes.withUnsafeBytes { try writeAll(fd: fd, path: temp, $0) }
            guard fsync(fd) == 0 else { throw EventLogError.io(path: temp, operation: "fsync", errno: errno) }
            record(.sync(path: temp))
            close(fd)
        } catch {
            close(fd)
            remove(temp)
            throw error
        }
        do {
            try rename(temp, path)
        } catch {
            remove(temp)
            throw error
        }
        try syncDirectory(directory)
    }
}
