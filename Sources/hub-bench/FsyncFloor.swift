import Foundation
import Glibc
import HubApp
import HubEngine
import HubHTTP
import HubHistory
import HubLog
import HubMQTT
import Synchronization

/// The disk's floor for one durable append, measured beside the logs in the same run: a 64-byte
/// write and an `fdatasync`, one after the other, in two shapes. **Growing**: each write extends the
/// file, as a segment that grows on every append does, so every `fdatasync` also commits the new
/// size (on ext4, a journal commit). **Preallocated**: each write lands in blocks written and synced
/// beforehand, so `fdatasync` has only data to flush: the floor a log with preallocated segments
/// could reach. **Handed off**: the preallocated shape again, but each write is made by a writer
/// thread for an async task that awaits it, as every append through the log's `async` API is (the
/// task suspends, the writer thread wakes it when the sync is done): the floor of that design,
/// which the bare floors do not pay.
struct FsyncFloor {
    var growing: Double
    var preallocated: Double
    var handedOff: Double

    static func measure(directory: String, writes: Int) async throws -> FsyncFloor {
        let growing = try rate(path: directory + "/floor-growing", writes: writes, preallocate: false)
        let preallocated = try rate(path: directory + "/floor-preallocated", writes: writes, preallocate: true)
        let handedOff = try await handedOffRate(path: directory + "/floor-handed-off", writes: writes)
        return FsyncFloor(growing: growing, preallocated: preallocated, handedOff: handedOff)
    }

    /// Durable 64-byte writes per second, made on the calling thread.
    static func rate(path: String, writes: Int, preallocate: Bool) throws -> Double {
        let fd = try openFloorFile(path, preallocating: preallocate ? writes * recordSize : 0)
        defer { close(fd); unlink(path) }
        let record = [UInt8](repeating: 0xA5, count: recordSize)
        let started = ContinuousClock.now
        for i in 0..<writes {
            guard pwrite(fd, record, record.count, off_t(i * record.count)) == record.count, fdatasync(fd) == 0 else {
                throw HubError.failed("cannot write and sync \(path): \(String(cString: strerror(errno)))")
            }
        }
        return Double(writes) / (ContinuousClock.now - started).inSeconds
    }

    /// Durable 64-byte writes per second into a preallocated file, each made by a writer thread for
    /// a task awaiting it (the writer looks for the next write as long as the log's writer does
    /// before it sleeps).
    static func handedOffRate(path: String, writes: Int) async throws -> Double {
        let fd = try openFloorFile(path, preallocating: writes * recordSize)
        let writer = HandOffWriter(fd: fd)
        defer { writer.stop(); close(fd); unlink(path) }
        let started = ContinuousClock.now
        for i in 0..<writes {
            guard await writer.write(at: off_t(i * recordSize)) else {
                throw HubError.failed("cannot write and sync \(path): \(String(cString: strerror(errno)))")
            }
        }
        return Double(writes) / (ContinuousClock.now - started).inSeconds
    }

    static let recordSize = 64

    /// A new file, with `bytes` of zeros written and synced first (rounded up to whole MiB).
    static func openFloorFile(_ path: String, preallocating bytes: Int) throws -> Int32 {
        let fd = open(path, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw HubError.failed("cannot create \(path): \(String(cString: strerror(errno)))") }
        guard bytes > 0 else { return fd }
        let zeros = [UInt8](repeating: 0, count: 1 << 20)
        var written = 0
        while written < bytes {
            guard pwrite(fd, zeros, zeros.count, off_t(written)) == zeros.count else {
                close(fd); throw HubError.failed("cannot write \(path)")
            }
            written += zeros.count
        }
        guard fsync(fd) == 0 else { close(fd); throw HubError.failed("cannot sync \(path)") }
        return fd
    }

    /// Lines for the table's foot: the two floors and the hub log's one writer against each.
    func lines(hubOneWriter: Double?, writes: Int) -> String {
        func share(_ floor: Double) -> String {
            guard let hubOneWriter, floor > 0 else { return "" }
            return String(format: "; hub log a) = %.0f %% of it", hubOneWriter / floor * 100)
        }
        return """
            Floor, same run, same disk (\(writes) writes of 64 bytes, each followed by fdatasync):
            - growing file (each write extends it): \(Int(growing.rounded())) writes/s\(share(growing))
            - preallocated file (blocks written and synced before): \(Int(preallocated.rounded())) writes/s\(share(preallocated))
            - preallocated, each write handed to a writer thread by an awaiting task: \(Int(handedOff.rounded())) writes/s\(share(handedOff))
            """
    }
}

/// The hand-off floor's writer (also the durable writes of `hub-bench mqtt`'s path without the
/// hub): a `WriterThread` making each queued 64-byte write and its `fdatasync`, one after the other,
/// then resuming the task that waits for it.
final class HandOffWriter: Sendable {
    private let thread: WriterThread<(offset: off_t, done: CheckedContinuation<Bool, Never>)>

    init(fd: Int32) {
        let record = [UInt8](repeating: 0xA5, count: FsyncFloor.recordSize)
        thread = WriterThread { batch in
            for item in batch {
                let ok = pwrite(fd, record, record.count, item.offset) == record.count && fdatasync(fd) == 0
                item.done.resume(returning: ok)
            }
        }
    }

    /// Written and synced (false when either failed, or after `stop()`).
    func write(at offset: off_t) async -> Bool {
        await withCheckedContinuation { done in
            if !thread.enqueue((offset, done)) { done.resume(returning: false) }
        }
    }

    /// Returns once the thread has made what was queued and ended: the file may be closed then.
    func stop() { thread.stop() }
}
